"""Dynamic Resource Allocation objects read through their shape (pure): claims, templates, pods' claims.

``resource.k8s.io/v1`` (GA in Kubernetes 1.34, KEP-4381) lets a pod ask for devices through a
ResourceClaim -- written by hand, or stamped per pod from a ResourceClaimTemplate -- instead of an
extended resource. The fields read here are the API's own (k8s.io/api resource/v1 types.go):

* ``ResourceClaimSpec.devices.requests[]``: ``name`` and exactly one of ``exactly``
  (``deviceClassName``, ``allocationMode`` ``ExactCount`` (default) | ``All``, ``count`` (default 1),
  ``selectors[].cel.expression``) or ``firstAvailable[]`` (sub-requests with the same fields);
* ``ResourceClaimSpec.devices.constraints[]``: ``requests`` (empty: every request of the claim) and
  ``matchAttribute`` (every device of those requests has the same value of the attribute);
* a ResourceClaimTemplate keeps its claim spec at ``spec.spec``, a ResourceClaim at ``spec``;
* a pod names its claims in ``spec.resourceClaims[]`` (``name``, then ``resourceClaimTemplateName`` or
  ``resourceClaimName``) and its containers use them in ``resources.claims[].name``.

A field of the wrong type, and every value the API server's validation refuses
(:mod:`gpu_fabric.kube.dra_claim_validation`), is a finding of :data:`DRA_CLAIM_SHAPE` naming the field, never a
``TypeError``; ``resource.k8s.io/v1beta1`` requests keep ``exactly``'s fields on the request and are read so; a value unknown at preview
(:data:`gpu_fabric.config.shapes.UNKNOWN`) reads as absent, so the rules that need it do not decide.

The device classes and drivers gpu-fabric knows (research: breadth-late-2026 §1.2-§1.5):

* DRANET (kubernetes-sigs/dranet), driver ``dra.net``: AWS's chart ``aws-dranet`` creates the
  DeviceClass ``efa.networking.k8s.aws`` (CEL ``device.driver == "dra.net" && ...pciDevice == 'Elastic
  Fabric Adapter (EFA)'``), dranet's own examples use ``dranet.net``; a custom class whose CEL selects
  ``device.driver == "dra.net"`` is DRANET too (:func:`device_class_driver`).
* AWS's networking-device DRA plugin, driver ``dra.networking.k8s.aws``, class ``roce.networking.k8s.aws``.
* NVIDIA's GPU DRA driver (kubernetes-sigs/dra-driver-nvidia-gpu), driver and class ``gpu.nvidia.com``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Optional

from gpu_fabric.config.shapes import is_unknown
from gpu_fabric.kube import dra_claim_validation
from gpu_fabric.findings import FieldPath, Finding, Key, ObjectRef, Refusal, Rule

POLICY = "dra-device-claims"
"""The policy of the pack that reports every DRA rule (:mod:`gpu_fabric.policies.dra`)."""

DRA_CLAIM_SHAPE = Rule(
    "dra-claim-shape", "a ResourceClaim(Template)'s devices and a pod's resourceClaims have the API's shape",
    "kubernetes/api: resource/v1/types.go (ResourceClaimSpec, DeviceRequest, DeviceConstraint); core/v1 PodResourceClaim",
    policy=POLICY, refusal=Refusal.INPUT)

RESOURCE_GROUP = "resource.k8s.io"
RESOURCE_API_VERSION = f"{RESOURCE_GROUP}/v1"
"""Dynamic Resource Allocation's API, GA since Kubernetes 1.34 (KEP-4381)."""
CLAIM_TEMPLATE_KIND = "ResourceClaimTemplate"
CLAIM_KIND = "ResourceClaim"
DEVICE_CLASS_KIND = "DeviceClass"

DRANET_DRIVER = "dra.net"
AWS_NETWORKING_DRIVER = "dra.networking.k8s.aws"
NVIDIA_GPU_DRIVER = "gpu.nvidia.com"
NIC_DRIVERS = frozenset({DRANET_DRIVER, AWS_NETWORKING_DRIVER})
GPU_DRIVERS = frozenset({NVIDIA_GPU_DRIVER})

