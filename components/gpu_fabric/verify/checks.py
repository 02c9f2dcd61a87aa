"""Compare a cluster snapshot with a stack's expectations (pure).

Every comparison yields a :class:`Check` naming its subject (a node, a pool, an object), what was
expected and what was found, so a failure reads like the walkthrough's manual check that caught it:
``node gpu-2: allocatable device.gpustack.ai/rdma: expected 2, found 1``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable, Literal, Mapping, Optional, Sequence

from gpu_fabric.config.quantity import QuantityError, parse_quantity
from gpu_fabric.config.pool import labels_identify_pool
from gpu_fabric.verify.dra import ALIGNED, MALFORMED, NOT_CHECKED, SPLIT, UNPAIRED, alignments
from gpu_fabric.verify.dra import EXPECTED as DRA_EXPECTED
from gpu_fabric.verify.expectations import (
    KUBELET_TOPOLOGY_DEFAULTS,
    PLACEMENT_FIELDS,
    ObjectExpectation,
    PoolExpectation,
    StackExpectations,
    pod_placement,
)
from gpu_fabric.verify.snapshot import ClusterSnapshot, KubeletConfigResult

Status = Literal["pass", "fail", "inconclusive"]
PASS: Status = "pass"
FAIL: Status = "fail"
INCONCLUSIVE: Status = "inconclusive"
ABSENT = "absent"


@dataclass(frozen=True)
class Check:
    """One comparison: ``subject`` (``node gpu-1``, ``pool X``, ``LocalQueue ns/name``), ``name``, values."""

    subject: str
    name: str
    expected: Any
    found: Any
    status: Status
    detail: str = ""

    def sentence(self) -> str:
        """``node gpu-2: allocatable device.gpustack.ai/rdma: expected 2, found 1``."""
        text = f"{self.subject}: {self.name}: expected {show(self.expected)}, found {show(self.found)}"
        return f"{text} ({self.detail})" if self.detail else text

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        data = {"subject": self.subject, "check": self.name, "expected": self.expected, "found": self.found,
                "status": self.status}
        if self.detail:
            data["detail"] = self.detail
        return data


def show(value: Any) -> str:
    """A value as a report prints it: scalars as text, mappings and lists as compact JSON."""
    if isinstance(value, (Mapping, list)):
        return json.dumps(value, sort_keys=True, separators=(", ", ": "))
    return str(value)


def overall(statuses: Iterable[Status]) -> Status:
    """``fail`` beats ``inconclusive`` beats ``pass``."""
    found = set(statuses)
    return FAIL if FAIL in found else INCONCLUSIVE if INCONCLUSIVE in found else PASS


@dataclass
class NodeResult:
    """The checks of one node of a pool."""

    name: str
    checks: list[Check] = field(default_factory=list)

    @property
    def status(self) -> Status:
        """The worst status of the node's checks."""
        return overall(check.status for check in self.checks)

    def check(self, name: str) -> Optional[Check]:
        """The node's check called ``name``."""
        return next((check for check in self.checks if check.name == name), None)


@dataclass
class PoolResult:
    """A pool's own checks (its node count) and those of each of its nodes."""

    expectation: PoolExpectation
    checks: list[Check] = field(default_factory=list)
    nodes: list[NodeResult] = field(default_factory=list)

    @property
    def status(self) -> Status:
        """The worst status of the pool's and its nodes' checks."""
        return overall([c.status for c in self.checks] + [n.status for n in self.nodes])

    def all_checks(self) -> list[Check]:
        """Pool checks, then every node's, in node order."""
        return [*self.checks, *(check for node in self.nodes for check in node.checks)]


@dataclass
class VerifyReport:
    """The outcome of one ``verify`` run."""

    stack: str
    target: str
    pools: list[PoolResult] = field(default_factory=list)
    objects: list[Check] = field(default_factory=list)
    devices: list[Check] = field(default_factory=list)
    """GPU/NIC PCIe-root alignment of each allocated DRA claim (:mod:`gpu_fabric.verify.dra`)."""
    logs: list[Any] = field(default_factory=list)
    """:class:`gpu_fabric.verify.nccl.LogVerdict` per ``--nccl-log`` file."""

    def all_checks(self) -> list[Check]:
        """Every check: pools (with their nodes), objects, DRA device alignment, then NCCL logs."""
        checks = [check for pool in self.pools for check in pool.all_checks()]
        return checks + list(self.objects) + list(self.devices) + [log.check() for log in self.logs]

    @property
    def status(self) -> Status:
        """``pass`` only when every check passed."""
        return overall(check.status for check in self.all_checks())

    def problems(self) -> list[Check]:
        """Checks that failed or could not conclude, in report order."""
        return [check for check in self.all_checks() if check.status != PASS]


