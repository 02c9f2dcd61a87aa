"""Loading the whole stack configuration: field validation, then every cross-object rule, at once.

:func:`load_config` is the only way a configuration becomes a
:class:`~gpu_fabric.config.fabric.FabricConfig`. It validates field types (the spec models), then
cross-object rules (references, capacities), then the operator's transfer-path admission over the
very manifests the stack would register. Every problem comes back at once, each with its
configuration path, before any resource exists.

Data flows down: spec -> planning (fabric_plan, efa_domains) -> builders. This module sits above all
of them, which is why the checks that need built manifests live here and not in the spec package.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Optional

from pydantic import ValidationError

from gpu_fabric.findings import FieldPath, Finding, Rule
from gpu_fabric.gpustack.objects import gpustack_manifests
from gpu_fabric.gpustack.rules import GPUSTACK_OPERATOR_VERSION
from gpu_fabric.kube.kueue import pool_quotas
from gpu_fabric.kube.pool_view import pool_view_of
from gpu_fabric.plan.efa_domains.from_config import domains_from_config
from gpu_fabric.plan.fabric_plan import coverage_gaps, topology_agent_problems
from gpu_fabric.plan.transport_fabric import role_leg_findings
from gpu_fabric.validation.fabric_facts import advertiser_problems, instance_fact_problems
from gpu_fabric.validation.pack_verdicts import pack_problems
from gpu_fabric.config.quantity import parse_quantity, whole_count
from gpu_fabric.config.base import ConfigError, number_problems
from gpu_fabric.config.fabric import FabricConfig
from gpu_fabric.config.pool import PoolSpec
from gpu_fabric.config.syntax import region_of_zone
from gpu_fabric.gpustack.profiles import UnknownOperatorVersion, profile_for
from gpu_fabric.gpustack.admission_pipeline import analyze

REFERENCES = Rule(
    "configuration-references",
    "names are declared once, references name declared objects, and each role fits one node of its pool",
    "components/gpu_fabric/validation/configuration.py")
AWS_TARGET = Rule(
    "aws-target", "node groups join the one cluster the Kubernetes objects go to, in the AWS provider's region",
    "https://docs.aws.amazon.com/eks/latest/userguide/managed-node-groups.html")


def load_config(values: Mapping[str, Any], *, aws_region: Optional[str] = None) -> FabricConfig:
    """Validate a whole configuration; raise one :class:`ConfigError` listing every problem.

    ``aws_region`` is the AWS provider's region (``aws:region``), where the node groups are created;
    when it (or ``kubernetes.eksCluster.region``) is known, every node group's AZ must lie in it.
    """
    unusable = list(number_problems(dict(values)))
    if unusable:
        raise ConfigError(unusable)
    try:
        config = FabricConfig.model_validate(dict(values))
    except ValidationError as error:
        raise ConfigError.from_validation_error(error, model=FabricConfig) from None
    problems: list[Finding] = list(_operator_problems(config))
    problems.extend(reference_findings(config))
    problems.extend(aws_target_findings(config, aws_region))
    # Independent of every other rule: reported beside them, never in their way.
    fact_problems = list(instance_fact_problems(config))
    if not problems:
        problems.extend(_coverage_problems(config))
        problems.extend(_topology_agent_problems(config))
    if not problems:
        # Transfer analysis needs resolvable references; report those first.
        problems.extend(_transfer_problems(config))
    if not problems:
        # Domains read the transfer legs, so they are decided once the legs are admissible.
        problems.extend(_domain_problems(config))
    if not problems:
        problems.extend(advertiser_problems(config))
    if not problems:
        # What a mandatory policy of the pack refuses from configuration alone, the stack refuses too.
        problems.extend(pack_problems(config))
    problems.extend(fact_problems)
    if problems:
        # Refused by mandatory policies alone: ConfigError.exit_code is 1, as check's for a violation.
        raise ConfigError(problems)
    return config


def _operator_problems(config: FabricConfig) -> Iterable[Finding]:
    """The operator version must be one gpu-fabric mirrors: it decides every GPUStack object's schema and rules."""
    try:
        profile_for(config.gpustack_operator)
    except UnknownOperatorVersion as error:
        yield Finding.of(GPUSTACK_OPERATOR_VERSION, "gpustackOperator", str(error))


