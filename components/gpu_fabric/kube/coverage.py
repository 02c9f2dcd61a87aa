"""Does a device-plugin DaemonSet schedule on a pool's nodes?

A fabric is only usable when the DaemonSet that advertises its extended resource actually runs on
the nodes carrying the hardware. A plugin that never schedules shows ``DESIRED=0`` and nothing
fails loudly: NCCL falls back to sockets (eks-efa-anchors rule 21). This module answers the
question from data alone, so the components (before they register anything), the policy pack
(from resource inputs) and ``gpu-fabric lint`` (from YAML) share one implementation.

Everything here reads Kubernetes manifests as plain dicts with camelCase keys. The scheduling
rules are the kube-scheduler's (:mod:`gpu_fabric.kube.scheduling`): ``nodeSelector``, required node
affinity, and taints versus tolerations, plus the tolerations the DaemonSet controller adds to every
DaemonSet pod.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Collection, Mapping, Sequence

from gpu_fabric.config import constants
from gpu_fabric.config.shapes import mapping_at, str_at
from gpu_fabric.config.taints import normalize_effect
from gpu_fabric.findings import Finding, Rule
from gpu_fabric.kube.scheduling import node_affinity_mismatch, node_selector_mismatch, untolerated_taint

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
        node_selector_mismatch(pod_spec.get("nodeSelector") or {}, labels),
        node_affinity_mismatch(pod_spec, labels),
        untolerated_taint(pod_spec, taints),
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
        ("nodeSelector", node_selector_mismatch(pod_spec.get("nodeSelector") or {}, labels)),
        ("affinity.nodeAffinity", node_affinity_mismatch(pod_spec, labels)),
        ("tolerations", untolerated_taint(pod_spec, taints, daemonset=False)),
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