EFA_DEVICE_CLASS = "efa.networking.k8s.aws"
"""AWS's EFA DeviceClass over DRANET (driver ``dra.net``; created by the ``eks/aws-dranet`` chart)."""
GPU_DEVICE_CLASS = "gpu.nvidia.com"
"""NVIDIA's DRA driver's GPU DeviceClass (kubernetes-sigs/dra-driver-nvidia-gpu, created by its chart)."""
DRANET_DEVICE_CLASSES = frozenset({EFA_DEVICE_CLASS, "dranet.net"})
NIC_DEVICE_CLASSES = DRANET_DEVICE_CLASSES | {"roce.networking.k8s.aws"}
NVIDIA_GPU_DEVICE_CLASSES = frozenset({GPU_DEVICE_CLASS})

PCIE_ROOT_ATTRIBUTE = "resource.kubernetes.io/pcieRoot"
# KEP-6072's standard name and DRANET's own (pkg/apis/attributes.go); NVIDIA's GPU driver publishes
# neither (its ``numa`` is on VFIO devices only: dra-driver-nvidia-gpu reference/resourceslice-attributes.md).
NUMA_ATTRIBUTES = frozenset({"resource.kubernetes.io/numaNode", "dra.net/numaNode"})

EXACT_COUNT = "ExactCount"
ALL = "All"


@dataclass(frozen=True)
class DeviceAsk:
    """One way of asking for devices: a request's ``exactly``, or one ``firstAvailable`` alternative."""

    name: str
    """The request's name (``gpu-0``), or ``request/subrequest`` for an alternative."""
    device_class: Optional[str]
    allocation_mode: str
    """``ExactCount`` (the default) or ``All``; an unknown spelling is kept as written."""
    count: Optional[int]
    """Devices asked for under ``ExactCount`` (default 1); ``None`` under ``All`` or when unknown."""
    path: FieldPath


@dataclass(frozen=True)
class DeviceRequest:
    """``devices.requests[i]``: its ``exactly`` ask, or its ``firstAvailable`` alternatives."""

    name: str
    path: FieldPath
    exactly: Optional[DeviceAsk] = None
    first_available: tuple[DeviceAsk, ...] = ()

    @property
    def asks(self) -> tuple[DeviceAsk, ...]:
        """Every way this request may be served."""
        return ((self.exactly,) if self.exactly else ()) + self.first_available

    @property
    def device_classes(self) -> frozenset[str]:
        """Every DeviceClass the request may be served from."""
        return frozenset(ask.device_class for ask in self.asks if ask.device_class)


@dataclass(frozen=True)
class DeviceConstraint:
    """``devices.constraints[i]``: ``requests`` (empty: all of the claim's) and ``matchAttribute``."""

    requests: tuple[str, ...]
    match_attribute: Optional[str]
    path: FieldPath
    requests_known: bool = True
    """False when ``requests`` (or a name in it) is a value unknown at preview: which requests the constraint
    binds is then not known, and no rule decides on it (an empty list would wrongly read as "all of them")."""


@dataclass(frozen=True)
class ClaimSpec:
    """A ``ResourceClaimSpec`` as far as the rules read it; :attr:`path` is where it sits in its object."""

    path: FieldPath
    requests: tuple[DeviceRequest, ...] = ()
    constraints: tuple[DeviceConstraint, ...] = ()
    subject: Optional[ObjectRef] = None

    def request(self, name: str) -> Optional[DeviceRequest]:
        """The request called ``name`` (a constraint names ``request`` or ``request/subrequest``)."""
        base = name.split("/", 1)[0]
        return next((request for request in self.requests if request.name == base), None)

    def constrained(self, constraint: DeviceConstraint) -> list[DeviceRequest]:
        """The requests ``constraint`` applies to (all of them when it names none), in claim order."""
        if not constraint.requests:
            return list(self.requests)
        names = {name.split("/", 1)[0] for name in constraint.requests}
        return [request for request in self.requests if request.name in names]

    @property
    def decided_constraints(self) -> tuple[DeviceConstraint, ...]:
        """The constraints whose requests are known (see :attr:`DeviceConstraint.requests_known`)."""
        return tuple(constraint for constraint in self.constraints if constraint.requests_known)

    @property
    def device_classes(self) -> frozenset[str]:
        """Every DeviceClass any request may be served from."""
        return frozenset(name for request in self.requests for name in request.device_classes)