def aws_target_findings(config: FabricConfig, aws_region: Optional[str]) -> Iterable[Finding]:
    """Node groups join the cluster the Kubernetes objects go to, in the region they are created in."""
    target = config.kubernetes.eks_cluster if config.kubernetes else None
    if target is not None and target.region and aws_region and target.region != aws_region:
        yield Finding.of(AWS_TARGET, "kubernetes.eksCluster.region",
               f"{target.region} is not the AWS provider's region {aws_region} (aws:region), where the node groups are created")
    region = (target.region if target is not None else None) or aws_region
    clusters = {pool.aws.cluster_name for pool in config.pools if pool.aws is not None}
    for i, pool in enumerate(config.pools):
        if pool.aws is None:
            continue
        if target is not None and pool.aws.cluster_name != target.name:
            yield Finding.of(AWS_TARGET, f"pools[{i}].aws.clusterName", f"the node group would join cluster {pool.aws.cluster_name} but the "
                   f"Kubernetes objects go to cluster {target.name} (kubernetes.eksCluster.name)")
        elif target is None and len(clusters) > 1:
            yield Finding.of(AWS_TARGET, f"pools[{i}].aws.clusterName", f"node groups name several clusters ({', '.join(sorted(clusters))}); "
                   "the stack's Kubernetes objects go to one cluster")
        if region and region_of_zone(pool.aws.availability_zone) != region:
            yield Finding.of(AWS_TARGET, f"pools[{i}].aws.availabilityZone",
                   f"{pool.aws.availability_zone} is not in region {region}, where the node group is created")


def _duplicates(names: Iterable[Any]) -> set[Any]:
    seen: set[Any] = set()
    repeated: set[Any] = set()
    for name in names:
        (repeated if name in seen else seen).add(name)
    return repeated


def reference_findings(config: FabricConfig) -> Iterable[Finding]:
    """Names declared once, references to declared objects, and roles that fit one node of their pool."""
    for key, items, identity in (
        ("namespaces", config.namespaces, lambda item: item),
        ("pools", config.pools, lambda item: item.name),
        ("kvCacheBackends", config.kv_cache_backends, lambda item: item.name),
        ("kvCachePools", config.kv_cache_pools, lambda item: item.name),
        ("kvCachePoolBindings", config.kv_cache_pool_bindings, lambda item: (item.namespace, item.name)),
        ("modelDeployments", config.model_deployments, lambda item: (item.namespace, item.name)),
    ):
        repeated = _duplicates(identity(item) for item in items)
        for position, item in enumerate(items):
            if identity(item) in repeated:
                yield Finding.of(REFERENCES, f"{key}[{position}]", f"{identity(item)!r} is declared more than once")

    if config.queue_owner == "standalone":
        for i, pool in enumerate(config.pools):
            if not pool_quotas(pool):
                yield Finding.of(REFERENCES, f"pools[{i}]", "a standalone ClusterQueue needs something to meter: "
                       "acceleratorsPerNode, a fabric, or cpuPerNode")

    tenants = set(config.namespaces)
    backends = {backend.name for backend in config.kv_cache_backends}
    for i, cache_pool in enumerate(config.kv_cache_pools):
        if cache_pool.backends[0] not in backends:
            yield Finding.of(REFERENCES, f"kvCachePools[{i}].backends[0]", f"names no KVCacheBackend of this stack ({_listing(backends)})")
    cache_pools = {pool.name for pool in config.kv_cache_pools}
    for i, binding in enumerate(config.kv_cache_pool_bindings):
        # The operator's binding webhook reads the pool (validateKVCachePoolBindingCeilingFitsPool): NotFound refuses it.
        if binding.pool_ref.name not in cache_pools:
            yield Finding.of(REFERENCES, f"kvCachePoolBindings[{i}].poolRef.name", f"names no KVCachePool of this stack ({_listing(cache_pools)})")
        if binding.namespace not in tenants:
            yield Finding.of(REFERENCES, f"kvCachePoolBindings[{i}].namespace", f"{binding.namespace!r} is not one of namespaces ({_listing(tenants)})")
    bindings = {(binding.namespace, binding.name) for binding in config.kv_cache_pool_bindings}

    for i, deployment in enumerate(config.model_deployments):
        if deployment.namespace not in tenants:
            yield Finding.of(REFERENCES, f"modelDeployments[{i}].namespace", f"{deployment.namespace!r} is not one of namespaces ({_listing(tenants)})")
        if deployment.kv_cache is not None and (deployment.namespace, deployment.kv_cache.pool_ref.name) not in bindings:
            yield Finding.of(REFERENCES, f"modelDeployments[{i}].kvCache.poolRef.name", "names no KVCachePoolBinding of this stack in namespace "
                   f"{deployment.namespace} ({_listing(name for ns, name in bindings if ns == deployment.namespace)})")
        for j, role in enumerate(deployment.roles):
            path = f"modelDeployments[{i}].roles[{j}]"
            role_pool = config.pool(role.pool)
            if role_pool is None:
                field = "instanceType" if role.instance_type is not None else "acceleratorType"
                yield Finding.of(REFERENCES, f"{path}.{field}", f"names no pool of this stack ({_listing(p.name for p in config.pools)})")
                continue
            yield from _role_fits_pool(path, role.resources.accelerator, role.resources.interface, role_pool)


