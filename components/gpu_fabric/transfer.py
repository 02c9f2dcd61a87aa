"""The GPUStack operator's transfer-path admission, decided before anything is applied.

The operator's validating webhook refuses a ModelDeployment whose ``roles[].resources.interface``
request is not used by an RDMA or EFA transfer leg, and translates accepted requests into device
resource keys. This module makes the same decision over plain manifests, with the operator's own
messages, so that ``pulumi preview`` (policy pack), ``gpu-fabric lint`` and the components all
refuse the same things. It is the single source of truth for that rule: never copy it.

The decision, per role that requests interfaces (research ``gpustack-operator.md`` section 4):

1. Only a positive whole ``interface`` counts; zero or unset requests nothing.
2. Cache leg: ``kvCache.poolRef`` -> KVCachePoolBinding (same namespace) -> KVCachePool ->
   ``backends[0]`` -> KVCacheBackend; each member group's effective protocol is its own
   ``transport.protocol`` or the backend's. All groups must agree, TCP included.
3. Direct leg: counts only when the role has no ``command``, the deployment renders a KV-transfer
   leg (a router plus Prefill/Decode kinds), the engine is vLLM, and the InstanceType's
   manufacturer is known and not Ascend. Its protocol is ``kvTransfer.protocol`` or ``tcp``.
4. The fabric is whichever leg is ``rdma`` or ``efa``; two different fabrics, or none, are errors.
5. Keys: rdma x1 -> ``device.gpustack.ai/rdma.shared: 1``; rdma xN -> ``device.gpustack.ai/rdma: N``;
   efa xN -> ``vpc.amazonaws.com/efa: N``. Mooncake member groups get the same keys from
   ``fabricInterfaceCount`` (default 1) when their effective protocol is a fabric.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from gpu_fabric.findings import Finding
from gpu_fabric.operator_pin import API_GROUP
from gpu_fabric.operator_schema import validate_object
from gpu_fabric.quantity import QuantityError, parse_quantity

GPUSTACK_GROUP = API_GROUP

RDMA_EXCLUSIVE_KEY = "device.gpustack.ai/rdma"
RDMA_SHARED_KEY = "device.gpustack.ai/rdma.shared"
RDMA_PARTITIONED_KEY = "device.gpustack.ai/rdma.partitioned"
EFA_KEY = "vpc.amazonaws.com/efa"
FABRIC_KEYS = {"rdma": (RDMA_EXCLUSIVE_KEY, RDMA_SHARED_KEY, RDMA_PARTITIONED_KEY), "efa": (EFA_KEY,)}
FABRICS = ("rdma", "efa")

# The operator's messages, verbatim (field.Invalid / field.Forbidden on the interface path).
MSG_NOT_POSITIVE = "interface count must be positive"
MSG_NO_FABRIC_LEG = "no effective RDMA or EFA transfer leg uses the requested interfaces"
MSG_BINDING_UNRESOLVED = "cache binding must resolve before requesting interfaces"
MSG_POOL_UNRESOLVED = "cache pool must resolve before requesting interfaces"
MSG_BACKEND_UNRESOLVED = "cache backend must resolve before requesting interfaces"
# The operator's text for a fractional count was not found in public sources; this one is ours.
MSG_NOT_WHOLE = "interface count must be a whole number"


def msg_conflicting_groups(first: str, second: str) -> str:
    """The operator's message when cache member groups disagree on the protocol."""
    return f"cache member groups use conflicting protocols: {first}, {second}"


def msg_conflicting_legs(cache: str, direct: str) -> str:
    """The operator's message when the cache leg and the direct leg use different fabrics."""
    return f"cache and direct-transfer legs use {cache} and {direct}"


# API enum -> the lowercase protocol the operator renders (Auto and unset mean TCP).
_PROTOCOL_SPELLING = {
    "auto": "tcp", "tcp": "tcp", "rdma": "rdma", "efa": "efa",
    "cann": "ascend", "rocm": "hip", "musa": "musa", "maca": "maca",
}
MANUFACTURERS = ("amd", "ascend", "cambricon", "hygon", "iluvatar", "metax", "mthreads", "nvidia", "thead")
_KV_TRANSFER_KINDS = {"Prefill", "Decode"}


def effective_protocol(value: Any) -> str:
    """Map an API protocol enum (``RDMA``, ``Auto``, unset, older lowercase forms) to the rendered one."""
    if value is None or value == "":
        return "tcp"
    text = str(value).strip().lower()
    return _PROTOCOL_SPELLING.get(text, text)