@dataclass(frozen=True)
class PodClaim:
    """``spec.resourceClaims[i]`` of a pod template."""

    name: str
    template: Optional[str]
    claim: Optional[str]
    path: FieldPath


@dataclass(frozen=True)
class PodView:
    """What the DRA rules read of one pod template: its claims, ``hostNetwork`` and requested resources."""

    subject: Optional[ObjectRef]
    path: FieldPath
    """The pod spec's path inside its object (``spec.template.spec``)."""
    namespace: str
    host_network: bool = False
    claims: tuple[PodClaim, ...] = ()
    resources: tuple[tuple[FieldPath, str], ...] = ()
    """``(path of the requests/limits entry, resource name)`` of every container and init container."""

    @property
    def template_names(self) -> frozenset[str]:
        return frozenset(claim.template for claim in self.claims if claim.template)


# -- reading -----------------------------------------------------------------------------------------


def _kind_of(value: Any) -> str:
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return "a number"
    return {list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), f"a {type(value).__name__}")


class _Reader:
    """Reads fields of one object, collecting a shape finding for each value of the wrong type."""

    def __init__(self, subject: Optional[ObjectRef]) -> None:
        self.subject = subject
        self.findings: list[Finding] = []

    def wrong(self, path: FieldPath, value: Any, expected: str) -> None:
        self.findings.append(Finding.of(DRA_CLAIM_SHAPE, path, f"must be {expected}, not {_kind_of(value)}",
                                        subject=self.subject))

    def invalid(self, path: FieldPath, message: str) -> None:
        """A value the API server's validation refuses (:mod:`gpu_fabric.kube.dra_claim_validation`)."""
        self.findings.append(Finding.of(DRA_CLAIM_SHAPE, path, message, subject=self.subject))

    def mapping(self, value: Any, path: FieldPath) -> Mapping[str, Any]:
        if value is None or is_unknown(value):
            return {}
        if not isinstance(value, Mapping):
            self.wrong(path, value, "a mapping")
            return {}
        return value

    def items(self, value: Any, path: FieldPath) -> list[Any]:
        if value is None or is_unknown(value):
            return []
        if not isinstance(value, list):
            self.wrong(path, value, "a list")
            return []
        return value

    def string(self, value: Any, path: FieldPath) -> Optional[str]:
        if value is None or is_unknown(value):
            return None
        if not isinstance(value, str):
            self.wrong(path, value, "a string")
            return None
        return value

    def whole(self, value: Any, path: FieldPath) -> Optional[int]:
        if value is None or is_unknown(value):
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            self.wrong(path, value, "a whole number")
            return None
        return value

    def boolean(self, value: Any, path: FieldPath) -> bool:
        if value is None or is_unknown(value):
            return False
        if not isinstance(value, bool):
            self.wrong(path, value, "true or false")
            return False
        return value


def _ask(reader: _Reader, node: Mapping[str, Any], name: str, path: FieldPath) -> DeviceAsk:
    device_class = reader.string(node.get("deviceClassName"), path / "deviceClassName")
    mode = reader.string(node.get("allocationMode"), path / "allocationMode") or EXACT_COUNT
    count = reader.whole(node.get("count"), path / "count")
    if mode == EXACT_COUNT and (count == 0 or (count is None and node.get("count") is None)):
        count = 1  # resource/v1 defaults.go: an absent or zero count under ExactCount is 1 (0 is omitted on the wire)
    for index, selector in enumerate(reader.items(node.get("selectors"), path / "selectors")):
        where = path / "selectors" / index
        cel = reader.mapping(reader.mapping(selector, where).get("cel"), where / "cel")
        reader.string(cel.get("expression"), where / "cel" / "expression")
    return DeviceAsk(name, device_class, mode, count if mode == EXACT_COUNT else None, path)


