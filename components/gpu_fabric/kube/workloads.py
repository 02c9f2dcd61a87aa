"""Any workload on a fabric pool: the pod-template rules ``gpu-fabric lint --stack`` and the pack share (pure).

vLLM, SGLang, Dynamo and training jobs also run as plain Pods, Deployments, StatefulSets, DaemonSets,
Jobs, CronJobs and LeaderWorkerSets. Their KV transfer (NIXL over UCX or libfabric, Mooncake, NCCL)
falls back to TCP without a word when its settings disagree with the fabric. :func:`judge_workloads`
finds the pools each pod template lands on -- ``nodeSelector``, required node affinity and
tolerations, with :func:`gpu_fabric.kube.coverage.pod_schedules_on`, the matching device-plugin
coverage uses -- and applies :data:`~gpu_fabric.kube.workload_rules.RULES` per container and fabric pool.

A credential in plain text in a template (:func:`credential_findings`) is refused whichever pool it
lands on. A template that lands on no pool of the stack is reported as *not judged* (never passed silently);
one that lands only on pools without a fabric has nothing to judge. Shapes Kubernetes would refuse
(a ``containers`` that is not a list, a ``nodeSelector`` value that is not a string) are
:class:`WorkloadShapeError`, naming the path.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Collection, Iterable, Mapping, Sequence

from gpu_fabric.config.shapes import is_unknown
from gpu_fabric.findings import Finding, ObjectRef, Rule
from gpu_fabric.kube.coverage import pod_placement_refusal, pod_schedules_on
from gpu_fabric.kube.dra_claims import ClaimSpec, DeviceKinds
from gpu_fabric.kube.engine_flags import read_container
from gpu_fabric.kube.kueue_rules import queue_label_of
from gpu_fabric.kube.pod_templates import WorkloadShapeError, pod_templates, requested_resource_names
from gpu_fabric.kube.workload_demand import ClaimKey, demand_of, node_capacity_of, pod_claim_specs
from gpu_fabric.kube.workload_rules import (
    ERROR,
    FABRIC_RESOURCES,
    RULES,
    WARNING,
    WORKLOAD_LANDS_ON_NO_POOL,
    WORKLOAD_NODE_CAPACITY,
    ContainerView,
    FabricPool,
    credential_findings,
)


# ---------------------------------------------------------------------------------------------
# Judging
# ---------------------------------------------------------------------------------------------


def object_ref(obj: Mapping[str, Any]) -> ObjectRef:
    """The workload: ``Kind namespace/name`` (``default`` for a namespaced object that names none)."""
    raw = obj.get("metadata")
    metadata: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    return ObjectRef(str(obj.get("kind")), str(metadata.get("name") or "<unnamed>"), str(metadata.get("namespace") or "default"))


def pool_finding_line(finding: Finding) -> str:
    """``Kind namespace/name path (pool P): message [rule]``: how the pack and ``lint --stack`` print a
    finding on an object judged per pool."""
    pool = f" (pool {finding.pool})" if finding.pool is not None else ""
    return f"{finding.subject} {finding.path}{pool}: {finding.message} {finding.rule_tag}"


@dataclass
class WorkloadReport:
    """What :func:`judge_workloads` decided over a set of objects."""

    findings: list[Finding] = field(default_factory=list)
    judged: list[tuple[str, str, tuple[str, ...]]] = field(default_factory=list)
    """``(object, pod template path, fabric pools it lands on)`` for every judged template."""
    not_judged: list[tuple[str, str, str]] = field(default_factory=list)
    """``(object, pod template path, why)`` for templates that land on no pool of the stack."""
    passed_over: int = 0
    """Objects that are not workloads (no pod template)."""
    device_plugins: int = 0
    """Device-plugin DaemonSets: advertisers, judged by :mod:`gpu_fabric.kube.advertisers` instead."""

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity is ERROR]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity is WARNING]


DEVICE_PLUGIN_SOCKET_DIR = "/var/lib/kubelet/device-plugins"
"""Where every device plugin registers with the kubelet (Kubernetes device-plugin API)."""


def is_device_plugin(obj: Mapping[str, Any], templates: Sequence[tuple[str, Mapping[str, Any]]]) -> bool:
    """A DaemonSet that mounts the kubelet's device-plugin directory: an advertiser, not a workload."""
    if obj.get("kind") != "DaemonSet":
        return False
    for _, pod_spec in templates:
        for volume in pod_spec.get("volumes") or []:
            path = str(((volume or {}).get("hostPath") or {}).get("path") or "").rstrip("/")
            if path == DEVICE_PLUGIN_SOCKET_DIR:
                return True
    return False


