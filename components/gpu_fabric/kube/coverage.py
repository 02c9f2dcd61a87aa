"""Does a device-plugin DaemonSet schedule on a pool's nodes?

A fabric is only usable when the DaemonSet that advertises its extended resource actually runs on
the nodes carrying the hardware. A plugin that never schedules shows ``DESIRED=0`` and nothing
fails loudly: NCCL falls back to sockets (eks-efa-anchors rule 21). This module answers the
question from data alone, so the components (before they register anything), the policy pack
(from resource inputs) and ``gpu-fabric lint`` (from YAML) share one implementation.

Everything here reads Kubernetes manifests as plain dicts with camelCase keys. The scheduling
rules are the kube-scheduler's: ``nodeSelector``, required node affinity, and taints versus
tolerations, plus the tolerations the DaemonSet controller adds to every DaemonSet pod.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Collection, Iterable, Mapping, Sequence

from gpu_fabric.config import constants
from gpu_fabric.config.shapes import mapping_at, str_at
from gpu_fabric.config.taints import normalize_effect
from gpu_fabric.findings import Finding, Rule

DEVICE_PLUGIN_COVERAGE = Rule(
    "device-plugin-coverage",
    "every fabric pool has a device plugin DaemonSet that schedules on its nodes; no EFA plugin on pools without EFA",
    "https://docs.aws.amazon.com/eks/latest/userguide/device-management-efa.html", policy="device-plugin-coverage")

EFA_RESOURCE = constants.EFA_RESOURCE
"""Extended resource the AWS EFA device plugin advertises."""

EFA_PRESENT_LABEL = constants.EFA_PRESENT_LABEL
"""Node label our EFA node groups set; the EFA plugin selects on it instead of instance types."""

RDMA_RESOURCE = constants.RDMA_RESOURCE
RDMA_SHARED_RESOURCE = constants.RDMA_SHARED_RESOURCE
RDMA_PARTITIONED_RESOURCE = constants.RDMA_PARTITIONED_RESOURCE

ADVERTISES_ANNOTATION = "gpu-fabric.io/advertises"
"""DaemonSet annotation listing (comma-separated) the extended resources its pods advertise.

An annotation rather than a label: label values may not contain ``/``, and every extended
resource name does (``vpc.amazonaws.com/efa``).
"""

EFA_PLUGIN_IMAGE_MARKER = "aws-efa-k8s-device-plugin"
DEVICE_MANAGER_IMAGE_MARKER = "gpustack/gpustack-operator"
DEVICE_MANAGER_ARG_MARKER = "device-manager"

FABRICS = ("efa", "rdma", "none")

PCI_VENDOR_IDS: Mapping[str, str] = {
    # nvidia: the operator chart's Device Manager DaemonSet selects NFD's pci-10de label (gpustack/gpustack-operator
    # deploy/gpustack-operator/chart/templates/device-manager/daemonset.yaml). The others match the operator's
    # manufacturer-to-PCI-vendor map as mirrored in GPUStack's worker DaemonSet renderer, and
    # the PCI ID database (pci-ids.ucw.cz).
    "amd": "1002",
    "ascend": "19e5",
    "cambricon": "cabc",
    "hygon": "1d94",
    "iluvatar": "1e3e",
    "metax": "9999",
    "mthreads": "1ed5",
    "nvidia": "10de",
    "thead": "1ded",
}
"""Accelerator manufacturer -> PCI vendor ID, as NFD spells it in its node labels."""


# Effects that keep a pod off a node; PreferNoSchedule is only a scoring hint.
_BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")

# The DaemonSet controller adds these to every DaemonSet pod (pkg/controller/daemon/util), so
# node-condition taints never keep a DaemonSet off a node even though the template omits them.
_DAEMONSET_DEFAULT_TOLERATIONS: tuple[Mapping[str, str], ...] = (
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
)
_HOST_NETWORK_DEFAULT_TOLERATION = {
    "key": "node.kubernetes.io/network-unavailable",
    "operator": "Exists",
    "effect": "NoSchedule",
}


def nfd_pci_label(manufacturer: str) -> str:
    """Return NFD's ``feature.node.kubernetes.io/pci-<vendor>.present`` label for a manufacturer."""
    try:
        vendor_id = PCI_VENDOR_IDS[manufacturer]
    except KeyError:
        allowed = ", ".join(sorted(PCI_VENDOR_IDS))
        raise ValueError(f"unknown accelerator manufacturer {manufacturer!r}; expected one of {allowed}") from None
    return f"feature.node.kubernetes.io/pci-{vendor_id}.present"


