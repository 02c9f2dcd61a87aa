"""Policy: every EFA domain of the stack can carry its traffic (one AZ, one VPC, no P4d/P4de/DL1 mix).

The domains are decided by :func:`gpu_fabric.plan.efa_domains.derivation.derive_domains` -- the function
``load_config`` runs before ``GpuFabric`` registers anything -- fed here from resource inputs
(:func:`gpu_fabric.plan.efa_domains.from_resources.stack_domains`: pools, where their nodes are, the legs),
so a stack built from the components directly (``KueuePool``, ``EfaNodeGroup``, ``KVCache``,
``ModelDeployment``) is refused at preview exactly as a configuration is refused by ``render``.

A pool whose zone is not known at preview is not compared. Member groups on a pool of the wrong
fabric are ``kv-cache-transport-fabric``'s concern; this policy reports the placement rules and a
member group whose selector reaches no pool of its fabric.
"""

from __future__ import annotations

from typing import Any, Sequence

from pulumi_policy import EnforcementLevel, Severity, StackValidationArgs, StackValidationPolicy

from gpu_fabric.config.shapes import rests_on_unknown
from gpu_fabric.plan.efa_domains.derivation import shared_security_group_findings
from gpu_fabric.plan.efa_domains.from_resources import shared_security_groups, stack_domains
from gpu_fabric.plan.efa_domains.rules import DOMAIN_MEMBER_SELECTOR, EC2_EFA_LIMITS, POLICY as DOMAIN_POLICY
from gpu_fabric.plan.efa_domains.derivation import DomainAnalysis
from gpu_fabric.plan.resource_view import KUEUE_POOL_TYPE, NODE_GROUP_TYPE, Resource, gpustack_objects, pool_facts
from gpu_fabric.policies.analyzer_calls import judged_once
from gpu_fabric.policies.engine_wire import stack_resources
from gpu_fabric.policies.reporting import report_finding


def _domains(resources: Sequence[Resource]) -> tuple[DomainAnalysis, dict[str, str]]:
    """The stack's domains, derived once per analyzer call for both policies (placement, security group)."""
    return judged_once("efa-domains", resources, stack_domains)


def _validate(args: StackValidationArgs, report_violation: Any) -> None:
    resources = stack_resources(args)
    if not gpustack_objects(resources):
        return
    analysis, urns = _domains(resources)
    objects = {f"KVCacheBackend {r.object_name} ": r.urn for r in gpustack_objects(resources) if r.kind == "KVCacheBackend"}
    # A pool whose name or fabric is unknown at preview may be the one a member group selects: "selects
    # no pool of its fabric" waits for it.
    pools_undecided = any(r.type == KUEUE_POOL_TYPE and rests_on_unknown(r.props, ("pool", "name")) for r in resources) \
        or any(pool.fabric_unknown for pool in pool_facts(resources))
    for finding in analysis.findings:
        if finding.policy != DOMAIN_POLICY:
            continue  # a member group on the wrong fabric: kv-cache-transport-fabric reports it
        finding = finding.waiting(finding.rule is DOMAIN_MEMBER_SELECTOR and pools_undecided)
        at = next((urn for prefix, urn in [*urns.items(), *objects.items()] if finding.path.startswith(prefix)), None)
        report_finding(report_violation, finding, finding.message, at)


efa_domain_placement = StackValidationPolicy(
    name="efa-domain-placement",
    display_name="EFA domains stay in one Availability Zone and VPC",
    description=(
        "Pools that exchange EFA traffic (a deployment's roles, and the pools its KV-cache members select) are in "
        "one Availability Zone and one VPC, do not mix P4d/P4de/DL1 with other instance types, and every EFA "
        "member group selects a pool of its fabric."
    ),
    validate=_validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    tags=["aws", "efa", "placement", "kv-cache"],
    remediation_steps=(
        "Put every node group of the domain in the same availabilityZone and VPC (subnets may differ within the "
        "zone), keep P4d/P4de/DL1 pools in domains of their own, and narrow or fix the member group's nodeSelector "
        "so it selects the EFA pool meant to hold the cache. `gpu-fabric check` prints each domain as a path."
    ),
    url=EC2_EFA_LIMITS,
)


def _validate_security_groups(args: StackValidationArgs, report_violation: Any) -> None:
    resources = stack_resources(args)
    if not gpustack_objects(resources):
        return
    analysis, _ = _domains(resources)
    node_groups = {r.name: r for r in resources if r.type == NODE_GROUP_TYPE}
    for domain in analysis.domains:
        if domain.fabric != "efa":
            continue
        shared, groups = shared_security_groups(domain, resources)
        names = {pool: [group.name for group in found] for pool, found in groups.items()}
        for finding in shared_security_group_findings(domain, names, [group.name for group in shared]):
            first = next(p for p in domain.pools if p.name in groups)
            at = node_groups.get((first.node_group or "").split(", ")[0])
            report_finding(report_violation, finding, finding.message, at.urn if at else None)


efa_domain_security_group = StackValidationPolicy(
    name="efa-domain-security-group",
    display_name="EFA domains share one self-referencing security group",
    description=(
        "The node groups of pools that exchange EFA traffic carry one security group of the stack, shared by all "
        "their EFA interfaces (its all-protocol self rules are checked by efa-security-group-self-rules)."
    ),
    validate=_validate_security_groups,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    tags=["aws", "efa", "security-group", "kv-cache"],
    remediation_steps=(
        "Create one security group per EFA domain with an ingress and an egress rule for all protocols to and from "
        "itself, and put it on every EFA interface of every node group of the domain (GpuFabric does this with an "
        "EfaDomain component; with EfaNodeGroup directly, pass efa_security_group_id)."
    ),
    url="https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-start.html#efa-start-security",
)