def fabric_resources(protocol: str, count: int) -> dict[str, int]:
    """Return the device resource limits a fabric ``protocol`` renders for ``count`` interfaces."""
    if count <= 0 or protocol not in FABRICS:
        return {}
    if protocol == "efa":
        return {EFA_KEY: count}
    # Shared tokens can repeat one endpoint, so more than one endpoint needs the exclusive key.
    return {RDMA_SHARED_KEY: 1} if count == 1 else {RDMA_EXCLUSIVE_KEY: count}


def manufacturer_of(instance_type: str) -> str | None:
    """Return the accelerator manufacturer named by a GPUStack InstanceType, or ``None``.

    ``gpustack--nvidia-a10g-linux-amd64`` -> ``nvidia``; with CPU-aware naming
    (``gpustack--<cpu>--<accelerator>-<os>-<arch>``) the accelerator part is the last one.
    CPU pools (``gpustack--generic-...``) have no manufacturer.
    """
    if not instance_type.startswith("gpustack--"):
        return None
    accelerator_part = instance_type[len("gpustack--"):].split("--")[-1]
    candidate = accelerator_part.split("-", 1)[0]
    return candidate if candidate in MANUFACTURERS else None


@dataclass(frozen=True)
class RoleGrant:
    """The device resources one ModelDeployment role receives on its engine container."""

    namespace: str
    deployment: str
    role: str
    role_index: int
    instance_type: str
    interfaces: int
    fabric: str
    resources: Mapping[str, int]
    cache_protocol: str | None
    direct_protocol: str | None
    cache_backend: str | None = None
    """Name of the KVCacheBackend the role's ``kvCache`` resolves to (``None`` without a cache leg)."""


@dataclass(frozen=True)
class MemberGrant:
    """What one Mooncake member group of a KVCacheBackend requests on its nodes."""

    backend: str
    group_index: int
    protocol: str
    fabric_interface_count: int
    node_selector: Mapping[str, str]
    resources: Mapping[str, int]

    @property
    def uses_fabric(self) -> bool:
        """Host-fabric groups get hostNetwork, IPC_LOCK/SYS_RESOURCE and one device limit."""
        return self.protocol in FABRICS


@dataclass(frozen=True)
class TransferReport:
    """Everything the analysis decided about a set of manifests."""

    findings: tuple[Finding, ...] = ()
    role_grants: tuple[RoleGrant, ...] = ()
    member_grants: tuple[MemberGrant, ...] = ()

    @property
    def errors(self) -> tuple[Finding, ...]:
        """Findings the operator would refuse at admission."""
        return tuple(f for f in self.findings if f.severity == "error")

    @property
    def warnings(self) -> tuple[Finding, ...]:
        """Findings the operator would admit with a warning."""
        return tuple(f for f in self.findings if f.severity == "warning")

    @property
    def ok(self) -> bool:
        """True when nothing would be refused."""
        return not self.errors


def is_gpustack_object(obj: Mapping[str, Any], kind: str | None = None) -> bool:
    """True for a ``worker.gpustack.ai`` manifest (optionally of the given kind)."""
    api_version = str(obj.get("apiVersion", ""))
    return api_version.split("/", 1)[0] == GPUSTACK_GROUP and (kind is None or obj.get("kind") == kind)


@dataclass
class _Index:
    deployments: list[Mapping[str, Any]] = field(default_factory=list)
    bindings: dict[tuple[str, str], Mapping[str, Any]] = field(default_factory=dict)
    pools: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    backends: dict[str, Mapping[str, Any]] = field(default_factory=dict)


def _index(objects: Iterable[Mapping[str, Any]], default_namespace: str, findings: list[Finding]) -> _Index:
    index = _Index()
    for obj in objects:
        if not isinstance(obj, Mapping) or not is_gpustack_object(obj):
            continue
        # The API server checks the structural schema before any webhook runs: an object it refuses
        # is never stored, so nothing can resolve to it and its admission rules never run.
        schema_findings = validate_object(obj)
        findings.extend(schema_findings)
        if any(f.severity == "error" for f in schema_findings):
            continue
        meta = obj.get("metadata") or {}
        name = str(meta.get("name", ""))
        kind = obj.get("kind")
        if kind == "ModelDeployment":
            index.deployments.append(obj)
        elif kind == "KVCachePoolBinding":
            index.bindings[(str(meta.get("namespace") or default_namespace), name)] = obj
        elif kind == "KVCachePool":
            index.pools[name] = obj
        elif kind == "KVCacheBackend":
            index.backends[name] = obj
    return index


