"""A stack's fabric domains read from its resources: the same :func:`~gpu_fabric.plan.efa_domains.derivation.derive_domains`
that ``load_config`` runs over a configuration (:mod:`~gpu_fabric.plan.efa_domains.from_config`), fed from resource inputs.

* pools from :func:`gpu_fabric.plan.resource_view.pool_facts` (``KueuePool`` specs, then node groups no pool claims);
* where each pool's nodes are: the pool's ``aws`` block (``GpuFabric``), else the ``EfaNodeGroup`` component above
  the node group that provides them (its ``availabilityZone``/``vpcId``/``subnetId`` inputs), else the launch
  template's ``placement.availabilityZone``;
* legs from :func:`gpu_fabric.gpustack.admission_pipeline.analyze` over the stack's GPUStack objects.

The policies ``efa-domain-placement`` and ``efa-domain-security-group`` (:mod:`gpu_fabric.policies.efa_domains`)
report what this finds; ``gpu-fabric render`` and ``check`` print the domains (:func:`describe_stack_domains`),
render without importing the policy pack.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from gpu_fabric.config.shapes import as_list, as_mapping, known_str, rests_on_unknown
from gpu_fabric.gpustack.admission_pipeline import analyze
from gpu_fabric.plan.efa_domains.derivation import INSTANCE_TYPE_LABEL, DomainAnalysis, DomainPlan, DomainPool, derive_domains
from gpu_fabric.plan.efa_domains.description import describe_domain
from gpu_fabric.plan.karpenter_resources import node_pool_security_groups
from gpu_fabric.plan.resource_view import (
    DEFAULT_NAMESPACE,
    KUEUE_POOL_TYPE,
    NODE_GROUP_TYPE,
    SECURITY_GROUP_TYPE,
    PoolFacts,
    Resource,
    ancestors,
    efa_interfaces,
    gpustack_objects,
    manufacturers_of_pools,
    node_group_launch_template,
    pool_facts,
    pool_node_groups,
    siblings,
    stack_operator,
)

EFA_NODE_GROUP_TYPE = "gpu-fabric:index:EfaNodeGroup"


def _first(mapping: Mapping[str, Any], *keys: str) -> Optional[str]:
    return next((known_str(mapping.get(key)) for key in keys if known_str(mapping.get(key))), None)


def node_group_placement(node_group: Resource, resources: Sequence[Resource]) -> dict[str, Optional[str]]:
    """AZ, VPC and subnet of an EKS node group, from what is known at preview."""
    by_urn = {r.urn: r for r in resources}
    component = next((a for a in ancestors(node_group, by_urn) if a.type == EFA_NODE_GROUP_TYPE), None)
    props = as_mapping(component.props) if component else {}
    template = node_group_launch_template(node_group, resources)
    subnets = [known_str(s) for s in as_list(node_group.props.get("subnetIds"))]
    return {
        "availability_zone": _first(props, "availabilityZone", "availability_zone")
        or (known_str(as_mapping(template.props.get("placement")).get("availabilityZone")) if template else None),
        "vpc_id": _first(props, "vpcId", "vpc_id"),
        "subnet_id": _first(props, "subnetId", "subnet_id") or (subnets[0] if len(subnets) == 1 else None),
    }


def _node_group_instance_types(node_group: Resource, resources: Sequence[Resource]) -> tuple[str, ...]:
    types = [str(t) for t in as_list(node_group.props.get("instanceTypes")) if known_str(t)]
    template = node_group_launch_template(node_group, resources)
    if not types and template is not None and known_str(template.props.get("instanceType")):
        types = [str(template.props["instanceType"])]
    return tuple(types)


def _domain_pool(pool: PoolFacts, resources: Sequence[Resource], by_urn: Mapping[str, Resource]) -> DomainPool:
    """The pool, placed where the resource that says so puts it (object path and property prefix)."""
    resource = by_urn[pool.urn]
    path, prefix, where, types = f"NodeGroup {resource.name}", "", {}, pool.instance_types
    groups = [resource] if resource.type == NODE_GROUP_TYPE else pool_node_groups(pool, resources)
    if resource.type == KUEUE_POOL_TYPE:
        path, prefix = f"KueuePool {resource.name}", ".pool.aws"
        aws = as_mapping(as_mapping(resource.props.get("pool")).get("aws"))
        if known_str(aws.get("availabilityZone")):
            where = {"availability_zone": known_str(aws.get("availabilityZone")),
                     "vpc_id": known_str(aws.get("vpcId")), "subnet_id": known_str(aws.get("subnetId"))}
        elif len(groups) == 1:
            # A pool declared without ``aws``: its nodes are the one node group that carries its labels.
            path, prefix, where = f"NodeGroup {groups[0].name}", "", node_group_placement(groups[0], resources)
            types = types or _node_group_instance_types(groups[0], resources)
    else:
        where = node_group_placement(resource, resources)
    labels = dict(pool.labels)
    if len(types) == 1:
        labels.setdefault(INSTANCE_TYPE_LABEL, types[0])
    provided_by, provider = "node group", ", ".join(g.name for g in groups) or None
    if resource.type == KUEUE_POOL_TYPE and as_mapping(as_mapping(resource.props.get("pool")).get("aws")).get("provisioner") == "karpenter":
        provided_by, provider = "NodePool", pool.name  # GpuFabric names the NodePool after the pool
    return DomainPool(
        name=pool.name, fabric=pool.fabric, path=path, field_prefix=prefix, labels=labels, instance_types=tuple(types),
        availability_zone=where.get("availability_zone"), vpc_id=where.get("vpc_id"),
        subnet_id=where.get("subnet_id"), efa_per_node=pool.interfaces_per_node,
        node_group=provider, provided_by=provided_by,
    )


def node_group_security_groups(node_group: Resource, resources: Sequence[Resource]) -> list[Resource]:
    """The stack's security groups on the EFA interfaces of a node group's launch template.

    Ids of new groups are unknown at preview, so a group is known by the engine's property
    dependencies of ``networkInterfaces``; without them, by being registered beside the template
    (``EfaNodeGroup`` without a domain registers its own group there). Groups outside the stack
    (known ``sg-...`` ids) are not counted: their rules cannot be read here.
    """
    template = node_group_launch_template(node_group, resources)
    if template is None or not efa_interfaces(template.props):
        return []
    by_urn = {r.urn: r for r in resources}
    dependencies = template.property_dependencies.get("networkInterfaces")
    if dependencies:
        return [by_urn[urn] for urn in dependencies if urn in by_urn and by_urn[urn].type == SECURITY_GROUP_TYPE]
    return siblings(template, resources, SECURITY_GROUP_TYPE)


def _groups_by_pool(domain: DomainPlan, resources: Sequence[Resource]) -> dict[str, list[Resource]]:
    by_name = {r.name: r for r in resources if r.type == NODE_GROUP_TYPE}
    groups: dict[str, list[Resource]] = {}
    for pool in domain.pools:
        if pool.provided_by == "NodePool" and pool.node_group:
            # A Karpenter pool: the groups its EC2NodeClass selects.
            selected = node_pool_security_groups(pool.node_group, resources)
            if selected is not None:
                groups.setdefault(pool.name, []).extend(selected)
            continue
        for name in (pool.node_group or "").split(", "):
            template = node_group_launch_template(by_name[name], resources) if name in by_name else None
            if template is not None and rests_on_unknown(template.props, ("networkInterfaces", "*", "interfaceType")):
                continue  # which interfaces are EFA is not known at preview: this pool's groups wait for it
            if name in by_name:
                groups.setdefault(pool.name, []).extend(node_group_security_groups(by_name[name], resources))
    return groups


def shared_security_groups(domain: DomainPlan, resources: Sequence[Resource]) -> tuple[list[Resource], dict[str, list[Resource]]]:
    """The stack's security groups on the EFA interfaces of every node group of the domain, and each pool's groups."""
    groups = _groups_by_pool(domain, resources)
    if not groups:
        return [], groups
    common = set.intersection(*({g.urn for g in found} for found in groups.values()))
    first = next(iter(groups.values()))
    return [g for g in first if g.urn in common], groups


def describe_stack_domains(resources: Sequence[Resource]) -> list[str]:
    """Every fabric domain of a stack as paths, with the security group that carries it."""
    analysis, _ = stack_domains(resources)
    lines: list[str] = []
    for domain in analysis.domains:
        if domain.fabric == "efa":
            shared, groups = shared_security_groups(domain, resources)
            if shared:
                carried = "security group " + ", ".join(g.name for g in shared)
            elif groups:
                carried = "no shared security group (" + "; ".join(
                    f"{pool}: {', '.join(g.name for g in found) or 'none of this stack'}" for pool, found in sorted(groups.items())) + ")"
            else:
                carried = None
        else:
            carried = "RDMA: no security group involved"
        lines.extend(describe_domain(domain, carried))
    return lines


def stack_domains(resources: Sequence[Resource]) -> tuple[DomainAnalysis, dict[str, str]]:
    """The stack's domains (object paths) and pool path -> URN of the resource that declares it."""
    objects = gpustack_objects(list(resources))
    by_urn = {r.urn: r for r in resources}
    pools, urns = [], {}
    for facts in pool_facts(resources):
        pool = _domain_pool(facts, resources, by_urn)
        pools.append(pool)
        urns[pool.path] = facts.urn
    # An unknown or disputed operator version is the transfer-path policy's violation; decide under the default meanwhile.
    profile = stack_operator(list(resources))[0]
    report = analyze([dict(r.props) for r in objects], manufacturers=manufacturers_of_pools(list(resources)),
                     default_namespace=DEFAULT_NAMESPACE, operator=profile)
    return derive_domains(pools, report), urns
