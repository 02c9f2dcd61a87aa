"""The GPUStack operator's ModelDeployment admission, decided before anything is applied.

The operator's validating webhook (``ValidateCreate`` in ``pkg/worker/webhooks/worker/model_deployment.go``,
read at :data:`gpu_fabric.gpustack.operator_pin.OPERATOR_COMMIT`) decides, in this order, and so does
:func:`analyze`, over plain manifests and with the operator's own messages, so that ``pulumi preview``
(policy pack), ``gpu-fabric lint``, ``load_config`` and the components all refuse the same things. It
is the single source of truth for these rules: never copy them.

0. The API server's structural schema (:mod:`gpu_fabric.gpustack.schema`): an object it refuses is never
   stored, so nothing resolves to it.
1. The rules answered from the object alone (:mod:`gpu_fabric.gpustack.admission`, one module per kind:
   engine version, role kinds, router and engine, elastic EP, interface counts, volumes, names ...).
2. Only when those pass: the interface requests (``validateModelDeploymentInterfaceRequests``). For
   each role with a positive whole ``interface``: the cache leg resolves ``kvCache.poolRef`` ->
   KVCachePoolBinding (same namespace) -> KVCachePool -> ``backends[0]`` -> KVCacheBackend and takes
   every member group's effective protocol (``mooncake.MemberProtocols``), dropped for a role with a
   ``command``; the direct leg is :func:`direct_interface_protocol`; :func:`interface_resource` then
   picks the one device key or refuses.
3. Only when those pass: a cache binding whose pool's groups use several transports is refused for an
   engine that declares no required transport (``validateModelDeploymentPoolTransport`` ->
   ``inject.ValidateBindingTransport``).

Keys: rdma x1 -> ``device.gpustack.ai/rdma.shared: 1``; rdma xN -> ``device.gpustack.ai/rdma: N``;
efa xN -> ``vpc.amazonaws.com/efa: N``. Mooncake member groups get the same keys from
``fabricInterfaceCount`` (default 1) when their effective protocol is a fabric.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping

from gpu_fabric.config import constants
from gpu_fabric.config.instance_type_names import manufacturer_of
from gpu_fabric.gpustack.admission.common import (
    ENGINE_VLLM,
    KIND_DECODE,
    KIND_PREFILL,
    ROUTER_LLMD,
    declares_both_halves,
    duplicate_value,
    effective_role_kind,
)
from gpu_fabric.gpustack.admission.kv_cache_backend import backend_findings
from gpu_fabric.gpustack.admission.kv_cache_pool import pool_findings
from gpu_fabric.gpustack.admission.kv_cache_pool_binding import binding_findings
from gpu_fabric.gpustack.admission.model_deployment import deployment_findings
from gpu_fabric.gpustack.findings import Finding
from gpu_fabric.gpustack.operator_pin import API_GROUP
from gpu_fabric.gpustack.profiles import Profile, default_profile, profile_for
from gpu_fabric.gpustack.schema import validate_object
from gpu_fabric.config.quantity import QuantityError, parse_quantity
from gpu_fabric.config.shapes import mapping_at

GPUSTACK_GROUP = API_GROUP

RDMA_EXCLUSIVE_KEY = constants.RDMA_RESOURCE
RDMA_SHARED_KEY = constants.RDMA_SHARED_RESOURCE
RDMA_PARTITIONED_KEY = constants.RDMA_PARTITIONED_RESOURCE
EFA_KEY = constants.EFA_RESOURCE
FABRIC_KEYS = {"rdma": (RDMA_EXCLUSIVE_KEY, RDMA_SHARED_KEY, RDMA_PARTITIONED_KEY), "efa": (EFA_KEY,)}
FABRICS = ("rdma", "efa")

# The operator's messages, verbatim (field.Invalid / field.Forbidden on the interface path).
MSG_NOT_POSITIVE = "interface count must be positive"
MSG_NO_FABRIC_LEG = "no effective RDMA or EFA transfer leg uses the requested interfaces"
MSG_BINDING_UNRESOLVED = "cache binding must resolve before requesting interfaces"
MSG_POOL_UNRESOLVED = "cache pool must resolve before requesting interfaces"
MSG_BACKEND_UNRESOLVED = "cache backend must resolve before requesting interfaces"
# validateModelDeploymentRoleResources: a negative or fractional count.
MSG_NOT_WHOLE = "interface count must be a non-negative whole number"


def msg_conflicting_groups(*protocols: str) -> str:
    """The operator's message when cache member groups disagree: EVERY group's protocol, in declaration order.

    ``ModelDeploymentInterfaceResource`` joins the whole ``storeProtocols`` slice, not the first pair.
    """
    return f"cache member groups use conflicting protocols: {', '.join(protocols)}"


def msg_conflicting_legs(cache: str, direct: str) -> str:
    """The operator's message when the cache leg and the direct leg use different fabrics."""
    return f"cache and direct-transfer legs use {cache} and {direct}"


