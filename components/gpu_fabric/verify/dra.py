"""Is every GPU of a DRA claim allocated beside a NIC on its PCIe root? (pure)

A pod's ResourceClaim records what the scheduler allocated in ``status.allocation.devices.results[]``
(``request``, ``driver``, ``pool``, ``device``: k8s.io/api resource/v1 ``DeviceRequestAllocationResult``),
and the pods using it in ``status.reservedFor[]``. The drivers publish each device in a ResourceSlice
(``spec.driver``, ``spec.pool.name``, ``spec.nodeName``, ``spec.devices[].name`` and
``.attributes["resource.kubernetes.io/pcieRoot"].string``; NVIDIA's GPU driver and DRANET both publish
that standard attribute: research breadth-late-2026 §1.2, §1.5, §1.6). GPUDirect RDMA runs only when a
GPU and its NIC share a root -- dranet's AWS example measured 11.35 GB/s aligned against 6.04 GB/s
across roots, GDR off.

Per allocated claim holding GPUs, one :class:`Alignment` naming the pod(s), which
:mod:`gpu_fabric.verify.checks` reports as a check: ``pass`` when every GPU has a NIC of the claim on its root and every NIC a GPU (within each
``matchAttribute: resource.kubernetes.io/pcieRoot`` constraint's requests when the claim has such
constraints, else across the claim), ``fail`` naming the devices and roots of a split pair,
``inconclusive`` ("not checked") when a device's slice publishes no pcieRoot, no slice publishes
it, or its pool publishes it twice. An allocation of the wrong shape is a ``fail`` naming the field,
never a crash.

A claim holding GPUs and no NIC is ``unpaired`` (a ``fail``) when the GPUs' node publishes NICs: on a
fabric node such a pod moves its KV cache without GPUDirect RDMA. The real kube-scheduler makes such
claims itself: when the GPU DeviceClass sets ``extendedResourceName: nvidia.com/gpu`` (NVIDIA's chart
writes it on ``resource.k8s.io/v1``), a pod asking for ``nvidia.com/gpu`` is scheduled onto the DRA
node with an implicit claim ``<pod>-extended-resources-<hash>`` holding a GPU and nothing else (KEP-5004,
DRAExtendedResource, GA in 1.37; seen under kube-scheduler v1.37.2 in tests/e2e/test_scheduler_dra.py).

Roots are compared per node: the drivers name roots by PCI domain and bus (``pci0000:18``), names
that repeat on every node of a type, so a GPU on one node and NICs on another never pair. Only the
newest ``spec.pool.generation`` of each pool counts, as for the scheduler (k8s.io/dynamic-resource-allocation
``resourceslice/tracker``: slices of an older generation are ignored once a newer one exists). A claim
has at most 32 allocation results (k8s.io/api resource/v1 ``AllocationResultsMaxSize``); more is a
malformed allocation, judged without reading them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Mapping, Optional, Sequence

from gpu_fabric.config.shapes import as_list, as_mapping
from gpu_fabric.kube.dra_claims import GPU_DRIVERS, NIC_DRIVERS, PCIE_ROOT_ATTRIBUTE, read_claim

Verdict = Literal["aligned", "split", "unpaired", "not checked", "malformed"]
ALIGNED: Verdict = "aligned"
SPLIT: Verdict = "split"
UNPAIRED: Verdict = "unpaired"
NOT_CHECKED: Verdict = "not checked"
MALFORMED: Verdict = "malformed"

ALLOCATION_RESULTS_MAX = 32
"""k8s.io/api resource/v1 ``AllocationResultsMaxSize``: the API server refuses a claim status with more."""


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
    conflict: str = ""
    """Why the device's place is unknown although published (its pool publishes it twice, differently)."""

    @property
    def place(self) -> Optional[tuple[str, str]]:
        """``(node, root)``: what two devices must share to sit on one PCIe root; ``None`` when unknown."""
        if self.pcie_root is None or self.conflict:
            return None
        return (self.node, self.pcie_root)


DeviceKey = tuple[str, str, str]
"""``(driver, pool, device)``: a device as an allocation result names it."""


def _generation(spec: Mapping[str, Any]) -> int:
    generation = as_mapping(spec.get("pool")).get("generation")
    return generation if isinstance(generation, int) and not isinstance(generation, bool) else 0


def slice_devices(slices: Sequence[Any]) -> dict[DeviceKey, SlicedDevice]:
    """Every device the ResourceSlices of each pool's newest generation publish, by ``(driver, pool, device)``;
    entries of the wrong shape are left out (an allocated device no slice publishes is then "not checked"),
    a device published twice at different places is kept with its ``conflict``."""
    specs = [spec for item in slices
             if isinstance(driver := (spec := as_mapping(as_mapping(item).get("spec"))).get("driver"), str)
             and isinstance(as_mapping(spec.get("pool")).get("name"), str)]
    newest: dict[tuple[str, str], int] = {}
    for spec in specs:
        pool_key = (spec["driver"], spec["pool"]["name"])
        newest[pool_key] = max(newest.get(pool_key, 0), _generation(spec))
    devices: dict[DeviceKey, SlicedDevice] = {}
    for spec in specs:
        driver, pool = spec["driver"], spec["pool"]["name"]
        if _generation(spec) != newest[(driver, pool)]:
            continue
        node = spec.get("nodeName")
        for device in as_list(spec.get("devices")):
            name = as_mapping(device).get("name")
            if not isinstance(name, str):
                continue
            root = as_mapping(as_mapping(as_mapping(device).get("attributes")).get(PCIE_ROOT_ATTRIBUTE)).get("string")
            found = SlicedDevice(node if isinstance(node, str) else "", root if isinstance(root, str) and root else None)
            earlier = devices.get((driver, pool, name))
            if earlier is not None and (earlier.node, earlier.pcie_root) != (found.node, found.pcie_root):
                found = SlicedDevice(found.node, found.pcie_root,
                                     f"pool {pool} of {driver} publishes {name} more than once, at different places")
            devices[(driver, pool, name)] = earlier if earlier is not None and not found.conflict else found
    return devices


