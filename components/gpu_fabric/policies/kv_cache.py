"""Policies ``kv-cache-transport-fabric`` (the rules of :mod:`gpu_fabric.plan.transport_fabric`) and
``kv-cache-unreferenced`` (advisory: :mod:`gpu_fabric.plan.kv_cache_references`) over a stack.

Each Mooncake member group of a KVCacheBackend runs on the nodes its ``nodeSelector`` picks; a pool
is picked when the selector holds on the pool's node labels
(:meth:`gpu_fabric.kube.pool_view.PoolView.matches_selector`). The group's effective protocol and
device request, and each ModelDeployment role's transfer leg, come from
:func:`gpu_fabric.gpustack.admission_pipeline.analyze` over the stack's GPUStack objects.
"""

from __future__ import annotations

from typing import Any, Sequence

from pulumi_policy import EnforcementLevel, Severity, StackValidationArgs, StackValidationPolicy

from gpu_fabric.findings import Finding
from gpu_fabric.plan.kv_cache_references import router_findings, unreferenced_findings
from gpu_fabric.plan.transport_fabric import KV_MEMBER_TRANSPORT_FABRIC, member_findings, role_leg_findings, shared_node_findings
from gpu_fabric.policies.engine_wire import stack_resources
from gpu_fabric.plan.resource_view import pool_facts, Resource
from gpu_fabric.policies.reporting import report_finding
from gpu_fabric.policies.transfer_report import stack_transfer_report
from gpu_fabric.plan.resource_view import DEFAULT_NAMESPACE, gpustack_objects


def kv_cache_findings(resources: Sequence[Resource]) -> list[tuple[str, Finding]]:
    """``(urn, finding)`` for every transport/pool mismatch."""
    objects = gpustack_objects(list(resources))
    if not objects:
        return []
    pools = pool_facts(resources)
    report = stack_transfer_report(resources)
    if report is None:
        return []  # the transfer-path policy reports the operator version problem
    backends = {r.object_name: r.urn for r in objects if r.kind == "KVCacheBackend"}
    deployments = {(r.namespace or DEFAULT_NAMESPACE, r.object_name): r.urn for r in objects if r.kind == "ModelDeployment"}
    found: list[tuple[str, Finding]] = []
    for grant in report.member_grants:
        if not grant.uses_fabric:
            continue
        for pool in pools:
            if pool.matches_selector(grant.node_selector):
                found.extend((backends.get(grant.backend, ""), finding) for finding in member_findings(grant, pool))
    by_name = {pool.name: pool for pool in pools if pool.source == "pool"}
    for role in report.role_grants:
        role_pool = by_name.get(role.instance_type)
        if role_pool is not None:
            found.extend((deployments.get((role.namespace, role.deployment), ""), finding)
                         for finding in [*role_leg_findings(role, role_pool),
                                         *shared_node_findings(role, role_pool, report.member_grants)])
    return found


def _message(finding: Finding) -> str:
    # A member group's problem reads on from its path; a role's follows it after a colon.
    if finding.rule is KV_MEMBER_TRANSPORT_FABRIC:
        return f"{finding.subject}: {finding.path} {finding.message}"
    return str(finding)


def _validate(args: StackValidationArgs, report_violation: Any) -> None:
    for urn, finding in kv_cache_findings(stack_resources(args)):
        report_finding(report_violation, finding, _message(finding), urn or None)


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


def unreferenced_violations(resources: Sequence[Resource]) -> list[tuple[str, Finding]]:
    """``(urn, finding)`` for every KV-cache object nothing references
    (:func:`gpu_fabric.plan.kv_cache_references.unreferenced_findings`)."""
    objects = gpustack_objects(list(resources))
    if not objects:
        return []
    urns = {(r.kind, r.namespace or DEFAULT_NAMESPACE if r.kind == "KVCachePoolBinding" else None, r.object_name): r.urn
            for r in objects}
    found = []
    for finding in unreferenced_findings([r.props for r in objects], pool_facts(resources)):
        subject = finding.subject
        key = (subject.kind, subject.namespace, subject.name) if subject else ("", None, "")
        found.append((urns.get(key, ""), finding))
    # The same advisory policy: a kvTransfer setting that serves no leg, like an object that serves no deployment.
    for finding in router_findings([r.props for r in objects]):
        found.append((urns.get(("ModelDeployment", None, finding.subject.name if finding.subject else ""), ""), finding))
    return found


def _validate_unreferenced(args: StackValidationArgs, report_violation: Any) -> None:
    for urn, finding in unreferenced_violations(stack_resources(args)):
        report_finding(report_violation, finding, str(finding), urn or None)


kv_cache_unreferenced = StackValidationPolicy(
    name="kv-cache-unreferenced",
    display_name="Every KV-cache object serves a deployment",
    description=(
        "A KVCacheBackend that no KVCachePool lists, a KVCachePool that no KVCachePoolBinding names, or a binding that "
        "no ModelDeployment names is reported: it runs, serves nobody, and an unused backend's fabric members fall "
        "out of the fabric domain checks. So is a kvTransfer.protocol RDMA or EFA without a router, which renders no leg."
    ),
    validate=_validate_unreferenced,
    enforcement_level=EnforcementLevel.ADVISORY,
    severity=Severity.LOW,
    tags=["kv-cache", "mooncake"],
    remediation_steps=(
        "Reference the object (a KVCachePool over the backend, a binding naming the pool, a ModelDeployment's "
        "kvCache.poolRef naming the binding), or remove it; check the names for a typo. Give a deployment with an RDMA "
        "or EFA kvTransfer a router, or drop kvTransfer."
    ),
)