# API enum -> the lowercase protocol the operator renders (Auto and unset mean TCP).
_PROTOCOL_SPELLING = {
    "auto": "tcp", "tcp": "tcp", "rdma": "rdma", "efa": "efa",
    "cann": "ascend", "rocm": "hip", "musa": "musa", "maca": "maca",
}


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
    """Bindings by (namespace, name), in input order (the order their domain claims are judged in)."""
    pools: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    backends: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    instance_types: dict[str, Mapping[str, Any]] = field(default_factory=dict)


def _index(objects: Iterable[Mapping[str, Any]], default_namespace: str, findings: list[Finding], profile: Profile) -> _Index:
    index = _Index()
    for obj in objects:
        if not isinstance(obj, Mapping) or not is_gpustack_object(obj):
            continue
        meta = mapping_at(obj, "metadata")
        name = str(meta.get("name", ""))
        kind = obj.get("kind")
        if kind == "InstanceType":
            # Read for its observed manufacturer only (status.detail.manufacturer); not validated.
            index.instance_types[name] = obj
            continue
        # The API server checks the structural schema before any webhook runs: an object it refuses
        # is never stored, so nothing can resolve to it and its admission rules never run.
        schema_findings = validate_object(obj, profile)
        if kind in ("ModelDeployment", "KVCachePoolBinding") and not meta.get("namespace"):
            # Namespaced objects without a namespace land in the default one, as kubectl applies them.
            schema_findings = [replace(f, namespace=default_namespace) for f in schema_findings]
        findings.extend(schema_findings)
        if any(f.severity == "error" for f in schema_findings):
            continue
        if kind == "ModelDeployment":
            index.deployments.append(obj)
        elif kind == "KVCachePoolBinding":
            namespace = str(meta.get("namespace") or default_namespace)
            refusals = binding_findings(obj, namespace)
            findings.extend(refusals)
            if not refusals:
                index.bindings[(namespace, name)] = obj
        elif kind == "KVCachePool":
            refusals = pool_findings(obj)
            findings.extend(refusals)
            if not refusals:
                index.pools[name] = obj
        elif kind == "KVCacheBackend":
            refusals = backend_findings(obj)
            findings.extend(refusals)
            if not refusals:
                index.backends[name] = obj
    return index


