"""The GPUStack operator's admission of a set of manifests, decided before anything is applied.

The operator's validating webhooks (``ValidateCreate`` in ``pkg/worker/webhooks/worker/model_deployment.go``
and its siblings, read at the commits in :mod:`gpu_fabric.gpustack.operator_pin`) decide, in this order,
and so does :func:`analyze`, over plain manifests and with the operator's own messages, so that
``pulumi preview`` (policy pack), ``gpu-fabric lint``, ``load_config`` and the components all refuse the
same things. It is the single source of truth for these rules: never copy them.

0. The API server's structural schema (:mod:`gpu_fabric.gpustack.schema`): an object it refuses is never
   stored, so nothing resolves to it.
1. The rules answered from the object alone (:mod:`gpu_fabric.gpustack.admission`, one module per kind:
   engine version, role kinds, router and engine, elastic EP, interface counts, volumes, names ...), then
   the pool and binding rules among the given objects (tenancy warning, one domain per master, ceilings).
2. Only when those pass: the interface requests (``validateModelDeploymentInterfaceRequests``). For
   each role with a positive whole ``interface``: the cache leg resolves ``kvCache.poolRef`` ->
   KVCachePoolBinding (same namespace) -> KVCachePool -> ``backends[0]`` -> KVCacheBackend and takes
   every member group's effective protocol (``mooncake.MemberProtocols``), dropped for a role with a
   ``command``; the direct leg is :func:`~gpu_fabric.gpustack.transfer_legs.direct_interface_protocol`;
   :func:`~gpu_fabric.gpustack.transfer_legs.interface_resource` then picks the one device key or refuses.
3. Only when those pass: a cache binding whose pool's groups use several transports is refused for an
   engine that declares no required transport (``validateModelDeploymentPoolTransport`` ->
   ``inject.ValidateBindingTransport``).

The device keys each leg renders, and what Mooncake member groups request, are
:mod:`gpu_fabric.gpustack.transfer_legs`'.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from gpu_fabric.config.instance_type_names import manufacturer_of
from gpu_fabric.config.quantity import QuantityError, parse_quantity
from gpu_fabric.config.shapes import mapping_at
from gpu_fabric.gpustack.admission import object_admission_findings
from gpu_fabric.gpustack.admission.common import ENGINE_VLLM, engine_name, spec_of
from gpu_fabric.gpustack.admission.kv_cache_pool import pool_backend_findings
from gpu_fabric.gpustack.admission.kv_cache_pool_binding import bindings_among
from gpu_fabric.findings import Finding, ObjectRef, Severity
from gpu_fabric.gpustack.rules import GPUSTACK_API_GROUP, MODEL_DEPLOYMENT_ADMISSION, WHOLE_ACCELERATORS
from gpu_fabric.gpustack.operator_pin import API_GROUP
from gpu_fabric.gpustack.profiles import Profile, default_profile, profile_for
from gpu_fabric.gpustack.schema import validate_object
from gpu_fabric.gpustack.transfer_legs import (
    EFA_KEY,
    MSG_BACKEND_UNRESOLVED,
    MSG_BINDING_UNRESOLVED,
    MSG_NO_FABRIC_LEG,
    MSG_POOL_UNRESOLVED,
    InterfaceRefusal,
    MemberGrant,
    RoleGrant,
    direct_interface_protocol,
    fabric_resources,
    inject_engine,
    interface_resource,
    member_grants,
    member_group_protocols,
    no_leg_remedy,
    validate_binding_transport,
)

GPUSTACK_GROUP = API_GROUP


@dataclass(frozen=True)
class TransferReport:
    """Everything the analysis decided about a set of manifests."""

    findings: tuple[Finding, ...] = ()
    role_grants: tuple[RoleGrant, ...] = ()
    member_grants: tuple[MemberGrant, ...] = ()

    @property
    def errors(self) -> tuple[Finding, ...]:
        """Findings the operator would refuse at admission."""
        return tuple(f for f in self.findings if f.severity is Severity.ERROR)

    @property
    def warnings(self) -> tuple[Finding, ...]:
        """Findings the operator would admit with a warning."""
        return tuple(f for f in self.findings if f.severity is Severity.WARNING)

    @property
    def ok(self) -> bool:
        """True when nothing would be refused."""
        return not self.errors


def is_gpustack_object(obj: Mapping[str, Any], kind: str | None = None) -> bool:
    """True for a ``worker.gpustack.ai`` manifest (optionally of the given kind)."""
    api_version = str(obj.get("apiVersion", ""))
    return api_version.split("/", 1)[0] == GPUSTACK_GROUP and (kind is None or obj.get("kind") == kind)


def api_group_findings(obj: Mapping[str, Any]) -> list[Finding]:
    """An error when ``obj`` spells the ``worker.gpustack.ai`` group in another case (``Worker.GPUStack.ai/v1``).

    API groups are DNS subdomains, lower case, and the API server matches them exactly: such an object is
    "no matches for kind", never the operator's object, so it must not pass as an object of another group.
    """
    api_version = str(obj.get("apiVersion", ""))
    group, slash, version = api_version.partition("/")
    if not slash or group == GPUSTACK_GROUP or group.lower() != GPUSTACK_GROUP:
        return []
    meta = mapping_at(obj, "metadata")
    ref = ObjectRef(str(obj.get("kind") or ""), str(meta.get("name") or ""), meta.get("namespace"))
    return [Finding.of(GPUSTACK_API_GROUP, "apiVersion", f"the API server serves no group {group!r}: API groups are "
                       f"lower case; write {GPUSTACK_GROUP}/{version}", subject=ref)]


def accelerator_findings(deployment: Mapping[str, Any]) -> list[Finding]:
    """An error per role whose ``resources.accelerator`` is no whole number (``0.5``, ``7500m``).

    The operator requests the role's accelerators as an extended resource (``nvidia.com/gpu``), and the API
    server refuses a fractional extended resource ("must be an integer"): the pods are never created.
    """
    found: list[Finding] = []
    meta = mapping_at(deployment, "metadata")
    ref = ObjectRef("ModelDeployment", str(meta.get("name") or ""), meta.get("namespace"))
    roles = spec_of(deployment).get("roles")
    for index, role in enumerate(roles if isinstance(roles, list) else []):
        resources = role.get("resources") if isinstance(role, Mapping) else None
        value = resources.get("accelerator") if isinstance(resources, Mapping) else None
        if value is None:
            continue
        try:
            number = parse_quantity(value)
        except QuantityError:
            continue  # the schema's quantity check reports it
        if number != number.to_integral_value():
            found.append(Finding.of(WHOLE_ACCELERATORS, f"spec.roles[{index}].resources.accelerator",
                                    f"{value!s} is not a whole number of accelerators: extended resources are "
                                    "integers (write 1, 2, ...; share one accelerator with acceleratorSliced* or "
                                    "acceleratorPartitionedProfile)", subject=ref))
    return found


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
        if isinstance(obj, Mapping):
            findings.extend(api_group_findings(obj))
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
            schema_findings = [f.about(ObjectRef(f.subject.kind, f.subject.name, default_namespace)) if f.subject else f
                               for f in schema_findings]
        findings.extend(schema_findings)
        if any(f.is_error for f in schema_findings):
            continue
        if kind == "ModelDeployment":
            whole = accelerator_findings(obj)
            findings.extend(whole)
            if whole:
                continue
            # Judged once every pool, binding and backend is indexed: its interface requests resolve through them.
            index.deployments.append(obj)
            continue
        namespace = str(meta.get("namespace") or default_namespace)
        refusals = object_admission_findings(obj, namespace)
        findings.extend(refusals)
        if refusals:
            continue
        if kind == "KVCachePoolBinding":
            index.bindings[(namespace, name)] = obj
        elif kind == "KVCachePool":
            index.pools[name] = obj
        elif kind == "KVCacheBackend":
            index.backends[name] = obj
    return index


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
        pool = self.index.pools.get(str((spec_of(binding).get("poolRef") or {}).get("name", "")))
        if pool is None:
            return binding, None, None
        backends = spec_of(pool).get("backends") or []
        backend = self.index.backends.get(str(backends[0])) if backends else None
        return binding, pool, backend


def _interface_requests(
    deployment: Mapping[str, Any], namespace: str, resolver: _Resolver, findings: list[Finding], grants: list[RoleGrant]
) -> None:
    """``validateModelDeploymentInterfaceRequests`` (and the render's grants for accepted requests)."""
    name = str((deployment.get("metadata") or {}).get("name", ""))
    spec = spec_of(deployment)
    roles = [role if isinstance(role, Mapping) else {} for role in spec.get("roles") or []]
    requested = [(i, count) for i, role in enumerate(roles)
                 if (count := _whole_positive((role.get("resources") or {}).get("interface")))]
    if not requested:
        return

    def refuse(role_index: int, message: str) -> None:
        findings.append(Finding.of(MODEL_DEPLOYMENT_ADMISSION, f"spec.roles[{role_index}].resources.interface", message,
                                   subject=ObjectRef("ModelDeployment", name, namespace)))

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
        manufacturer = resolver.manufacturer(instance_type) if engine_name(spec) == ENGINE_VLLM else ""
        # A role that owns its command line gets no cache render either, so neither leg can justify a device.
        role_protocols = [] if role.get("command") else protocols
        direct = direct_interface_protocol(spec, role, manufacturer)
        try:
            key = interface_resource(role_protocols, direct, count)
        except InterfaceRefusal as refusal:
            text = str(refusal)
            if text == MSG_NO_FABRIC_LEG:  # the operator's words first, then what gpu-fabric knows of the cause
                text = f"{text}: {no_leg_remedy(spec, role, manufacturer, role_protocols)}"
            refuse(role_index, text)
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
    spec = spec_of(deployment)
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
        manufacturer = resolver.manufacturer(instance_type) if engine_name(spec) == ENGINE_VLLM else ""
        refusal = validate_binding_transport(inject_engine(engine_name(spec), manufacturer), offers)
        if refusal:
            # field.Forbidden on spec.kvCache.poolRef.name; the first refusal ends the check.
            findings.append(Finding.of(MODEL_DEPLOYMENT_ADMISSION, "spec.kvCache.poolRef.name", refusal,
                                       subject=ObjectRef("ModelDeployment", name, namespace)))
            return


def _pools_and_bindings(index: _Index, findings: list[Finding]) -> None:
    """The pool webhook's multi-tenancy warning, and the binding webhook's cross-object rules among the given
    objects (``validateKVCachePoolBindingDomainIsUnclaimed``, ``validateKVCachePoolBindingCeilingFitsPool``).

    A pool that is not among the objects is not judged here (a partial ``lint`` is not a missing pool);
    ``load_config`` refuses a binding whose pool the stack does not declare.
    """
    for pool_name, pool in index.pools.items():
        findings.extend(pool_backend_findings(pool_name, pool, index.backends))
    found, refused = bindings_among(index.bindings, index.pools)
    findings.extend(found)
    # A refused Binding is never stored, so a deployment naming it finds nothing to resolve.
    for key in refused:
        index.bindings.pop(key, None)


def _analyze_deployment(
    deployment: Mapping[str, Any], resolver: _Resolver, default_namespace: str,
    findings: list[Finding], grants: list[RoleGrant],
) -> None:
    """``ValidateCreate``: object-only rules; then interface requests; then the pool transport."""
    namespace = str((deployment.get("metadata") or {}).get("namespace") or default_namespace)
    decided = object_admission_findings(deployment, namespace,
                                        lambda spec: resolver.profile.engine_rule(spec, resolver.profile))
    findings.extend(decided)
    if any(finding.is_error for finding in decided):
        return
    before = len(findings)
    _interface_requests(deployment, namespace, resolver, findings, grants)
    if len(findings) == before:
        _pool_transport(deployment, namespace, resolver, findings)


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
    group_grants: list[MemberGrant] = []
    _pools_and_bindings(index, findings)
    resolver = _Resolver(index, manufacturers or {}, profile)
    for deployment in index.deployments:
        _analyze_deployment(deployment, resolver, default_namespace, findings, role_grants)
    for name in sorted(index.backends):
        found, grants = member_grants(index.backends[name])
        findings.extend(found)
        group_grants.extend(grants)
    return TransferReport(tuple(findings), tuple(role_grants), tuple(group_grants))
