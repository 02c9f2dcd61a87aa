"""Is every GPU of a DRA claim allocated beside a NIC on its PCIe root? (pure)

A pod's ResourceClaim records what the scheduler allocated in ``status.allocation.devices.results[]``
(``request``, ``driver``, ``pool``, ``device``: k8s.io/api resource/v1 ``DeviceRequestAllocationResult``),
and the pods using it in ``status.reservedFor[]``. The drivers publish each device in a ResourceSlice
(``spec.driver``, ``spec.pool.name``, ``spec.nodeName``, ``spec.devices[].name`` and
``.attributes["resource.kubernetes.io/pcieRoot"].string``; NVIDIA's GPU driver and DRANET both publish
that standard attribute: research breadth-late-2026 §1.2, §1.5, §1.6). GPUDirect RDMA runs only when a
GPU and its NIC share a root -- dranet's AWS example measured 11.35 GB/s aligned against 6.04 GB/s
across roots, GDR off.

Per allocated claim holding GPUs and NICs, one :class:`Alignment` naming the pod(s), which
:mod:`gpu_fabric.verify.checks` reports as a check: ``pass`` when every GPU has a NIC of the claim on its root and every NIC a GPU (within each
``matchAttribute: resource.kubernetes.io/pcieRoot`` constraint's requests when the claim has such
constraints, else across the claim), ``fail`` naming the devices and roots of a split pair,
``inconclusive`` ("not checked") when a device's slice publishes no pcieRoot or no slice publishes
it. An allocation of the wrong shape is a ``fail`` naming the field, never a crash.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Mapping, Optional, Sequence

from gpu_fabric.config.shapes import as_list, as_mapping
from gpu_fabric.kube.dra_claims import GPU_DRIVERS, NIC_DRIVERS, PCIE_ROOT_ATTRIBUTE, read_claim

Verdict = Literal["aligned", "split", "not checked", "malformed"]
ALIGNED: Verdict = "aligned"
SPLIT: Verdict = "split"
NOT_CHECKED: Verdict = "not checked"
MALFORMED: Verdict = "malformed"


@dataclass(frozen=True)
class Alignment:
    """The verdict on one claim: ``subject`` (``pod ns/name``), ``name`` (``claim X: ...``), what was found."""

    subject: str
    name: str
    verdict: Verdict
    found: Any
    """Device (``driver/pool/device``) -> its PCIe root (or "not checked"); the verdict's word otherwise."""
    detail: str

CHECK_NAME = "PCIe root of each GPU/NIC pair"
EXPECTED = "every GPU beside a NIC of the claim on its PCIe root"


@dataclass(frozen=True)
class SlicedDevice:
    """Where a published device sits: its node and its PCIe root (``None``: not published)."""

    node: str
    pcie_root: Optional[str]


DeviceKey = tuple[str, str, str]
"""``(driver, pool, device)``: a device as an allocation result names it."""


def slice_devices(slices: Sequence[Any]) -> dict[DeviceKey, SlicedDevice]:
    """Every device the ResourceSlices publish, by ``(driver, pool, device)``; entries of the wrong shape are
    left out (an allocated device no slice publishes is then "not checked")."""
    devices: dict[DeviceKey, SlicedDevice] = {}
    for item in slices:
        spec = as_mapping(as_mapping(item).get("spec"))
        driver, pool = spec.get("driver"), as_mapping(spec.get("pool")).get("name")
        node = spec.get("nodeName")
        if not isinstance(driver, str) or not isinstance(pool, str):
            continue
        for device in as_list(spec.get("devices")):
            name = as_mapping(device).get("name")
            if not isinstance(name, str):
                continue
            root = as_mapping(as_mapping(as_mapping(device).get("attributes")).get(PCIE_ROOT_ATTRIBUTE)).get("string")
            devices[(driver, pool, name)] = SlicedDevice(node if isinstance(node, str) else "",
                                                         root if isinstance(root, str) and root else None)
    return devices


@dataclass(frozen=True)
class Allocated:
    """One allocation result of a claim."""

    request: str
    key: DeviceKey

    @property
    def label(self) -> str:
        driver, pool, device = self.key
        return f"{device} ({driver}, pool {pool}, request {self.request})"

    @property
    def kind(self) -> Optional[str]:
        return "GPU" if self.key[0] in GPU_DRIVERS else "NIC" if self.key[0] in NIC_DRIVERS else None


def _name(claim: Mapping[str, Any]) -> tuple[str, str]:
    metadata = as_mapping(claim.get("metadata"))
    namespace, name = metadata.get("namespace"), metadata.get("name")
    return (namespace if isinstance(namespace, str) else "", name if isinstance(name, str) else "?")


def pods_of(claim: Mapping[str, Any]) -> list[str]:
    """The pods a claim is reserved for (``status.reservedFor[]`` of resource ``pods``), else the Pod owning it."""
    namespace, _ = _name(claim)
    pods = [str(entry["name"]) for entry in as_list(as_mapping(claim.get("status")).get("reservedFor"))
            if isinstance(entry, Mapping) and entry.get("resource") == "pods" and isinstance(entry.get("name"), str)]
    if not pods:
        pods = [str(owner["name"]) for owner in as_list(as_mapping(claim.get("metadata")).get("ownerReferences"))
                if isinstance(owner, Mapping) and owner.get("kind") == "Pod" and isinstance(owner.get("name"), str)]
    return [f"{namespace}/{pod}" if namespace else pod for pod in sorted(set(pods))]