def _claim_spec(reader: _Reader, spec: Any, path: FieldPath, beta: bool = False) -> ClaimSpec:
    """``beta``: ``resource.k8s.io/v1beta1``, whose requests hold ``exactly``'s fields themselves."""
    devices = reader.mapping(reader.mapping(spec, path).get("devices"), path / "devices")
    # The API server's floor first: every shape it refuses is a finding (issue 40).
    dra_claim_validation.device_claim(reader.invalid, devices, path / "devices", beta)
    requests = []
    for index, item in enumerate(reader.items(devices.get("requests"), path / "devices" / "requests")):
        where = path / "devices" / "requests" / index
        node = reader.mapping(item, where)
        name = reader.string(node.get("name"), where / "name") or f"requests[{index}]"
        exactly = None
        if beta and not node.get("firstAvailable") and any(
                node.get(key) is not None for key in dra_claim_validation.BETA_EXACT_FIELDS):
            exactly = _ask(reader, node, name, where)
        elif node.get("exactly") is not None:
            exactly = _ask(reader, reader.mapping(node.get("exactly"), where / "exactly"), name, where / "exactly")
        alternatives = []
        for position, sub in enumerate(reader.items(node.get("firstAvailable"), where / "firstAvailable")):
            at = where / "firstAvailable" / position
            sub_node = reader.mapping(sub, at)
            sub_name = reader.string(sub_node.get("name"), at / "name") or str(position)
            alternatives.append(_ask(reader, sub_node, f"{name}/{sub_name}", at))
        requests.append(DeviceRequest(name, where, exactly, tuple(alternatives)))
    constraints = []
    for index, item in enumerate(reader.items(devices.get("constraints"), path / "devices" / "constraints")):
        where = path / "devices" / "constraints" / index
        node = reader.mapping(item, where)
        names = [reader.string(name, where / "requests" / position)
                 for position, name in enumerate(reader.items(node.get("requests"), where / "requests"))]
        attribute = reader.string(node.get("matchAttribute"), where / "matchAttribute")
        raw = node.get("requests")
        known = not is_unknown(raw) and not any(is_unknown(name) for name in (raw if isinstance(raw, list) else ()))
        constraints.append(DeviceConstraint(tuple(name for name in names if name), attribute, where, known))
    return ClaimSpec(path, tuple(requests), tuple(constraints), reader.subject)


def object_ref(manifest: Mapping[str, Any]) -> ObjectRef:
    """``Kind namespace/name`` of a manifest read leniently (a namespaced object without one is in ``default``)."""
    metadata = manifest.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    kind = manifest.get("kind")
    name = metadata.get("name")
    namespace = metadata.get("namespace")
    return ObjectRef(kind if isinstance(kind, str) else "?", name if isinstance(name, str) else "?",
                     (namespace if isinstance(namespace, str) and namespace else "default")
                     if kind != DEVICE_CLASS_KIND else None)


def is_resource_object(manifest: Mapping[str, Any], kind: str) -> bool:
    """A ``resource.k8s.io`` object of ``kind`` (any version: v1 and the betas share the fields read here)."""
    api_version = manifest.get("apiVersion")
    return (manifest.get("kind") == kind and isinstance(api_version, str)
            and api_version.rpartition("/")[0] == RESOURCE_GROUP)


def _is_beta1(manifest: Mapping[str, Any]) -> bool:
    return manifest.get("apiVersion") == f"{RESOURCE_GROUP}/v1beta1"


def read_claim_template(manifest: Mapping[str, Any]) -> tuple[ClaimSpec, list[Finding]]:
    """The claim spec of a ResourceClaimTemplate (``spec.spec``) and the shape findings of its fields."""
    reader = _Reader(object_ref(manifest))
    outer = reader.mapping(manifest.get("spec"), FieldPath.of("spec"))
    spec = _claim_spec(reader, outer.get("spec"), FieldPath.of("spec", "spec"), _is_beta1(manifest))
    return spec, reader.findings


def read_claim(manifest: Mapping[str, Any]) -> tuple[ClaimSpec, list[Finding]]:
    """The claim spec of a ResourceClaim (``spec``) and the shape findings of its fields."""
    reader = _Reader(object_ref(manifest))
    spec = _claim_spec(reader, manifest.get("spec"), FieldPath.of("spec"), _is_beta1(manifest))
    return spec, reader.findings