def _spec(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    spec = (obj or {}).get("spec")
    return spec if isinstance(spec, Mapping) else {}


def member_group_protocols(backend: Mapping[str, Any]) -> list[str]:
    """Effective protocol of each member group (an external backend counts as one group)."""
    spec = _spec(backend)
    backend_protocol = (spec.get("transport") or {}).get("protocol")
    managed = (spec.get("connection") or {}).get("managed") or {}
    members = managed.get("members") or []
    if not members:
        return [effective_protocol(backend_protocol)]
    return [
        effective_protocol(((member or {}).get("transport") or {}).get("protocol") or backend_protocol)
        for member in members
    ]


def _first_conflict(protocols: list[str]) -> tuple[str, str] | None:
    for protocol in protocols[1:]:
        if protocol != protocols[0]:
            return protocols[0], protocol
    return None


def _cache_backend(
    deployment: Mapping[str, Any], namespace: str, index: _Index
) -> tuple[Mapping[str, Any] | None, str | None]:
    """Resolve kvCache -> binding -> pool -> backends[0]; return (backend, unresolved message)."""
    pool_ref = ((_spec(deployment).get("kvCache") or {}).get("poolRef") or {}).get("name")
    if not pool_ref:
        return None, None
    binding = index.bindings.get((namespace, str(pool_ref)))
    if binding is None:
        return None, MSG_BINDING_UNRESOLVED
    pool = index.pools.get(str((_spec(binding).get("poolRef") or {}).get("name", "")))
    if pool is None:
        return None, MSG_POOL_UNRESOLVED
    backends = _spec(pool).get("backends") or []
    backend = index.backends.get(str(backends[0])) if backends else None
    if backend is None:
        return None, MSG_BACKEND_UNRESOLVED
    return backend, None


def _renders_kv_transfer_leg(spec: Mapping[str, Any]) -> bool:
    kinds = {str((role or {}).get("kind") or "Server") for role in spec.get("roles") or []}
    return bool(spec.get("router")) and bool(kinds & _KV_TRANSFER_KINDS)


def _engine_name(spec: Mapping[str, Any]) -> str:
    engine = spec.get("engine")
    # Older API versions wrote ``engine: vllm`` as a plain string.
    name = engine.get("name") if isinstance(engine, Mapping) else engine
    return str(name or "").lower()


def _interface_request(value: Any) -> tuple[int, str | None]:
    """Return (count, error message). Zero/unset -> (0, None)."""
    if value is None:
        return 0, None
    try:
        number = parse_quantity(value)
    except QuantityError:
        return 0, f"interface must be a whole-number quantity, got {value!r}"
    if number < 0:
        return 0, MSG_NOT_POSITIVE
    if number != number.to_integral_value():
        return 0, MSG_NOT_WHOLE
    return int(number), None


def _analyze_deployment(
    deployment: Mapping[str, Any],
    index: _Index,
    manufacturers: Mapping[str, str | None],
    default_namespace: str,
    findings: list[Finding],
    grants: list[RoleGrant],
) -> None:
    meta = deployment.get("metadata") or {}
    name = str(meta.get("name", ""))
    namespace = str(meta.get("namespace") or default_namespace)
    spec = _spec(deployment)
    roles = [role if isinstance(role, Mapping) else {} for role in spec.get("roles") or []]

    def report(role_index: int, message: str, severity: str = "error") -> None:
        path = f"spec.roles[{role_index}].resources.interface"
        findings.append(Finding("ModelDeployment", name, path, message, namespace, severity))

    requests: list[tuple[int, int]] = []
    for role_index, role in enumerate(roles):
        count, problem = _interface_request((role.get("resources") or {}).get("interface"))
        if problem:
            report(role_index, problem)
        elif count > 0:
            requests.append((role_index, count))
    if not requests:
        return

    backend, unresolved = _cache_backend(deployment, namespace, index)
    if unresolved:
        # The operator refuses once, on the first requesting role, before translating anything.
        report(requests[0][0], unresolved)
        return

    cache_protocol: str | None = None
    cache_conflict: tuple[str, str] | None = None
    backend_name: str | None = None
    if backend is not None:
        backend_name = str((backend.get("metadata") or {}).get("name", ""))
        protocols = member_group_protocols(backend)
        cache_conflict = _first_conflict(protocols)
        cache_protocol = protocols[0]

    renders_leg = _renders_kv_transfer_leg(spec)
    vllm = _engine_name(spec) == "vllm"
    direct_transfer = (spec.get("kvTransfer") or {}).get("protocol")

    for role_index, count in requests:
        role = roles[role_index]
        if cache_conflict:
            report(role_index, msg_conflicting_groups(*cache_conflict))
            continue
        instance_type = str(role.get("instanceType", ""))
        manufacturer = manufacturers.get(instance_type, manufacturer_of(instance_type))
        direct_counts = (
            not role.get("command") and renders_leg and vllm
            and manufacturer is not None and manufacturer != "ascend"
        )
        direct_protocol = effective_protocol(direct_transfer) if direct_counts else None
        cache_fabric = cache_protocol if cache_protocol in FABRICS else None
        direct_fabric = direct_protocol if direct_protocol in FABRICS else None
        if cache_fabric and direct_fabric and cache_fabric != direct_fabric:
            report(role_index, msg_conflicting_legs(cache_fabric, direct_fabric))
            continue
        fabric = cache_fabric or direct_fabric
        if fabric is None:
            report(role_index, MSG_NO_FABRIC_LEG)
            continue
        grants.append(RoleGrant(
            namespace=namespace, deployment=name, role=str(role.get("name", "")), role_index=role_index,
            instance_type=instance_type, interfaces=count, fabric=fabric,
            resources=fabric_resources(fabric, count),
            cache_protocol=cache_protocol, direct_protocol=direct_protocol, cache_backend=backend_name,
        ))


def _analyze_backend(backend: Mapping[str, Any], findings: list[Finding], grants: list[MemberGrant]) -> None:
    name = str((backend.get("metadata") or {}).get("name", ""))
    managed = (_spec(backend).get("connection") or {}).get("managed") or {}
    members = managed.get("members") or []
    for group_index, (member, protocol) in enumerate(zip(members, member_group_protocols(backend))):
        member = member if isinstance(member, Mapping) else {}
        declared = member.get("fabricInterfaceCount")
        # Engine-serialized props carry every number as a double, so 2.0 counts as 2.
        count = 1 if declared is None else (int(declared) if isinstance(declared, float) and declared.is_integer() else declared)
        path = f"spec.connection.managed.members[{group_index}].fabricInterfaceCount"
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            findings.append(Finding("KVCacheBackend", name, path, "fabricInterfaceCount must be an integer of at least 1"))
            continue
        if protocol not in FABRICS and declared is not None:
            findings.append(Finding(
                "KVCacheBackend", name, path,
                f"fabricInterfaceCount has no effect on a {protocol} member group (only RDMA and EFA groups request devices)",
                severity="warning",
            ))
        grants.append(MemberGrant(
            backend=name, group_index=group_index, protocol=protocol, fabric_interface_count=count,
            node_selector=dict(member.get("nodeSelector") or {}),
            resources=fabric_resources(protocol, count),
        ))


def analyze(
    objects: Iterable[Mapping[str, Any]],
    manufacturers: Mapping[str, str | None] | None = None,
    default_namespace: str = "default",
) -> TransferReport:
    """Decide every transfer path among ``objects`` as the operator's admission would.

    ``objects`` are manifests of any kinds; only ``worker.gpustack.ai`` ModelDeployment,
    KVCacheBackend, KVCachePool and KVCachePoolBinding are read, and references resolve across
    all of them. Each object is first checked against the operator's CRD schema
    (:func:`gpu_fabric.operator_schema.validate_object`); one the API server would refuse is
    reported and left out, as it would never be stored. ``manufacturers`` maps InstanceType names to the manufacturer the operator
    observed (``None`` for unknown); names not in it are parsed with :func:`manufacturer_of`.
    """
    findings: list[Finding] = []
    index = _index(objects, default_namespace, findings)
    role_grants: list[RoleGrant] = []
    member_grants: list[MemberGrant] = []
    for deployment in index.deployments:
        _analyze_deployment(deployment, index, manufacturers or {}, default_namespace, findings, role_grants)
    for name in sorted(index.backends):
        _analyze_backend(index.backends[name], findings, member_grants)
    return TransferReport(tuple(findings), tuple(role_grants), tuple(member_grants))