def landing_pools(pod_spec: Mapping[str, Any], pools: Sequence[FabricPool]) -> tuple[list[FabricPool], list[str]]:
    """The pools a pod template can schedule on, and why each other pool refuses it."""
    landing, refusals = [], []
    for pool in pools:
        schedules, reason = pod_schedules_on(pod_spec, pool.placement.node_labels(), pool.placement.taints)
        if schedules:
            landing.append(pool)
        else:
            refusals.append(f"{pool.name}: {reason}")
    return landing, refusals


def judge_template(ref: ObjectRef, pod_path: str, pod_spec: Mapping[str, Any], pool: FabricPool) -> list[Finding]:
    """Every rule over every container of one pod template on one pool (on a pool without a fabric, the
    rules marked ``every_pool`` only)."""
    findings: list[Finding] = []
    for key in ("initContainers", "containers"):
        for i, container in enumerate(pod_spec.get(key) or []):
            path = f"{pod_path}.{key}[{i}]"
            view = ContainerView(pod_path, pod_spec, path, container, read_container(container, path), pool, ref)
            for spec in RULES:
                if pool.fabric == "none" and not spec.every_pool:
                    continue
                findings.extend(spec.check(view))
    return findings


def node_capacity_findings(ref: ObjectRef, pod_path: str, pod_spec: Mapping[str, Any], pool: FabricPool,
                           claims: Mapping[ClaimKey, ClaimSpec] | None = None) -> list[Finding]:
    """``workload-node-capacity``: what the pod asks for (:func:`gpu_fabric.kube.workload_demand.demand_of`) against
    one node of ``pool``. Blamed on the one container or claim that alone asks for too much, else on the pod
    with every part listed, largest first."""
    if not pool.node_capacity:
        return []
    found = []
    demand = demand_of(pod_path, pod_spec, ref.namespace or "default", claims or {})
    types = f" ({', '.join(pool.instance_types)})" if pool.instance_types else ""
    for key, (total, parts) in sorted(demand.items()):
        room = pool.node_capacity.get(key)
        if room is None or total <= room:
            continue
        alone = max(parts, key=lambda part: part.count)
        never = f"one node of pool {pool.name}{types} has {room}: the pod is never scheduled"
        if alone.count > room:
            fix = (f"ask for at most {room} per pod and spread the work over more pods" if room else
                   f"run it on a pool whose nodes have {key}")
            found.append(view_finding(WORKLOAD_NODE_CAPACITY, ref, pool, alone.path,
                                      f"{alone.what} asks for {alone.count} {key}; {never}; {fix}"))
            continue
        listed = ", ".join(f"{part.what} {part.count}" for part in sorted(parts, key=lambda p: -p.count))
        init = any(part.what.startswith("init container") for part in parts)
        rule = "; init containers count by the largest, the rest add up" if init else ""
        found.append(view_finding(WORKLOAD_NODE_CAPACITY, ref, pool, pod_path, (
            f"the pod asks for {total} {key} in all ({listed}{rule}); {never}; shrink the counts to {room} in all "
            "or split the work over more pods")))
    return found


def view_finding(rule: Rule, ref: ObjectRef, pool: FabricPool, path: str, message: str) -> Finding:
    """An error of ``rule`` on workload ``ref`` for ``pool`` at ``path``."""
    return Finding.of(rule, path, message, subject=ref, pool=pool.name)


def fabric_asks(obj: Mapping[str, Any], pod_spec: Mapping[str, Any], namespace: str,
                claims: Mapping[ClaimKey, ClaimSpec], local_queues: Collection[tuple[str, str]]) -> list[str]:
    """How a pod template asks for the fabric, in words (empty: it does not): a fabric key,
    a claim of a GPU or NIC DeviceClass, or the queue-name label naming a LocalQueue of the stack."""
    asks = sorted(requested_resource_names(pod_spec) & set(FABRIC_RESOURCES))
    kinds = DeviceKinds()
    for _, name, names, spec in pod_claim_specs(pod_spec, namespace, claims):
        classes = sorted(spec.device_classes & (kinds.gpus | kinds.nics))
        if classes:
            asks.append(f"claim {name!r} ({names}: {', '.join(classes)})")
    queue, _ = queue_label_of(obj)
    if queue and (namespace, queue) in local_queues:
        asks.append(f"LocalQueue {queue}")
    return asks