def _subject(claim: Mapping[str, Any]) -> str:
    pods = pods_of(claim)
    if pods:
        return f"pod {', '.join(pods)}"
    namespace, name = _name(claim)
    return f"ResourceClaim {namespace + '/' if namespace else ''}{name} (no pod)"


def _results(claim: Mapping[str, Any]) -> tuple[Optional[list[Allocated]], str]:
    """The allocation results, or ``None`` and the field of the wrong shape; ``([], "")`` when not allocated."""
    status = claim.get("status")
    if status is None:
        return [], ""
    if not isinstance(status, Mapping):
        return None, "status"
    allocation = status.get("allocation")
    if allocation is None:
        return [], ""
    if not isinstance(allocation, Mapping):
        return None, "status.allocation"
    devices = allocation.get("devices")
    if not isinstance(devices, Mapping):
        return None, "status.allocation.devices"
    results = devices.get("results")
    if not isinstance(results, list):
        return None, "status.allocation.devices.results"
    allocated = []
    for index, result in enumerate(results):
        where = f"status.allocation.devices.results[{index}]"
        if not isinstance(result, Mapping):
            return None, where
        fields = []
        for key in ("request", "driver", "pool", "device"):
            value = result.get(key)
            if not isinstance(value, str) or not value:
                return None, f"{where}.{key}"
            fields.append(value)
        allocated.append(Allocated(fields[0], (fields[1], fields[2], fields[3])))
    return allocated, ""


def _groups(claim: Mapping[str, Any], allocated: list[Allocated]) -> list[list[Allocated]]:
    """The devices that must pair up: per pcieRoot constraint of the claim's spec, else the whole claim."""
    spec, _ = read_claim(claim)
    constraints = [c for c in spec.decided_constraints if c.match_attribute == PCIE_ROOT_ATTRIBUTE]
    if not constraints:
        return [allocated]
    groups = []
    for constraint in constraints:
        names = {request.name for request in spec.constrained(constraint)}
        groups.append([device for device in allocated if device.request.split("/", 1)[0] in names])
    return groups


def _describe(device: Allocated, where: Optional[SlicedDevice]) -> str:
    if where is None:
        return f"{device.label}: no ResourceSlice publishes it"
    return f"{device.label} on node {where.node or '?'}: its ResourceSlice publishes no {PCIE_ROOT_ATTRIBUTE}"


def claim_alignment(claim: Any, devices: Mapping[DeviceKey, SlicedDevice]) -> Optional[Alignment]:
    """The pairing verdict on one claim, or ``None`` when it is not allocated or holds no GPU and NIC together."""
    if not isinstance(claim, Mapping):
        return Alignment("ResourceClaim ?", CHECK_NAME, MALFORMED, "malformed", "the listed claim is not an object")
    namespace, name = _name(claim)
    subject = _subject(claim)
    check_name = f"claim {name}: {CHECK_NAME}"
    allocated, malformed = _results(claim)
    if allocated is None:
        return Alignment(subject, check_name, MALFORMED, "malformed allocation",
                         f"ResourceClaim {namespace}/{name}: {malformed} is not of the resource.k8s.io/v1 shape")
    fabric = [device for device in allocated if device.kind]
    if not any(d.kind == "GPU" for d in fabric) or not any(d.kind == "NIC" for d in fabric):
        return None
    roots = {device.key: (devices[device.key].pcie_root if device.key in devices else None) for device in fabric}
    found = {f"{d.key[0]}/{d.key[1]}/{d.key[2]}": roots[d.key] or NOT_CHECKED for d in fabric}
    split: list[str] = []
    unknown: list[str] = []
    for group in _groups(claim, fabric):
        for device in group:
            root = roots[device.key]
            if root is None:
                unknown.append(_describe(device, devices.get(device.key)))
                continue
            partners = [other for other in group if other.kind != device.kind]
            if not partners:
                continue
            partner_roots = {roots[other.key] for other in partners}
            if root not in partner_roots and None not in partner_roots:
                other = "NIC" if device.kind == "GPU" else "GPU"
                shown = ", ".join(sorted(f"{o.key[2]} on {roots[o.key]}" for o in partners))
                split.append(f"{device.kind} {device.label} on {root} has no {other} of the claim on its root ({shown})")
    claim_text = f"ResourceClaim {namespace}/{name}"
    if split:
        return Alignment(subject, check_name, SPLIT, found,
                         f"{claim_text}: " + "; ".join(split) + " -- GPUDirect RDMA is off across PCIe roots")
    if unknown:
        return Alignment(subject, check_name, NOT_CHECKED, NOT_CHECKED,
                         f"{claim_text}: " + "; ".join(sorted(set(unknown))))
    return Alignment(subject, check_name, ALIGNED, found, claim_text)


def alignments(claims: Sequence[Any], slices: Sequence[Any]) -> list[Alignment]:
    """One verdict per allocated claim holding GPUs and NICs, in claim order (namespace, name)."""
    devices = slice_devices(slices)
    ordered = sorted(claims, key=lambda claim: _name(claim) if isinstance(claim, Mapping) else ("", ""))
    return [verdict for claim in ordered if (verdict := claim_alignment(claim, devices)) is not None]