def _spec(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    spec = (obj or {}).get("spec")
    return spec if isinstance(spec, Mapping) else {}


def member_group_protocols(backend: Mapping[str, Any]) -> list[str]:
    """``mooncake.MemberProtocols``: each member group's effective protocol, in declaration order.

    A group's own ``transport.protocol`` wins, else the backend's (``Auto``/unset render ``tcp``); a
    backend with no groups (an external one) offers the backend-wide value alone, so the list is
    never empty (``MemberProtocolForGroup`` / ``MemberProtocols`` in
    ``pkg/worker/kvcache/mooncake/member_workload.go``).
    """
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


class InterfaceRefusal(ValueError):
    """``ModelDeploymentInterfaceResource`` refused the request; the text is the operator's."""


def interface_resource(store_protocols: list[str], direct_protocol: str, count: int) -> str:
    """The one device key a positive interface count renders, as ``ModelDeploymentInterfaceResource`` picks it.

    Mirrors ``pkg/worker/controllers/worker/model_deployment_fabric.go``: member groups must agree even
    when one uses TCP; the fabric is whichever of the store and direct legs is ``rdma``/``efa``; two
    fabrics, or none, are refused. Raises :class:`InterfaceRefusal` with the operator's message.
    """
    if count < 1:
        raise InterfaceRefusal(MSG_NOT_POSITIVE)
    store_protocol = ""
    if store_protocols:
        store_protocol = store_protocols[0]
        if any(protocol != store_protocol for protocol in store_protocols[1:]):
            raise InterfaceRefusal(msg_conflicting_groups(*store_protocols))
    fabric = ""
    for protocol in (store_protocol, direct_protocol):
        if protocol not in FABRICS:
            continue
        if fabric and fabric != protocol:
            raise InterfaceRefusal(msg_conflicting_legs(fabric, protocol))
        fabric = protocol
    if not fabric:
        raise InterfaceRefusal(MSG_NO_FABRIC_LEG)
    return next(iter(fabric_resources(fabric, count)))


def uses_kv_transfer(spec: Mapping[str, Any], role: Mapping[str, Any], manufacturer: str) -> bool:
    """``modelDeploymentUsesKVTransfer``: this role runs the engine side of a routed prefill/decode pair.

    A router is required; on Ascend only ``llm-d-router`` drives the leg; the deployment must declare
    BOTH halves (``ModelDeploymentDeclaresBothHalves``); the role itself must be Prefill or Decode.
    """
    router = spec.get("router")
    if not isinstance(router, Mapping):
        return False
    if manufacturer == "ascend" and router.get("name") != ROUTER_LLMD:
        return False
    if not declares_both_halves(spec):
        return False
    return effective_role_kind(role) in (KIND_PREFILL, KIND_DECODE)


def direct_interface_protocol(spec: Mapping[str, Any], role: Mapping[str, Any], manufacturer: str) -> str:
    """``ModelDeploymentDirectInterfaceProtocol``: the protocol a managed direct leg renders, or ``""``.

    No leg for a role with a user-owned ``command``, for a role outside a routed pair, for an engine
    other than vLLM, and for an unobserved or Ascend manufacturer; else ``kvTransfer.protocol``
    rendered (unset/``Auto`` -> ``tcp``).
    """
    if role.get("command") or not uses_kv_transfer(spec, role, manufacturer) or \
            _engine_name(spec) != ENGINE_VLLM or manufacturer in ("", "ascend"):
        return ""
    return effective_protocol((spec.get("kvTransfer") or {}).get("protocol"))


# inject.Engine values and which of them require one transport (engineTransportConstraint in
# pkg/worker/kvcache/inject/engine.go): vLLM and SGLang declare none; vLLM-Ascend requires "ascend".
_ENGINE_REQUIRED_TRANSPORT = {"vllm": "", "vllm-ascend": "ascend", "sglang": ""}


def inject_engine(engine_name: str, manufacturer: str) -> str:
    """``ModelDeploymentInjectEngine``: the engine the cache client is rendered for (vLLM on Ascend is vllm-ascend)."""
    if engine_name == ENGINE_VLLM:
        return "vllm-ascend" if manufacturer == "ascend" else "vllm"
    return "sglang"


def _go_quoted_list(values: list[str]) -> str:
    # Go's %q of a []string: ["tcp" "rdma"]
    return "[" + " ".join(f'"{value}"' for value in values) + "]"


def validate_binding_transport(engine: str, offers: list[str]) -> str | None:
    """``inject.ValidateBindingTransport``: the refusal for a new binding to a pool of mixed transports, or ``None``."""
    if _ENGINE_REQUIRED_TRANSPORT.get(engine, ""):
        return None
    unique: list[str] = []
    for offer in offers:
        if offer and offer not in unique:
            unique.append(offer)
    if len(unique) < 2:
        return None
    return (f'engine "{engine}" declares no required transport and this pool offers {_go_quoted_list(unique)}. '
            "The engine can be configured with only one transport; when it reads a block from a group using "
            "another, the client reads that target segment's protocol and fails with NotSupportedTransport. Set "
            "that backend's spec.transport.protocol and any overriding member group's transport.protocol to one "
            "common transport, or bind this workload to a pool with one effective transport")


def _engine_name(spec: Mapping[str, Any]) -> str:
    engine = spec.get("engine")
    return str(engine.get("name") or "") if isinstance(engine, Mapping) else ""


def _whole_positive(value: Any) -> int:
    """``Interface.Sign() > 0`` and ``AsInt64()`` whole: the count, or 0 when nothing is requested."""
    if value is None:
        return 0
    try:
        number = parse_quantity(value)
    except QuantityError:
        return 0
    return int(number) if number > 0 and number == number.to_integral_value() else 0


class _Resolver:
    """Reads a deployment's cache chain and InstanceTypes the way the webhook's APIReader does."""

    def __init__(self, index: _Index, manufacturers: Mapping[str, str | None], profile: Profile):
        self.index = index
        self.manufacturers = manufacturers
        self.profile = profile

    def pool_of(self, role: Mapping[str, Any]) -> str:
        """The pool (InstanceType / AcceleratorType) a role names, in its line's spelling."""
        return str(role.get(self.profile.pool_field, ""))

    def manufacturer(self, instance_type: str) -> str:
        """The InstanceType's observed manufacturer (``status.detail.manufacturer``) when it is known,
        else the one a stack states for the pool, else the one its name carries, else ``""``."""
        observed = self.index.instance_types.get(instance_type)
        if observed is not None:
            detail = ((observed.get("status") or {}).get("detail") or {})
            return str(detail.get("manufacturer") or "")
        if instance_type in self.manufacturers:
            return self.manufacturers[instance_type] or ""
        return manufacturer_of(instance_type) or ""

    def cache_chain(self, spec: Mapping[str, Any], namespace: str
                    ) -> tuple[Mapping[str, Any] | None, Mapping[str, Any] | None, Mapping[str, Any] | None]:
        """(binding, pool, backend), each ``None`` where the chain stops."""
        pool_ref = ((spec.get("kvCache") or {}).get("poolRef") or {}).get("name")
        binding = self.index.bindings.get((namespace, str(pool_ref)))
        if binding is None:
            return None, None, None
        pool = self.index.pools.get(str((_spec(binding).get("poolRef") or {}).get("name", "")))
        if pool is None:
            return binding, None, None
        backends = _spec(pool).get("backends") or []
        backend = self.index.backends.get(str(backends[0])) if backends else None
        return binding, pool, backend


def _interface_requests(
    deployment: Mapping[str, Any], namespace: str, resolver: _Resolver, findings: list[Finding], grants: list[RoleGrant]
) -> None:
    """``validateModelDeploymentInterfaceRequests`` (and the render's grants for accepted requests)."""
    name = str((deployment.get("metadata") or {}).get("name", ""))
    spec = _spec(deployment)
    roles = [role if isinstance(role, Mapping) else {} for role in spec.get("roles") or []]
    requested = [(i, count) for i, role in enumerate(roles)
                 if (count := _whole_positive((role.get("resources") or {}).get("interface")))]
    if not requested:
        return

    def refuse(role_index: int, message: str) -> None:
        findings.append(Finding("ModelDeployment", name, f"spec.roles[{role_index}].resources.interface", message, namespace))

    protocols: list[str] = []
    backend_name: str | None = None
    if isinstance(spec.get("kvCache"), Mapping):
        binding, pool, backend = resolver.cache_chain(spec, namespace)
        # Unresolved references are refused once, on the first requesting role, before any translation.
        if binding is None:
            return refuse(requested[0][0], MSG_BINDING_UNRESOLVED)
        if pool is None:
            return refuse(requested[0][0], MSG_POOL_UNRESOLVED)
        if backend is None:
            return refuse(requested[0][0], MSG_BACKEND_UNRESOLVED)
        protocols = member_group_protocols(backend)
        backend_name = str((backend.get("metadata") or {}).get("name", ""))

    for role_index, count in requested:
        role = roles[role_index]
        instance_type = resolver.pool_of(role)
        # The webhook reads the manufacturer for vLLM only; SGLang never earns a direct leg anyway.
        manufacturer = resolver.manufacturer(instance_type) if _engine_name(spec) == ENGINE_VLLM else ""
        # A role that owns its command line gets no cache render either, so neither leg can justify a device.
        role_protocols = [] if role.get("command") else protocols
        direct = direct_interface_protocol(spec, role, manufacturer)
        try:
            key = interface_resource(role_protocols, direct, count)
        except InterfaceRefusal as refusal:
            refuse(role_index, str(refusal))
            continue
        fabric = "efa" if key == EFA_KEY else "rdma"
        grants.append(RoleGrant(
            namespace=namespace, deployment=name, role=str(role.get("name", "")), role_index=role_index,
            instance_type=instance_type, interfaces=count, fabric=fabric, resources=fabric_resources(fabric, count),
            cache_protocol=(role_protocols[0] if role_protocols else None), direct_protocol=direct or None,
            cache_backend=backend_name if role_protocols else None,
        ))


def _pool_transport(deployment: Mapping[str, Any], namespace: str, resolver: _Resolver, findings: list[Finding]) -> None:
    """``validateModelDeploymentPoolTransport`` on create: a binding to a pool of mixed transports."""
    spec = _spec(deployment)
    if not isinstance(spec.get("kvCache"), Mapping):
        return
    _, _, backend = resolver.cache_chain(spec, namespace)
    if backend is None:
        return  # an unresolved chain is not this rule's refusal
    offers = member_group_protocols(backend)
    if len({offer for offer in offers if offer}) < 2:
        return
    name = str((deployment.get("metadata") or {}).get("name", ""))
    seen: set[str] = set()
    for role in spec.get("roles") or []:
        instance_type = resolver.pool_of(role or {})
        if instance_type in seen:
            continue
        seen.add(instance_type)
        manufacturer = resolver.manufacturer(instance_type) if _engine_name(spec) == ENGINE_VLLM else ""
        refusal = validate_binding_transport(inject_engine(_engine_name(spec), manufacturer), offers)
        if refusal:
            # field.Forbidden on spec.kvCache.poolRef.name; the first refusal ends the check.
            findings.append(Finding("ModelDeployment", name, "spec.kvCache.poolRef.name", refusal, namespace))
            return


def _pools_and_bindings(index: _Index, findings: list[Finding]) -> None:
    """The pool webhook's multi-tenancy warning, and the binding webhook's cross-object rules among the given
    objects (``validateKVCachePoolBindingDomainIsUnclaimed``, ``validateKVCachePoolBindingCeilingFitsPool``).

    A pool that is not among the objects is not judged here (a partial ``lint`` is not a missing pool);
    ``load_config`` refuses a binding whose pool the stack does not declare.
    """
    for pool_name, pool in index.pools.items():
        backends = _spec(pool).get("backends") or []
        leader = (((_spec(index.backends.get(str(backends[0]))) if backends else {}).get("connection") or {})
                  .get("managed") or {}).get("leader")
        if isinstance(leader, Mapping) and leader.get("multiTenancy") is False:
            # validateKVCachePoolBackend: admitted, with this warning.
            findings.append(Finding("KVCachePool", pool_name, "spec.backends[0]",
                                    f'backend "{backends[0]}" runs without multi-tenancy: it holds no tenant ledger, so '
                                    "no per-tenant quota is in force — every write falls into the default tenant, "
                                    "bounded only by the store's global capacity — and the master serves exactly one "
                                    "reuse domain", severity="warning"))
    refused: list[tuple[str, str]] = []
    claimed: list[tuple[str, str, str]] = []  # (domain, namespace, name) in input order
    for (namespace, name), binding in index.bindings.items():
        spec = _spec(binding)
        pool_name = str((spec.get("poolRef") or {}).get("name", ""))
        bound_pool = index.pools.get(pool_name)
        domain = str((spec.get("domain") or {}).get("name") or "default")  # the schema default
        own_backends = list(_spec(bound_pool).get("backends") or []) if bound_pool is not None else []
        for other_domain, other_namespace, other_name in claimed:
            if other_domain != domain:
                continue
            other_pool = index.pools.get(str((_spec(index.bindings[(other_namespace, other_name)]).get("poolRef") or {}).get("name", "")))
            other_backends = list(_spec(other_pool).get("backends") or []) if other_pool is not None else []
            shared = [backend for backend in own_backends if backend in other_backends]
            if shared:
                findings.append(Finding("KVCachePoolBinding", name, "spec.domain.name", duplicate_value(
                    f'reuse domain "{domain}" is already registered by {other_namespace}/{other_name}, and backend '
                    f"{' and '.join(shared)} serves both Bindings' pools: the two would share cache and overwrite each "
                    "other's ceiling in that master's single ledger entry for this tenant. Two masters hold two "
                    "ledgers, so a Binding claiming this domain against a pool on another backend is fine — register "
                    'a domain no other Binding on THIS master holds. That does not rescue a needed "default" domain '
                    "here: the engines that forward no tenant write under that literal name, so a Binding "
                    "registering anything else registers a domain those Pods never write to"), namespace))
                refused.append((namespace, name))
                break
        claimed.append((domain, namespace, name))
        ceiling, total = (spec.get("quota") or {}).get("ceiling"), (_spec(bound_pool).get("quota") or {}).get("total")
        if bound_pool is None or ceiling is None or total is None:
            continue
        try:
            exceeds = parse_quantity(ceiling) > parse_quantity(total)
        except QuantityError:
            continue
        if exceeds:
            findings.append(Finding("KVCachePoolBinding", name, "spec.quota.ceiling",
                                    f"must not exceed the pool's own ceiling of {total}: a request larger than "
                                    f'everything pool "{pool_name}" declares can never be granted, whatever the other '
                                    "Bindings ask for", namespace))
            refused.append((namespace, name))
    # A refused Binding is never stored, so a deployment naming it finds nothing to resolve.
    for key in refused:
        index.bindings.pop(key, None)


def _analyze_deployment(
    deployment: Mapping[str, Any], resolver: _Resolver, default_namespace: str,
    findings: list[Finding], grants: list[RoleGrant],
) -> None:
    """``ValidateCreate``: object-only rules; then interface requests; then the pool transport."""
    namespace = str((deployment.get("metadata") or {}).get("namespace") or default_namespace)
    decided = deployment_findings(deployment, namespace, lambda spec: resolver.profile.engine_rule(spec, resolver.profile))
    findings.extend(decided)
    if any(finding.severity == "error" for finding in decided):
        return
    before = len(findings)
    _interface_requests(deployment, namespace, resolver, findings, grants)
    if len(findings) == before:
        _pool_transport(deployment, namespace, resolver, findings)


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
    operator: Profile | str | None = None,
) -> TransferReport:
    """Decide every transfer path among ``objects`` as the operator's admission would.

    ``objects`` are manifests of any kinds; only ``worker.gpustack.ai`` ModelDeployment,
    KVCacheBackend, KVCachePool, KVCachePoolBinding (and InstanceType, for its observed manufacturer)
    are read, and references resolve across all of them. Each object is first checked against the
    operator's CRD schema (:func:`gpu_fabric.gpustack.schema.validate_object`); one the API server
    would refuse is reported and left out, as it would never be stored.

    A role's manufacturer is, in this order: ``status.detail.manufacturer`` of an InstanceType object
    among ``objects`` (what the webhook reads); ``manufacturers[instance type]`` (what a stack states
    for its pool, ``None`` for unknown); the manufacturer the InstanceType name carries
    (:func:`manufacturer_of`) as a fallback.

    ``operator`` is the operator the cluster runs: a version (``"0.10.0"``, ``"main@5cfac77b"``) or its
    :class:`~gpu_fabric.gpustack.profiles.Profile`; it picks the schema and the rules. Default: the
    stack default (:data:`~gpu_fabric.config.fabric.DEFAULT_GPUSTACK_OPERATOR`). An unknown version
    raises :class:`~gpu_fabric.gpustack.profiles.UnknownOperatorVersion`.
    """
    findings: list[Finding] = []
    profile = operator if isinstance(operator, Profile) else (
        default_profile() if operator is None else profile_for(operator))
    index = _index(objects, default_namespace, findings, profile)
    role_grants: list[RoleGrant] = []
    member_grants: list[MemberGrant] = []
    _pools_and_bindings(index, findings)
    resolver = _Resolver(index, manufacturers or {}, profile)
    for deployment in index.deployments:
        _analyze_deployment(deployment, resolver, default_namespace, findings, role_grants)
    for name in sorted(index.backends):
        _analyze_backend(index.backends[name], findings, member_grants)
    return TransferReport(tuple(findings), tuple(role_grants), tuple(member_grants))
