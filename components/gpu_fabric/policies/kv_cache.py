"""Policy g: KV-cache transports match the fabric of the nodes they run on.

Each Mooncake member group of a KVCacheBackend runs on the nodes its ``nodeSelector`` picks; a pool
is picked when the selector is a subset of the pool's effective node labels (its nodeLabels,
``vpc.amazonaws.com/efa.present`` on EFA pools, ``kubernetes.io/os``/``arch`` from a
``gpustack--...-<os>-<arch>`` name, ``node.kubernetes.io/instance-type`` of AWS pools). The group's
effective protocol and device request come from :func:`gpu_fabric.gpustack.admission_pipeline.analyze` (its
``member_grants``). Then:

* EFA transport only on EFA pools; RDMA transport never on EFA pools;
* ``fabricInterfaceCount`` no more than the pool's interfaces per node;
* a ModelDeployment role's transfer fabric is its pool's fabric (role grants, pool = InstanceType).
"""

from __future__ import annotations

from typing import Any, Sequence

from pulumi_policy import EnforcementLevel, Severity, StackValidationArgs, StackValidationPolicy

from gpu_fabric.policies._props import PoolFacts, Resource, pool_facts, stack_resources
from gpu_fabric.policies.transfer_paths import DEFAULT_NAMESPACE, gpustack_objects, manufacturers_of_pools, stack_operator
from gpu_fabric.gpustack.admission_pipeline import analyze


def member_findings(protocol: str, count: int, pool: PoolFacts) -> list[str]:
    """Problems of one fabric member group on one pool."""
    problems = []
    if protocol == "efa" and pool.fabric != "efa":
        problems.append(f"uses EFA transport but selects pool {pool.name}, which has fabric {pool.fabric} (EFA only on EFA pools)")
    if protocol == "rdma" and pool.fabric == "efa":
        problems.append(f"uses RDMA transport but selects EFA pool {pool.name} (EFA nodes have no RDMA verbs devices for Mooncake RDMA)")
    if protocol in ("efa", "rdma") and pool.interfaces_per_node is not None and count > pool.interfaces_per_node:
        problems.append(f"fabricInterfaceCount {count} exceeds the {pool.interfaces_per_node} interfaces per node of pool {pool.name}")
    return problems


def kv_cache_findings(resources: Sequence[Resource]) -> list[tuple[str, str]]:
    """``(urn, message)`` for every transport/pool mismatch."""
    objects = gpustack_objects(list(resources))
    if not objects:
        return []
    pools = pool_facts(resources)
    profile, _ = stack_operator(list(resources))
    if profile is None:
        return []  # the transfer-path policy reports the operator version problem
    report = analyze([dict(r.props) for r in objects], manufacturers=manufacturers_of_pools(list(resources)),
                     default_namespace=DEFAULT_NAMESPACE, operator=profile)
    backends = {r.object_name: r.urn for r in objects if r.kind == "KVCacheBackend"}
    deployments = {(r.namespace or DEFAULT_NAMESPACE, r.object_name): r.urn for r in objects if r.kind == "ModelDeployment"}
    problems: list[tuple[str, str]] = []
    for grant in report.member_grants:
        if not grant.uses_fabric:
            continue
        for pool in pools:
            if pool.matches_selector(grant.node_selector):
                for problem in member_findings(grant.protocol, grant.fabric_interface_count, pool):
                    problems.append((backends.get(grant.backend, ""),
                                     f"KVCacheBackend {grant.backend}: spec.connection.managed.members[{grant.group_index}] {problem}"))
    by_name = {pool.name: pool for pool in pools if pool.source == "pool"}
    for role in report.role_grants:
        role_pool = by_name.get(role.instance_type)
        if role_pool is not None and role_pool.fabric != role.fabric:
            problems.append((deployments.get((role.namespace, role.deployment), ""),
                             f"ModelDeployment {role.namespace}/{role.deployment}: spec.roles[{role.role_index}].resources.interface: "
                             f"the transfer leg uses {role.fabric.upper()} but pool {pool.name} has fabric {pool.fabric}"))
    return problems


def _validate(args: StackValidationArgs, report_violation: Any) -> None:
    for urn, message in kv_cache_findings(stack_resources(args)):
        report_violation(message, urn or None)


kv_cache_transport_fabric = StackValidationPolicy(
    name="kv-cache-transport-fabric",
    display_name="KV-cache transports match their nodes' fabric",
    description=(
        "Mooncake member groups use EFA transport only on EFA pools and RDMA never on EFA pools, request no more "
        "fabric interfaces (fabricInterfaceCount) than a node of the pool has, and ModelDeployment transfer legs "
        "use their pool's fabric."
    ),
    validate=_validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    tags=["kv-cache", "mooncake", "efa", "rdma"],
    remediation_steps=(
        "Set the backend's (or member group's) transport.protocol to the fabric of the pool its nodeSelector picks "
        "(EFA on EFA pools, RDMA on RDMA pools), narrow the nodeSelector to the right pool's labels, and keep "
        "fabricInterfaceCount within the pool's interfacesPerNode."
    ),
)