def read_pod(pod_spec: Any, path: FieldPath, subject: Optional[ObjectRef],
             namespace: str = "default") -> tuple[PodView, list[Finding]]:
    """What the DRA rules read of a pod spec at ``path`` (its claims, ``hostNetwork``, requested resources)."""
    reader = _Reader(subject)
    spec = reader.mapping(pod_spec, path)
    host_network = reader.boolean(spec.get("hostNetwork"), path / "hostNetwork")
    dra_claim_validation.pod_claims(reader.invalid, spec, path)
    claims = []
    for index, item in enumerate(reader.items(spec.get("resourceClaims"), path / "resourceClaims")):
        where = path / "resourceClaims" / index
        node = reader.mapping(item, where)
        name = reader.string(node.get("name"), where / "name") or f"resourceClaims[{index}]"
        template = reader.string(node.get("resourceClaimTemplateName"), where / "resourceClaimTemplateName")
        claim = reader.string(node.get("resourceClaimName"), where / "resourceClaimName")
        claims.append(PodClaim(name, template, claim, where))
    resources: list[tuple[FieldPath, str]] = []
    for key in ("initContainers", "containers"):
        for index, container in enumerate(reader.items(spec.get(key), path / key)):
            where = path / key / index
            limits = reader.mapping(reader.mapping(container, where).get("resources"), where / "resources")
            for section in ("requests", "limits"):
                at = where / "resources" / section
                for resource in reader.mapping(limits.get(section), at):
                    resources.append((at / Key(str(resource)), str(resource)))
    view = PodView(subject, path, namespace, host_network, tuple(claims), tuple(resources))
    return view, reader.findings


# A DeviceClass's CEL selector naming its driver: ``device.driver == "dra.net"`` (either quote, either side).
_DRIVER_EQUALS = re.compile(r"""device\.driver\s*==\s*["']([^"']+)["']|["']([^"']+)["']\s*==\s*device\.driver""")


def device_class_driver(manifest: Mapping[str, Any]) -> Optional[str]:
    """The driver a DeviceClass's CEL selectors pin (``device.driver == "dra.net"``), or ``None`` when they
    pin none or several. DeviceClass.spec.selectors[].cel.expression (resource/v1); the aws-dranet chart's
    ``efa.networking.k8s.aws`` is ``device.driver == "dra.net" && ...``."""
    spec = manifest.get("spec")
    selectors = spec.get("selectors") if isinstance(spec, Mapping) else None
    drivers: set[str] = set()
    for selector in selectors if isinstance(selectors, list) else []:
        cel = selector.get("cel") if isinstance(selector, Mapping) else None
        expression = cel.get("expression") if isinstance(cel, Mapping) else None
        if isinstance(expression, str):
            drivers.update(a or b for a, b in _DRIVER_EQUALS.findall(expression))
    return next(iter(drivers)) if len(drivers) == 1 else None


@dataclass(frozen=True)
class DeviceKinds:
    """Which DeviceClasses serve fabric NICs (and which of those DRANET), and which NVIDIA GPUs."""

    dranet: frozenset[str] = DRANET_DEVICE_CLASSES
    nics: frozenset[str] = NIC_DEVICE_CLASSES
    gpus: frozenset[str] = NVIDIA_GPU_DEVICE_CLASSES
    drivers: Mapping[str, str] = field(default_factory=dict)
    """DeviceClass -> the driver its selectors pin, for the classes read from manifests."""

    def with_classes(self, manifests: Iterable[Mapping[str, Any]]) -> "DeviceKinds":
        """These kinds plus every DeviceClass among ``manifests`` whose selectors pin a NIC or GPU driver."""
        dranet, nics, gpus, drivers = set(self.dranet), set(self.nics), set(self.gpus), dict(self.drivers)
        for manifest in manifests:
            if not is_resource_object(manifest, DEVICE_CLASS_KIND):
                continue
            name = object_ref(manifest).name
            driver = device_class_driver(manifest)
            if driver is None:
                continue
            drivers[name] = driver
            if driver == DRANET_DRIVER:
                dranet.add(name)
            if driver in NIC_DRIVERS:
                nics.add(name)
            if driver in GPU_DRIVERS:
                gpus.add(name)
        return DeviceKinds(frozenset(dranet), frozenset(nics), frozenset(gpus), drivers)