def no_pool_finding(ref: ObjectRef, pod_path: str, pod_spec: Mapping[str, Any], pools: Sequence[FabricPool],
                    asks: Sequence[str]) -> Finding:
    """``workload-lands-on-no-pool``: the template asks for the fabric and every pool refuses it; the path is the
    field every pool refuses it by (``tolerations``, ``nodeSelector``, ``affinity.nodeAffinity``) when they agree."""
    refusals = [(pool, refusal) for pool in pools
                if (refusal := pod_placement_refusal(pod_spec, pool.placement.node_labels(), pool.placement.taints))]
    fields = {where for _, (where, _) in refusals}
    path = f"{pod_path}.{fields.pop()}" if len(fields) == 1 else pod_path
    why = "; ".join(f"pool {pool.name}: {reason}" for pool, (_, reason) in refusals)
    return Finding.of(WORKLOAD_LANDS_ON_NO_POOL, path, (
        f"asks for the fabric ({', '.join(asks)}) but lands on no pool of the stack ({why}): the pod stays Pending; "
        "add the pool's toleration or fix the selector so it lands on the pool meant for it"), subject=ref)


def judge_workloads(objects: Iterable[Mapping[str, Any]], pools: Sequence[FabricPool], *,
                    claims: Mapping[ClaimKey, ClaimSpec] | None = None,
                    local_queues: Collection[tuple[str, str]] = ()) -> WorkloadReport:
    """Judge every pod template of ``objects`` against the fabric pools it lands on.

    ``claims``: the ResourceClaimTemplates and ResourceClaims known (the stack's own and the files') by
    ``(namespace, kind, name)`` (:func:`gpu_fabric.kube.dra_rules.claim_specs`), so a pod's claimed devices count
    against a node; ``local_queues``: ``(namespace, name)`` of the stack's LocalQueues. A template that asks for the
    fabric and lands on no pool is a finding (``workload-lands-on-no-pool``), any other is *not judged*.
    Raises :class:`WorkloadShapeError` (with the object named in the message) for a malformed template.
    """
    report = WorkloadReport()
    claims = claims or {}
    for obj in objects:
        ref = object_ref(obj)
        report.findings.extend(credential_findings(ref, "", obj))
        try:
            templates = pod_templates(obj)
        except WorkloadShapeError as error:
            raise WorkloadShapeError(f"{ref} {error.path}", error.message) from None
        if not templates:
            report.passed_over += 1
            continue
        if is_device_plugin(obj, templates):
            report.device_plugins += 1
            continue
        for pod_path, pod_spec in templates:
            landing, refusals = landing_pools(pod_spec, pools)
            asks = fabric_asks(obj, pod_spec, ref.namespace or "default", claims, local_queues) if not landing else []
            if not landing and pools and asks:
                report.findings.append(no_pool_finding(ref, pod_path, pod_spec, pools, asks))
                continue
            if not landing:
                report.not_judged.append((str(ref), pod_path, "lands on no pool of the stack (" + "; ".join(refusals) + ")"
                                          if refusals else "the stack declares no pools"))
                continue
            fabric = [pool for pool in landing if pool.fabric != "none"]
            report.judged.append((str(ref), pod_path, tuple(pool.name for pool in fabric)))
            for pool in landing:
                report.findings.extend(judge_template(ref, pod_path, pod_spec, pool))
                report.findings.extend(node_capacity_findings(ref, pod_path, pod_spec, pool, claims))
    return report


def fabric_pool_of(pool: Any) -> FabricPool:
    """A stack pool (:class:`gpu_fabric.config.pool.PoolSpec`) as the workload and advertiser rules see it."""
    return FabricPool.of(
        pool.name, pool.fabric, pool.effective_node_labels(), pool.taint_dicts(), pool.resolved_manufacturer,
        pool.partitioned_interfaces_per_node, pool.aws.instance_types if pool.aws is not None else (), dra=pool.uses_dra,
        node_capacity=node_capacity_of(pool.fabric, dra=pool.uses_dra, accelerators=pool.accelerators_per_node,
                                       accelerator_resource=pool.resolved_accelerator_resource,
                                       interfaces=pool.interfaces_per_node,
                                       partitioned=pool.partitioned_interfaces_per_node))
