"""Policies ``fabric-workloads`` (mandatory) and ``fabric-workloads-advisory``: any workload on a fabric pool.

The rules are :mod:`gpu_fabric.kube.workloads` (the very ones ``gpu-fabric lint --stack`` runs): every
Pod, Deployment, StatefulSet, DaemonSet, Job, CronJob and LeaderWorkerSet a team's Pulumi program
registers is matched to the stack's pools by ``nodeSelector``, required node affinity and
tolerations, and judged per container on each fabric pool it lands on. Errors (a fabric key nothing
advertises, EFA without ``hugepages-2Mi``, a UCX transport list without the fabric's transport, ...)
are mandatory; dead configuration (NCCL variables NIXL ignores) is advisory. Templates whose values
are unknown at preview in the fields the rules read are passed over; the engine validates them.
"""

from __future__ import annotations

from typing import Any, Sequence

from pulumi_policy import EnforcementLevel, Severity, StackValidationArgs, StackValidationPolicy

from gpu_fabric.findings import Finding, Severity as Verdict
from gpu_fabric.kube.dra_rules import claim_specs
from gpu_fabric.kube.kueue_rules import declared_local_queues
from gpu_fabric.kube.workload_demand import node_capacity_of
from gpu_fabric.kube.workload_rules import FabricPool
from gpu_fabric.kube.workloads import judge_workloads, pool_finding_line
from gpu_fabric.policies.reporting import report_finding
from gpu_fabric.config.shapes import rests_on_unknown
from gpu_fabric.kube.pod_templates import WorkloadShapeError, pod_spec_of
from gpu_fabric.policies.analyzer_calls import judged_once
from gpu_fabric.policies.engine_wire import stack_resources
from gpu_fabric.plan.resource_view import kubernetes_objects, pool_facts, PoolFacts, Resource


def fabric_pools(resources: Sequence[Resource]) -> list[FabricPool]:
    """The stack's pools (KueuePool specs, then node groups) as the workload and advertiser rules see them.

    A pool whose placement cannot be read (a taint effect unknown at preview) is left out; the
    ``device-plugin-coverage`` policy reports it.
    """
    pools = []
    for pool in pool_facts(resources):
        try:
            pools.append(_fabric_pool(pool))
        except ValueError:
            continue
    return pools


def _fabric_pool(pool: PoolFacts) -> FabricPool:
    capacity = node_capacity_of(pool.fabric, dra=pool.uses_dra, accelerators=pool.accelerators_per_node,
                                accelerator_resource=pool.accelerator_resource, interfaces=pool.interfaces_per_node,
                                partitioned=pool.partitioned_interfaces_per_node)
    return FabricPool.of(pool.name, pool.fabric, pool.labels, pool.taints, pool.manufacturer,
                         pool.partitioned_interfaces_per_node, pool.instance_types,
                         dra=pool.uses_dra, node_capacity=capacity)


def workload_findings(resources: Sequence[Resource]) -> list[tuple[str, Finding]]:
    """``(urn, finding)`` for every rule a workload resource of the stack breaks; claims resolve against the
    stack's ResourceClaimTemplates and ResourceClaims, and a fabric workload landing on no pool of a stack that
    declares pools is refused."""
    pools = fabric_pools(resources)
    manifests = [r.props for r in kubernetes_objects(resources)]
    claims, _ = claim_specs(manifests)
    queues = {(queue.namespace, queue.name) for queue in declared_local_queues(manifests)}
    found: list[tuple[str, Finding]] = []
    for resource in kubernetes_objects(resources):
        # Every object, as lint judges every object of its files: a ConfigMap's data and any object's annotations
        # are read for credentials (plaintext-credential); only workload kinds have pod templates to judge.
        try:
            report = judge_workloads([dict(resource.props)], pools, claims=claims, local_queues=queues)
        except WorkloadShapeError:
            continue  # unknown at preview, or refused by the API server anyway
        volumes_unknown = rests_on_unknown(pod_spec_of(resource.props) or {}, ("volumes",))
        found.extend((resource.urn, finding) for finding in report.findings
                     if not (volumes_unknown and _rests_on_volumes(finding)))
    return found


def _rests_on_volumes(finding: Finding) -> bool:
    """A finding about what a mount or volume brings to the pod: it waits while the pod's ``volumes`` are unknown."""
    return any(segment in ("volumeMounts", "volumes") for segment in finding.path.segments)


def _report(severity: Verdict, args: StackValidationArgs, report_violation: Any) -> None:
    # One judgement per analyzer call for both policies, each reporting its severity.
    for urn, finding in judged_once("fabric-workloads", stack_resources(args), workload_findings):
        if finding.severity is severity:
            report_finding(report_violation, finding, pool_finding_line(finding), urn)


def _validate_errors(args: StackValidationArgs, report_violation: Any) -> None:
    _report(Verdict.ERROR, args, report_violation)


def _validate_warnings(args: StackValidationArgs, report_violation: Any) -> None:
    _report(Verdict.WARNING, args, report_violation)


fabric_workloads = StackValidationPolicy(
    name="fabric-workloads",
    display_name="Workloads on fabric pools use the fabric",
    description=(
        "Pods and workload templates landing on an EFA or RDMA pool request only fabric keys the pool advertises, "
        "request hugepages-2Mi beside vpc.amazonaws.com/efa, use NIXL backends and UCX transports the fabric carries, "
        "keep FI_PROVIDER efa and RDMAV_* unset on EFA, leave advertiser-owned settings and devices alone, and ask "
        "for no more GPUs, EFA or claimed devices than one node has; a workload asking for the fabric lands on a pool."
    ),
    validate=_validate_errors,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    tags=["workloads", "efa", "rdma", "nixl", "ucx"],
    remediation_steps=(
        "Fix the field the finding names: request only the pool's fabric key (vpc.amazonaws.com/efa on EFA, "
        "device.gpustack.ai/rdma* on RDMA) with hugepages-2Mi beside the EFA key, choose NIXL's LIBFABRIC backend on "
        "EFA or list the fabric's UCX transport (srd on EFA, rc_x/rc/dc on RDMA), leave FI_PROVIDER efa and RDMAV_* "
        "unset, let the advertiser set NCCL_IB_HCA and the device nodes, size pods and claims to one node, and "
        "tolerate the pool's taints. docs/workloads.md explains each rule."
    ),
)

fabric_workloads_advisory = StackValidationPolicy(
    name="fabric-workloads-advisory",
    display_name="Workloads on fabric pools carry no dead transfer settings",
    description=(
        "NCCL variables a NixlConnector does not read, UCX transport lists without GPU transports, UCX over EFA "
        "where libfabric is the supported path, and the libfabric backend on RDMA pools."
    ),
    validate=_validate_warnings,
    enforcement_level=EnforcementLevel.ADVISORY,
    severity=Severity.LOW,
    tags=["workloads", "nixl", "nccl"],
    remediation_steps=(
        "Drop NCCL_IB_HCA / NCCL_SOCKET_IFNAME where only NixlConnector moves the KV cache (set UCX_NET_DEVICES), add "
        "cuda_copy/cuda_ipc to an explicit UCX_TLS, and prefer the LIBFABRIC backend on EFA (see docs/workloads.md)."
    ),
)
