"""Policies ``kueue-fabric-workload-queue`` and ``kueue-fabric-keys-covered``: :mod:`gpu_fabric.kube.kueue_rules`
over a stack's workloads, LocalQueues and ClusterQueues.

A Pod or workload (Deployment, StatefulSet, ReplicaSet, Job, CronJob, LeaderWorkerSet) is a fabric
workload when its containers request a fabric key or its ResourceClaimTemplates claim a fabric NIC; DaemonSets (device plugins, Mooncake members) are
node agents, not queued workloads. A ClusterQueue admits fabric workloads through its LocalQueues, or
because it is a fabric pool's queue.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from pulumi_policy import EnforcementLevel, Severity, StackValidationArgs, StackValidationPolicy

from gpu_fabric.config.shapes import as_list, as_mapping, known_str
from gpu_fabric.findings import Finding
from gpu_fabric.kube.dra_claims import ClaimSpec
from gpu_fabric.kube.dra_rules import claim_specs
from gpu_fabric.kube.workload_demand import ClaimKey
from gpu_fabric.kube.kueue_rules import (
    DEFAULT_NAMESPACE,
    KUEUE_GROUP,
    covered_keys_findings,
    declared_local_queues,
    fabric_keys_of,
    queue_label_of,
    workload_queue_findings,
)
from gpu_fabric.policies.engine_wire import stack_resources
from gpu_fabric.plan.resource_view import pool_facts, Resource
from gpu_fabric.gpustack.transfer_legs import EFA_KEY, FABRIC_KEYS
from gpu_fabric.policies.reporting import report_finding


def local_queues(resources: Sequence[Resource]) -> dict[tuple[str, str], Resource]:
    """(namespace, name) -> LocalQueue (owned or adopted with a patch)."""
    return {
        (r.namespace or DEFAULT_NAMESPACE, r.object_name): r
        for r in resources
        if r.is_kubernetes_object and r.api_group == KUEUE_GROUP and r.kind == "LocalQueue"
    }


def fabric_workloads(resources: Sequence[Resource], claims: Optional[Mapping[ClaimKey, ClaimSpec]] = None,
                     ) -> list[tuple[Resource, set[str]]]:
    """Workloads requesting fabric keys (with ``claims``: or claiming fabric devices through those templates)."""
    return [(r, keys) for r in resources if r.is_kubernetes_object and (keys := fabric_keys_of(r.props, claims))]


def workload_findings(resources: Sequence[Resource]) -> list[tuple[str, Finding]]:
    """``(urn, finding)`` for every fabric workload without a LocalQueue of the stack
    (:func:`gpu_fabric.kube.kueue_rules.workload_queue_findings`, which ``lint --stack`` calls too); claims through
    the stack's ResourceClaimTemplates count as the fabric keys do."""
    manifests = [r.props for r in resources if r.is_kubernetes_object]
    declared = declared_local_queues(manifests)
    claims, _ = claim_specs(manifests)
    return [(workload.urn, finding) for workload, _ in fabric_workloads(resources, claims)
            for finding in workload_queue_findings(workload.props, declared, name=workload.name, claims=claims)]


def covered_resources(cluster_queue: Resource) -> set[str]:
    covered: set[str] = set()
    for group in as_list(cluster_queue.spec.get("resourceGroups")):
        covered.update(str(k) for k in as_list(as_mapping(group).get("coveredResources")) if known_str(k))
    return covered


def coverage_findings(resources: Sequence[Resource]) -> list[tuple[str, Finding]]:
    """``(urn, finding)`` for every ClusterQueue that does not cover the fabric keys it admits."""
    cluster_queues = {r.object_name: r for r in resources
                      if r.is_kubernetes_object and r.api_group == KUEUE_GROUP and r.kind == "ClusterQueue"}
    if not cluster_queues:
        return []
    wanted: dict[str, set[str]] = {}
    queues = local_queues(resources)
    for workload, keys in fabric_workloads(resources):
        queue = queues.get((workload.namespace or DEFAULT_NAMESPACE, queue_label_of(workload.props)[0] or ""))
        if queue is not None:
            target = known_str(queue.spec.get("clusterQueue"))
            if target:
                wanted.setdefault(target, set()).update(keys)
    for pool in pool_facts(resources):
        if pool.uses_dra:
            continue  # claimed devices are metered by DeviceClass (kube.kueue.device_class_mappings), not by fabric key
        if pool.fabric == "efa":
            wanted.setdefault(pool.name, set()).add(EFA_KEY)
        elif pool.fabric == "rdma":
            wanted.setdefault(pool.name, set()).update(FABRIC_KEYS["rdma"][:2])
    found: list[tuple[str, Finding]] = []
    for name, keys in sorted(wanted.items()):
        queue = cluster_queues.get(name)
        if queue is not None:
            found.extend((queue.urn, finding) for finding in covered_keys_findings(name, keys, covered_resources(queue)))
    return found


def _validate_workloads(args: StackValidationArgs, report_violation: Any) -> None:
    for urn, finding in workload_findings(stack_resources(args)):
        report_finding(report_violation, finding, str(finding), urn)


def _validate_coverage(args: StackValidationArgs, report_violation: Any) -> None:
    for urn, finding in coverage_findings(stack_resources(args)):
        report_finding(report_violation, finding, str(finding), urn)


kueue_fabric_workload_queue = StackValidationPolicy(
    name="kueue-fabric-workload-queue",
    display_name="Fabric workloads name a LocalQueue of the stack",
    description=(
        "Pods and workload pod templates that request fabric devices (vpc.amazonaws.com/efa, "
        "device.gpustack.ai/rdma*) carry kueue.x-k8s.io/queue-name naming a LocalQueue declared by the stack in "
        "the same namespace."
    ),
    validate=_validate_workloads,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.MEDIUM,
    tags=["kueue", "quota", "efa", "rdma"],
    remediation_steps=(
        "Label the workload with kueue.x-k8s.io/queue-name: <LocalQueue>; the stack exports the entrance "
        "LocalQueue names per pool and namespace as 'localQueues' (gpustack-fnv64-<hash> under GPUStack)."
    ),
)

kueue_fabric_keys_covered = StackValidationPolicy(
    name="kueue-fabric-keys-covered",
    display_name="ClusterQueues meter the fabric keys they admit",
    description=(
        "A ClusterQueue that admits fabric workloads lists their fabric keys in coveredResources, so Kueue "
        "cannot admit more EFA/RDMA endpoints than the pool has."
    ),
    validate=_validate_coverage,
    enforcement_level=EnforcementLevel.ADVISORY,
    severity=Severity.LOW,
    tags=["kueue", "quota", "efa", "rdma"],
    remediation_steps=(
        "Add the fabric keys to the ClusterQueue's coveredResources with a nominalQuota of interfaces per node x "
        "node count (gpu_fabric.kube.kueue.cluster_queue does), or use queueOwner: standalone."
    ),
)