@dataclass(frozen=True)
class PoolPlacement:
    """What a node of one node pool carries, as far as scheduling is concerned.

    ``labels`` should hold every label the node group sets (``vpc.amazonaws.com/efa.present`` on
    EFA pools) and, when known, well-known ones such as ``node.kubernetes.io/instance-type`` so
    that instance-type affinities can be evaluated. ``taints`` use node-group form
    ``{key, value?, effect}`` in either EKS or Kubernetes effect spelling. ``manufacturer`` names
    the accelerator vendor; NFD will label such nodes with the vendor's PCI label, so it counts as
    a node label.
    """

    name: str
    fabric: str
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: Sequence[Mapping[str, Any]] = ()
    manufacturer: str | None = None

    def __post_init__(self) -> None:
        if self.fabric not in FABRICS:
            raise ValueError(f"pool {self.name!r}: fabric {self.fabric!r} is not one of {', '.join(FABRICS)}")
        if self.manufacturer is not None:
            nfd_pci_label(self.manufacturer)
        for taint in self.taints:
            normalize_effect(taint.get("effect", ""))

    @classmethod
    def from_mapping(cls, pool: Mapping[str, Any]) -> "PoolPlacement":
        """Build from a ``{name, fabric, labels, taints, manufacturer}`` dict (component args)."""
        if not pool.get("name"):
            raise ValueError(f"pool {dict(pool)!r} has no name")
        return cls(
            name=pool["name"],
            fabric=pool.get("fabric", "none"),
            labels=dict(pool.get("labels") or {}),
            taints=tuple(pool.get("taints") or ()),
            manufacturer=pool.get("manufacturer"),
        )

    def node_labels(self) -> dict[str, str]:
        """The labels a node of this pool will carry, including NFD's PCI vendor label."""
        labels = dict(self.labels)
        if self.manufacturer is not None:
            labels.setdefault(nfd_pci_label(self.manufacturer), "true")
        return labels


@dataclass(frozen=True)
class CoverageGap:
    """A pool whose fabric resource no DaemonSet will advertise, and why."""

    pool: str
    fabric: str
    reason: str

    def finding(self) -> Finding:
        """The gap as a finding of :data:`DEVICE_PLUGIN_COVERAGE` about the pool (path relative to the pool)."""
        return Finding.of(DEVICE_PLUGIN_COVERAGE, "", f"no device plugin serves this {self.fabric} pool: {self.reason}",
                          pool=self.pool)


def _pod_spec(daemonset: Mapping[str, Any]) -> Mapping[str, Any]:
    return ((daemonset.get("spec") or {}).get("template") or {}).get("spec") or {}


def _display_name(daemonset: Mapping[str, Any]) -> str:
    metadata = daemonset.get("metadata") or {}
    name = metadata.get("name") or "<unnamed>"
    return f"{metadata['namespace']}/{name}" if metadata.get("namespace") else name


def _node_selector_mismatch(node_selector: Mapping[str, str], labels: Mapping[str, str]) -> str:
    for key in sorted(node_selector):
        wanted = node_selector[key]
        if key not in labels:
            return f"nodeSelector requires {key}={wanted} but the nodes have no label {key}"
        if labels[key] != wanted:
            return f"nodeSelector requires {key}={wanted} but the nodes carry {key}={labels[key]}"
    return ""