def _role_fits_pool(path: str, accelerator: Any, interface: Any, pool: PoolSpec) -> Iterable[Finding]:
    if accelerator is not None and parse_quantity(accelerator) > pool.accelerators_per_node:
        yield Finding.of(REFERENCES, f"{path}.resources.accelerator",
               f"{accelerator} accelerators do not fit on one node of pool {pool.name} ({pool.accelerators_per_node} per node)")
    count = whole_count(interface) if interface is not None else None
    if count and count > 0:
        if pool.fabric == "none":
            yield Finding.of(REFERENCES, f"{path}.resources.interface", f"pool {pool.name} has no fabric (fabric: none), so no interface can be granted")
        elif count > pool.interfaces_per_node:
            yield Finding.of(REFERENCES, f"{path}.resources.interface",
                   f"{count} interfaces do not fit on one node of pool {pool.name} ({pool.interfaces_per_node} per node)")


def _coverage_problems(config: FabricConfig) -> Iterable[Finding]:
    position = {pool.name: i for i, pool in enumerate(config.pools)}
    for gap in coverage_gaps(config):
        yield gap.finding().at(f"pools[{position[gap.pool]}]")


def _domain_problems(config: FabricConfig) -> Iterable[Finding]:
    for finding in domains_from_config(config).findings:
        yield finding


def _topology_agent_problems(config: FabricConfig) -> Iterable[Finding]:
    return topology_agent_problems(config)


def _listing(names: Iterable[str]) -> str:
    names = sorted(names)
    return "declared: " + ", ".join(names) if names else "none declared"


def _config_path(item: str, object_path: str | FieldPath) -> FieldPath:
    """A manifest's field path placed on the configuration item it was built from: ``spec.x`` -> ``item.x``;
    ``apiVersion``/``metadata`` -> the item itself."""
    path = object_path if isinstance(object_path, FieldPath) else FieldPath.parse(object_path)
    base = FieldPath.parse(item)
    return base / FieldPath(path.segments[1:]) if path.head == "spec" else base


def _transfer_problems(config: FabricConfig) -> Iterable[Finding]:
    report = analyze(
        gpustack_manifests(config),
        manufacturers={pool.name: pool.resolved_manufacturer for pool in config.pools},
        operator=config.gpustack_operator,
    )
    deployment_position: dict[tuple[Optional[str], str], int] = {
        (d.namespace, d.name): i for i, d in enumerate(config.model_deployments)}
    positions: dict[str, tuple[str, Mapping[tuple[Optional[str], str], int]]] = {
        "ModelDeployment": ("modelDeployments", deployment_position),
        "KVCachePoolBinding": ("kvCachePoolBindings", {(b.namespace, b.name): i for i, b in enumerate(config.kv_cache_pool_bindings)}),
        "KVCachePool": ("kvCachePools", {(None, p.name): i for i, p in enumerate(config.kv_cache_pools)}),
        "KVCacheBackend": ("kvCacheBackends", {(None, b.name): i for i, b in enumerate(config.kv_cache_backends)}),
    }
    for error in report.errors:
        if error.subject is None:
            continue  # every finding of the analysis names its object
        kind = error.subject.kind
        key, by_identity = positions[kind]
        namespaced = kind in ("ModelDeployment", "KVCachePoolBinding")
        item = f"{key}[{by_identity[(error.subject.namespace if namespaced else None, error.subject.name)]}]"
        yield error.moved(_config_path(item, error.path)).about(None)
    for grant in report.role_grants:
        pool = config.pool(grant.instance_type)
        if pool is not None:
            item = f"modelDeployments[{deployment_position[(grant.namespace, grant.deployment)]}]"
            for finding in role_leg_findings(grant, pool_view_of(pool)):
                yield finding.moved(_config_path(item, finding.path)).about(None)