def nic_nodes(devices: Mapping[DeviceKey, SlicedDevice]) -> frozenset[str]:
    """Nodes on which a NIC driver publishes devices: fabric nodes, where a GPU is meant to be claimed with its NIC."""
    return frozenset(where.node for (driver, _, _), where in devices.items() if driver in NIC_DRIVERS and where.node)


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
    if len(results) > ALLOCATION_RESULTS_MAX:
        return None, f"status.allocation.devices.results (more than {ALLOCATION_RESULTS_MAX} entries)"
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
    if where.conflict:
        return f"{device.label}: {where.conflict}"
    return f"{device.label} on node {where.node or '?'}: its ResourceSlice publishes no {PCIE_ROOT_ATTRIBUTE}"


def _unknown_requests(claim: Mapping[str, Any], allocated: list[Allocated]) -> Optional[str]:
    """The first result whose request the claim's spec does not name (the API server refuses such a status)."""
    spec, _ = read_claim(claim)
    if not spec.requests:
        return None
    for index, device in enumerate(allocated):
        if spec.request(device.request) is None:
            return f"status.allocation.devices.results[{index}].request ({device.request!r} names no request of the spec)"
    return None


def _show(place: Optional[tuple[str, str]], with_node: bool = False) -> str:
    """A device's root, with its node when the claim's devices span several nodes."""
    if place is None:
        return NOT_CHECKED
    return f"{place[1]} of node {place[0] or '?'}" if with_node else place[1]


def claim_alignment(claim: Any, devices: Mapping[DeviceKey, SlicedDevice],
                    fabric_nodes: Optional[frozenset[str]] = None) -> Optional[Alignment]:
    """The pairing verdict on one claim, or ``None`` when it is not allocated, holds no GPU, or holds GPUs
    and no NIC on nodes that publish no NIC (``fabric_nodes``, default: from ``devices``)."""
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
    gpus = [device for device in fabric if device.kind == "GPU"]
    if not gpus:
        return None
    claim_text = f"ResourceClaim {namespace}/{name}"
    unknown_request = _unknown_requests(claim, allocated)
    if unknown_request:
        return Alignment(subject, check_name, MALFORMED, "malformed allocation",
                         f"{claim_text}: {unknown_request} is not of the resource.k8s.io/v1 shape")
    places = {device.key: (devices[device.key].place if device.key in devices else None) for device in fabric}
    several_nodes = len({place[0] for place in places.values() if place is not None}) > 1
    found = {f"{d.key[0]}/{d.key[1]}/{d.key[2]}": _show(places[d.key], several_nodes) for d in fabric}
    if len(gpus) == len(fabric):
        nodes = fabric_nodes if fabric_nodes is not None else nic_nodes(devices)
        on_fabric = sorted({where.node for gpu in gpus if (where := devices.get(gpu.key)) and where.node in nodes})
        if not on_fabric:
            return None
        return Alignment(subject, check_name, UNPAIRED, found, (
            f"{claim_text}: {', '.join(gpu.label for gpu in gpus)} claimed without a NIC on node "
            f"{', '.join(on_fabric)}, whose NICs are published for DRA -- no GPUDirect RDMA for this pod; claim the "
            "GPU through the stack's ResourceClaimTemplates (a pod asking for nvidia.com/gpu gets such a claim when the "
            "GPU DeviceClass sets extendedResourceName)"))
    split: list[str] = []
    unknown: list[str] = []
    for group in _groups(claim, fabric):
        for device in group:
            place = places[device.key]
            if place is None:
                unknown.append(_describe(device, devices.get(device.key)))
                continue
            partners = [other for other in group if other.kind != device.kind]
            if not partners:
                continue
            partner_places = {places[other.key] for other in partners}
            if place not in partner_places and None not in partner_places:
                other = "NIC" if device.kind == "GPU" else "GPU"
                shown = ", ".join(sorted(f"{o.key[2]} on {_show(places[o.key], several_nodes)}" for o in partners))
                split.append(f"{device.kind} {device.label} on {_show(place, several_nodes)} has no {other} of the "
                             f"claim on its root ({shown})")
    if split:
        return Alignment(subject, check_name, SPLIT, found,
                         f"{claim_text}: " + "; ".join(split) + " -- GPUDirect RDMA is off across PCIe roots")
    if unknown:
        return Alignment(subject, check_name, NOT_CHECKED, NOT_CHECKED,
                         f"{claim_text}: " + "; ".join(sorted(set(unknown))))
    return Alignment(subject, check_name, ALIGNED, found, claim_text)


def alignments(claims: Sequence[Any], slices: Sequence[Any]) -> list[Alignment]:
    """One verdict per allocated claim holding GPUs (with NICs, or on a node publishing NICs), in claim order
    (namespace, name)."""
    devices = slice_devices(slices)
    fabric_nodes = nic_nodes(devices)
    ordered = sorted(claims, key=lambda claim: _name(claim) if isinstance(claim, Mapping) else ("", ""))
    return [verdict for claim in ordered
            if (verdict := claim_alignment(claim, devices, fabric_nodes)) is not None]