def node_selector_matches(node_selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    """True when every ``key: value`` of a ``nodeSelector`` holds on a node carrying ``labels``.

    The kube-scheduler's rule (exact key and value); used for DaemonSets here and for the nodes a
    Mooncake member group selects (:mod:`gpu_fabric.plan.efa_domains`).
    """
    return not _node_selector_mismatch(node_selector, labels)


def _as_int(text: str) -> int | None:
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def _expression_mismatch(expression: Mapping[str, Any], labels: Mapping[str, str]) -> str:
    """Return why one ``matchExpressions`` entry fails on ``labels`` ('' when it matches)."""
    if not isinstance(expression, Mapping):
        return f"a matchExpressions entry must be a mapping, not {type(expression).__name__}"
    key = expression.get("key", "")
    operator = expression.get("operator", "")
    raw_values = expression.get("values") or []
    if not isinstance(key, str) or not isinstance(operator, str) or not isinstance(raw_values, list) \
            or not all(isinstance(value, str) for value in raw_values):
        # The API server refuses this shape (key and operator are strings, values a list of strings).
        return f"malformed matchExpressions entry {expression!r:.80} (key and operator strings, values a list of strings)"
    values = list(raw_values)
    present = key in labels
    value = labels.get(key)
    if operator == "In":
        if present and value in values:
            return ""
        if present:
            return f"{key} In {values} but the nodes carry {key}={value}"
        return f"{key} In {values} but the nodes have no label {key}"
    if operator == "NotIn":
        # An absent label satisfies NotIn, as in the scheduler.
        return f"{key} NotIn {values} but the nodes carry {key}={value}" if present and value in values else ""
    if operator == "Exists":
        return "" if present else f"{key} Exists but the nodes have no label {key}"
    if operator == "DoesNotExist":
        return f"{key} DoesNotExist but the nodes carry {key}={value}" if present else ""
    if operator in ("Gt", "Lt"):
        bound = _as_int(values[0]) if len(values) == 1 else None
        if bound is None:
            return f"{key} {operator} needs exactly one integer value, got {values}"
        actual = _as_int(value) if present and value is not None else None
        if actual is None:
            return f"{key} {operator} {bound} but the nodes have no integer label {key}"
        matches = actual > bound if operator == "Gt" else actual < bound
        return "" if matches else f"{key} {operator} {bound} but the nodes carry {key}={value}"
    return f"unknown node selector operator {operator!r} on {key}"


def _term_mismatch(term: Mapping[str, Any], labels: Mapping[str, str]) -> str:
    if not isinstance(term, Mapping):
        return f"a node selector term must be a mapping, not {type(term).__name__}"
    expressions = term.get("matchExpressions") or []
    if not isinstance(expressions, list):
        return f"matchExpressions must be a list, not {type(expressions).__name__}"
    if term.get("matchFields"):
        # matchFields can only name metadata.name, i.e. pin individual nodes; a pool's node
        # names are unknown before the nodes exist.
        return "matchFields pins named nodes, which a pool's future nodes cannot be known to match"
    if not expressions:
        return "an empty node selector term matches no node"
    for expression in expressions:
        reason = _expression_mismatch(expression, labels)
        if reason:
            return reason
    return ""


def _node_affinity_mismatch(pod_spec: Mapping[str, Any], labels: Mapping[str, str]) -> str:
    node_affinity = (pod_spec.get("affinity") or {}).get("nodeAffinity") or {}
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        return ""
    reasons = [_term_mismatch(term, labels) for term in required.get("nodeSelectorTerms") or []]
    if not reasons:
        return "required node affinity has no nodeSelectorTerms and matches no node"
    if any(reason == "" for reason in reasons):
        return ""
    return "required node affinity: " + " | ".join(reasons)


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """Kubernetes' ``Toleration.ToleratesTaint``, with EKS effect spelling accepted on both sides."""
    toleration_effect = toleration.get("effect") or ""
    # A policy's value unknown at preview is not a string: an effect we cannot read restricts nothing.
    if isinstance(toleration_effect, str) and toleration_effect and isinstance(taint.get("effect"), str) \
            and normalize_effect(toleration_effect) != normalize_effect(taint["effect"]):
        return False
    toleration_key = toleration.get("key") or ""
    # An empty key (only valid with Exists) matches every key.
    if toleration_key and toleration_key != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    return (toleration.get("value") or "") == (taint.get("value") or "")


def _describe_taint(taint: Mapping[str, Any]) -> str:
    value = taint.get("value")
    key = f"{taint.get('key')}={value}" if value else str(taint.get("key"))
    return f"{key}:{normalize_effect(taint.get('effect', ''))}"


def _untolerated_taint(pod_spec: Mapping[str, Any], taints: Iterable[Mapping[str, Any]], *, daemonset: bool = True) -> str:
    tolerations = [*(pod_spec.get("tolerations") or []), *(_DAEMONSET_DEFAULT_TOLERATIONS if daemonset else ())]
    if daemonset and pod_spec.get("hostNetwork"):
        tolerations.append(_HOST_NETWORK_DEFAULT_TOLERATION)
    for taint in taints:
        if normalize_effect(taint.get("effect", "")) not in _BLOCKING_EFFECTS:
            continue
        if not any(tolerates(toleration, taint) for toleration in tolerations):
            return f"taint {_describe_taint(taint)} is not tolerated"
    return ""


def daemonset_schedules_on(
    daemonset: Mapping[str, Any],
    labels: Mapping[str, str],
    taints: Sequence[Mapping[str, Any]] = (),
) -> tuple[bool, str]:
    """Would the DaemonSet's pods schedule on a node with these labels and taints?

    Evaluates ``nodeSelector``, required node affinity (terms ORed, expressions ANDed; operators
    In, NotIn, Exists, DoesNotExist, Gt, Lt) and NoSchedule/NoExecute taints against the pod
    template's tolerations plus those the DaemonSet controller adds. Returns ``(True, "")`` or
    ``(False, reason)``.
    """
    pod_spec = _pod_spec(daemonset)
    for reason in (
        _node_selector_mismatch(pod_spec.get("nodeSelector") or {}, labels),
        _node_affinity_mismatch(pod_spec, labels),
        _untolerated_taint(pod_spec, taints),
    ):
        if reason:
            return False, reason
    return True, ""


def pod_schedules_on(
    pod_spec: Mapping[str, Any],
    labels: Mapping[str, str],
    taints: Sequence[Mapping[str, Any]] = (),
) -> tuple[bool, str]:
    """Would a (non-DaemonSet) pod with this spec schedule on a node with these labels and taints?

    The same ``nodeSelector``, required node affinity and taint rules as
    :func:`daemonset_schedules_on`, without the tolerations only the DaemonSet controller adds;
    :mod:`gpu_fabric.kube.workloads` finds the pools a workload lands on with it.
    """
    refusal = pod_placement_refusal(pod_spec, labels, taints)
    return (False, refusal[1]) if refusal else (True, "")


def pod_placement_refusal(
    pod_spec: Mapping[str, Any],
    labels: Mapping[str, str],
    taints: Sequence[Mapping[str, Any]] = (),
) -> tuple[str, str] | None:
    """Why a (non-DaemonSet) pod does not schedule on such a node: ``(pod spec field, reason)``, or ``None``.

    The field (``nodeSelector``, ``affinity.nodeAffinity`` or ``tolerations``) is where a finding about it points,
    so a caller never reads it out of the reason's text.
    """
    for where, reason in (
        ("nodeSelector", _node_selector_mismatch(pod_spec.get("nodeSelector") or {}, labels)),
        ("affinity.nodeAffinity", _node_affinity_mismatch(pod_spec, labels)),
        ("tolerations", _untolerated_taint(pod_spec, taints, daemonset=False)),
    ):
        if reason:
            return where, reason
    return None


def _containers(daemonset: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list(_pod_spec(daemonset).get("containers") or [])


def advertised_resources(daemonset: Mapping[str, Any]) -> frozenset[str]:
    """The fabric resources a DaemonSet advertises.

    Read from the ``gpu-fabric.io/advertises`` annotation when present; otherwise recognised by
    image: the AWS EFA device plugin, or the GPUStack operator image run as ``device-manager``.
    """
    declared = str_at(mapping_at(mapping_at(daemonset, "metadata"), "annotations"), ADVERTISES_ANNOTATION)
    if declared:
        return frozenset(item.strip() for item in declared.split(",") if item.strip())
    advertised: set[str] = set()
    for container in _containers(daemonset):
        image = container.get("image") or ""
        words = [*(container.get("command") or []), *(container.get("args") or [])]
        if EFA_PLUGIN_IMAGE_MARKER in image:
            advertised.add(EFA_RESOURCE)
        if DEVICE_MANAGER_IMAGE_MARKER in image and DEVICE_MANAGER_ARG_MARKER in words:
            # The exclusive key cannot be switched off; shared/partitioned can (--no-shared ...).
            advertised.add(RDMA_RESOURCE)
            if "--no-shared" not in words:
                advertised.add(RDMA_SHARED_RESOURCE)
            if "--no-partitioned" not in words:
                advertised.add(RDMA_PARTITIONED_RESOURCE)
    return frozenset(advertised)


_RESOURCE_FOR_FABRIC = {"efa": EFA_RESOURCE, "rdma": RDMA_RESOURCE}
_PLUGIN_FOR_FABRIC = {"efa": "AWS EFA device plugin", "rdma": "GPUStack Device Manager"}


def _coverage_gap(pool: PoolPlacement, daemonsets: Sequence[Mapping[str, Any]]) -> CoverageGap | None:
    resource = _RESOURCE_FOR_FABRIC[pool.fabric]
    candidates = [ds for ds in daemonsets if resource in advertised_resources(ds)]
    if not candidates:
        plugin = _PLUGIN_FOR_FABRIC[pool.fabric]
        return CoverageGap(pool.name, pool.fabric, f"no DaemonSet advertises {resource} ({plugin})")
    labels = pool.node_labels()
    reasons = []
    for daemonset in candidates:
        schedules, reason = daemonset_schedules_on(daemonset, labels, pool.taints)
        if schedules:
            return None
        reasons.append(f"{_display_name(daemonset)}: {reason}")
    why = "; ".join(reasons)
    return CoverageGap(pool.name, pool.fabric, f"no DaemonSet advertising {resource} schedules on its nodes ({why})")


def uncovered_pools(
    pools: Sequence[PoolPlacement],
    daemonsets: Sequence[Mapping[str, Any]],
    *,
    external_rdma_plugin: bool = False,
    manufacturers_served: Collection[str] | None = None,
) -> list[CoverageGap]:
    """Return every pool whose fabric resource no given DaemonSet will advertise on its nodes.

    EFA pools need a DaemonSet advertising ``vpc.amazonaws.com/efa``; RDMA pools one advertising
    ``device.gpustack.ai/rdma``; ``none`` pools need nothing. With ``external_rdma_plugin`` the
    GPUStack operator chart deploys its own Device Managers, so RDMA pools count as covered
    provided their manufacturer is among ``manufacturers_served`` (the chart's
    ``global.manufacturers``; ``None`` means all of them).
    """
    gaps: list[CoverageGap] = []
    for pool in pools:
        if pool.fabric == "none":
            continue
        if pool.fabric == "rdma" and external_rdma_plugin:
            if manufacturers_served is not None and pool.manufacturer not in manufacturers_served:
                served = ", ".join(sorted(manufacturers_served)) or "none"
                gaps.append(
                    CoverageGap(
                        pool.name,
                        pool.fabric,
                        f"the operator chart's Device Managers serve {served}, "
                        f"not this pool's manufacturer {pool.manufacturer!r}",
                    )
                )
            continue
        gap = _coverage_gap(pool, daemonsets)
        if gap is not None:
            gaps.append(gap)
    return gaps


def efa_plugins_on_pools_without_efa(
    pools: Sequence[PoolPlacement],
    daemonsets: Sequence[Mapping[str, Any]],
) -> list[CoverageGap]:
    """Return every non-EFA pool an EFA-advertising DaemonSet would schedule on.

    The EFA plugin crash-loops on nodes without an EFA attached (eks-efa-anchors rule 22), which
    is why it should select on ``vpc.amazonaws.com/efa.present`` rather than instance types.
    """
    findings = []
    plugins = [ds for ds in daemonsets if EFA_RESOURCE in advertised_resources(ds)]
    for pool in pools:
        if pool.fabric == "efa":
            continue
        for daemonset in plugins:
            schedules, _ = daemonset_schedules_on(daemonset, pool.node_labels(), pool.taints)
            if schedules:
                findings.append(
                    CoverageGap(
                        pool.name,
                        pool.fabric,
                        f"{_display_name(daemonset)} advertises {EFA_RESOURCE} "
                        "but schedules on this pool, which has no EFA",
                    )
                )
    return findings