# -- nodes -----------------------------------------------------------------------------------------


def node_name(node: Mapping[str, Any]) -> str:
    """``metadata.name`` of a node object."""
    return str((node.get("metadata") or {}).get("name") or "")


def node_labels(node: Mapping[str, Any]) -> Mapping[str, str]:
    """``metadata.labels`` of a node object."""
    return (node.get("metadata") or {}).get("labels") or {}


def carries(node: Mapping[str, Any], selector: Mapping[str, str]) -> bool:
    """True when the node has every label of ``selector`` with the same value."""
    labels = node_labels(node)
    return all(labels.get(key) == value for key, value in selector.items())


def pool_members(pools: Sequence[PoolExpectation], nodes: Sequence[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    """Each pool's nodes (sorted by name); a pool whose labels cannot tell its nodes apart claims none."""
    ordered = sorted(nodes, key=node_name)
    return {pool.name: [node for node in ordered if carries(node, pool.selector)] if labels_identify_pool(pool.selector) else []
            for pool in pools}


def _ready(node: Mapping[str, Any]) -> str:
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return str(condition.get("status", "Unknown"))
    return "Unknown"


def _count(value: Any) -> Optional[int]:
    try:
        number = parse_quantity(value)
    except QuantityError:
        return None
    return int(number) if number == number.to_integral_value() else None


def allocatable_checks(subject: str, node: Mapping[str, Any], expected: Mapping[str, int]) -> list[Check]:
    """``allocatable <resource>`` equals the pool's count exactly (absent counts as a failure, except where the
    count is 0: a key nothing should advertise, as on a ``deviceAllocation: dra`` pool)."""
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    checks = []
    for resource, count in expected.items():
        raw = allocatable.get(resource)
        counted = _count(raw) if raw is not None else None
        found: Any = ABSENT if raw is None else counted if counted is not None else raw
        matches = found == count or (count == 0 and found == ABSENT)
        checks.append(Check(subject, f"allocatable {resource}", count, found, PASS if matches else FAIL))
    return checks


def taint_text(taint: Mapping[str, Any]) -> str:
    """``key=value:Effect`` (``key:Effect`` without a value), as kubectl prints taints."""
    value = taint.get("value") or ""
    return f"{taint['key']}{'=' + value if value else ''}:{taint.get('effect', '')}"


def taint_checks(subject: str, node: Mapping[str, Any], expected: Sequence[Mapping[str, str]]) -> list[Check]:
    """Each of the pool's taints is on the node (a missing one lets other workloads onto fabric nodes)."""
    found = {taint_text(taint) for taint in (node.get("spec") or {}).get("taints") or [] if isinstance(taint, Mapping)}
    checks = []
    for taint in expected:
        text = taint_text(taint)
        checks.append(Check(subject, f"taint {taint['key']}", text, text if text in found else ABSENT,
                            PASS if text in found else FAIL))
    return checks


def _canonical_options(value: Any) -> Any:
    # Options left at "false" equal the kubelet default; the stack's model drops them too.
    if isinstance(value, Mapping):
        return {str(key): str(item) for key, item in sorted(value.items()) if str(item).lower() != "false"}
    return value


def kubelet_checks(subject: str, result: Optional[KubeletConfigResult], expected: Mapping[str, Any]) -> list[Check]:
    """The kubelet's running ``configz`` values against the pool's declared topology settings."""
    if result is not None and not result.checkable:
        return [Check(subject, "kubelet configz", "readable", "not checked", INCONCLUSIVE, result.error)]
    if result is None or result.config is None:
        reason = result.error if result is not None else "not read"
        return [Check(subject, "kubelet configz", "readable", "unreadable", FAIL, reason)]
    checks = []
    for key, value in expected.items():
        found = result.config.get(key, KUBELET_TOPOLOGY_DEFAULTS.get(key, ABSENT))
        want, got = _canonical_options(value), _canonical_options(found)
        checks.append(Check(subject, f"kubelet {key}", want, got, PASS if want == got else FAIL))
    return checks


def pool_result(pool: PoolExpectation, members: Sequence[Mapping[str, Any]], snapshot: ClusterSnapshot,
                claimed_by: Mapping[str, list[str]]) -> PoolResult:
    """The pool's node count and every member node's readiness, allocatable, taint and kubelet checks."""
    subject = f"pool {pool.name}"
    result = PoolResult(pool)
    selector = ",".join(f"{key}={value}" for key, value in pool.selector.items())
    if not labels_identify_pool(pool.selector):
        result.checks.append(Check(subject, "nodes", f">= {pool.min_nodes}", "unknown", INCONCLUSIVE,
                                   f"only {selector or 'no labels'} mark the pool's nodes, which other nodes carry "
                                   "too; declare the pool's nodeLabels"))
        return result
    result.checks.append(Check(subject, "nodes", f">= {pool.min_nodes}", len(members),
                               PASS if len(members) >= pool.min_nodes else FAIL, f"nodes labelled {selector}"))
    for node in members:
        name = node_name(node)
        node_subject = f"node {name}"
        checks = [Check(node_subject, "Ready", "True", _ready(node), PASS if _ready(node) == "True" else FAIL)]
        others = [other for other in claimed_by.get(name, []) if other != pool.name]
        if others:
            checks.append(Check(node_subject, "pool", pool.name, ", ".join(sorted([pool.name, *others])), FAIL,
                                "its labels match several pools; give the pools distinguishing nodeLabels"))
        checks.extend(allocatable_checks(node_subject, node, pool.allocatable))
        checks.extend(taint_checks(node_subject, node, pool.taints))
        checks.extend(kubelet_checks(node_subject, snapshot.kubelet.get(name), pool.kubelet))
        result.nodes.append(NodeResult(name, checks))
    return result


# -- objects ---------------------------------------------------------------------------------------


def object_checks(expectation: ObjectExpectation, found: Optional[Mapping[str, Any]]) -> list[Check]:
    """The object exists; a DaemonSet also has every scheduled pod ready and runs where it was rendered to."""
    ref = expectation.ref
    subject = ref.label()
    if found is None:
        return [Check(subject, "exists", "present", ABSENT, FAIL)]
    checks = [Check(subject, "exists", "present", "present", PASS)]
    if expectation.rollout:
        status = found.get("status") or {}
        desired, ready = status.get("desiredNumberScheduled", 0), status.get("numberReady", 0)
        checks.append(Check(subject, "pods ready", desired, ready, PASS if ready == desired else FAIL,
                            "numberReady vs desiredNumberScheduled"))
    if expectation.placement or expectation.rollout:
        live = pod_placement(found)
        for key in PLACEMENT_FIELDS:
            want, got = expectation.placement.get(key), live.get(key)
            if want is None and got is None:
                continue
            checks.append(Check(subject, f"pod {key}", want if want is not None else ABSENT,
                                got if got is not None else ABSENT, PASS if want == got else FAIL))
    return checks


# -- DRA claims -------------------------------------------------------------------------------------

ALIGNMENT_STATUS: Mapping[str, Status] = {ALIGNED: PASS, SPLIT: FAIL, UNPAIRED: FAIL, MALFORMED: FAIL,
                                          NOT_CHECKED: INCONCLUSIVE}
"""A split pair, a GPU claimed without its NIC on a fabric node or a malformed allocation fails; a device without a
published root is not checked, never a pass."""


def alignment_checks(claims: Sequence[Any], slices: Sequence[Any]) -> list[Check]:
    """The GPU/NIC PCIe-root check of every allocated claim (:func:`gpu_fabric.verify.dra.alignments`)."""
    return [Check(a.subject, a.name, DRA_EXPECTED, a.found, ALIGNMENT_STATUS[a.verdict], a.detail)
            for a in alignments(claims, slices)]


def verify(expectations: StackExpectations, snapshot: ClusterSnapshot, target: str = "") -> VerifyReport:
    """Every check of ``expectations`` against ``snapshot``."""
    members = pool_members(expectations.pools, snapshot.nodes)
    claimed_by: dict[str, list[str]] = {}
    for pool_name, nodes in members.items():
        for node in nodes:
            claimed_by.setdefault(node_name(node), []).append(pool_name)
    report = VerifyReport(expectations.stack, target)
    for pool in expectations.pools:
        report.pools.append(pool_result(pool, members[pool.name], snapshot, claimed_by))
    for expectation in expectations.objects:
        report.objects.extend(object_checks(expectation, snapshot.objects.get(expectation.ref)))
    report.devices.extend(alignment_checks(snapshot.claims, snapshot.slices))
    return report
