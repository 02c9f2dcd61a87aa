"""The transfer legs a GPUStack role's fabric interfaces, and a Mooncake member group's devices, rest on.

Mirrors the operator's translation from transfer protocols to device resource keys
(``pkg/worker/controllers/worker/model_deployment_fabric.go``: ``ModelDeploymentInterfaceResource``,
``ModelDeploymentDirectInterfaceProtocol``; ``mooncake.MemberProtocols``; ``inject.ValidateBindingTransport``
in ``pkg/worker/kvcache/inject/engine.go``), with the operator's messages, at the commits in
:data:`gpu_fabric.gpustack.operator_pin.SOURCE_FILES`. The admission pipeline
(:func:`gpu_fabric.gpustack.admission_pipeline.analyze`) resolves each deployment's cache chain and asks
these functions which key an interface request renders, or why none can.

Keys: rdma x1 -> ``device.gpustack.ai/rdma.shared: 1``; rdma xN -> ``device.gpustack.ai/rdma: N``;
efa xN -> ``vpc.amazonaws.com/efa: N``. Mooncake member groups get the same keys from
``fabricInterfaceCount`` (default 1) when their effective protocol is a fabric.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from gpu_fabric.config import constants
from gpu_fabric.gpustack.admission.common import (
    ENGINE_VLLM,
    KIND_DECODE,
    KIND_PREFILL,
    ROUTER_LLMD,
    declares_both_halves,
    effective_role_kind,
    engine_name,
    spec_of,
)
from gpu_fabric.findings import Finding, ObjectRef, Severity
from gpu_fabric.gpustack.rules import KV_CACHE_BACKEND_ADMISSION

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


def member_group_protocols(backend: Mapping[str, Any]) -> list[str]:
    """``mooncake.MemberProtocols``: each member group's effective protocol, in declaration order.

    A group's own ``transport.protocol`` wins, else the backend's (``Auto``/unset render ``tcp``); a
    backend with no groups (an external one) offers the backend-wide value alone, so the list is
    never empty (``MemberProtocolForGroup`` / ``MemberProtocols`` in
    ``pkg/worker/kvcache/mooncake/member_workload.go``).
    """
    spec = spec_of(backend)
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


def no_leg_remedy(spec: Mapping[str, Any], role: Mapping[str, Any], manufacturer: str, store_protocols: list[str]) -> str:
    """What to change when :data:`MSG_NO_FABRIC_LEG` refuses a role: why neither leg is a fabric, and what adds one.

    The operator's message names no cause. The direct leg exists only for a vLLM role of a routed pair that
    declares both halves (:func:`direct_interface_protocol`), the cache leg only for a role bound to a cache whose
    member groups use RDMA or EFA; a role with its own ``command`` gets neither.
    """
    if role.get("command"):
        return ("this role sets its own command, so the operator renders no transfer leg for it: drop "
                "resources.interface, or let the operator render the engine's command")
    causes = []
    if not isinstance(spec.get("router"), Mapping):
        causes.append("the deployment has no router (spec.router), so there is no direct prefill/decode leg")
    elif not declares_both_halves(spec) or effective_role_kind(role) not in (KIND_PREFILL, KIND_DECODE):
        causes.append("the direct leg joins a Prefill role and a Decode role, and this role is not one half of such a pair")
    elif engine_name(spec) != ENGINE_VLLM or manufacturer in ("", "ascend"):
        causes.append("the direct leg is rendered for vLLM on a known NVIDIA or AMD pool only")
    else:
        protocol = (spec.get("kvTransfer") or {}).get("protocol") or "unset"
        causes.append(f"spec.kvTransfer.protocol is {protocol}, not RDMA or EFA")
    if not store_protocols:
        causes.append("no kvCache binding gives it a cache leg")
    else:
        causes.append(f"its cache's member groups use {', '.join(store_protocols)}")
    return ("; ".join(causes) + ". Set spec.kvTransfer.protocol to EFA or RDMA on a routed Prefill/Decode "
            "pair, or bind a kvCache whose Mooncake members use EFA or RDMA, or drop resources.interface")


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
            engine_name(spec) != ENGINE_VLLM or manufacturer in ("", "ascend"):
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


def member_grants(backend: Mapping[str, Any]) -> tuple[list[Finding], list[MemberGrant]]:
    """What each member group of a KVCacheBackend requests on its nodes, and the findings on its interface counts."""
    findings: list[Finding] = []
    grants: list[MemberGrant] = []
    name = str((backend.get("metadata") or {}).get("name", ""))
    subject = ObjectRef("KVCacheBackend", name)
    managed = (spec_of(backend).get("connection") or {}).get("managed") or {}
    members = managed.get("members") or []
    for group_index, (member, protocol) in enumerate(zip(members, member_group_protocols(backend))):
        member = member if isinstance(member, Mapping) else {}
        declared = member.get("fabricInterfaceCount")
        # Engine-serialized props carry every number as a double, so 2.0 counts as 2.
        count = 1 if declared is None else (int(declared) if isinstance(declared, float) and declared.is_integer() else declared)
        path = f"spec.connection.managed.members[{group_index}].fabricInterfaceCount"
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            findings.append(Finding.of(KV_CACHE_BACKEND_ADMISSION, path, "fabricInterfaceCount must be an integer of at "
                                       "least 1", subject=subject))
            continue
        if protocol not in FABRICS and declared is not None:
            findings.append(Finding.of(
                KV_CACHE_BACKEND_ADMISSION, path,
                f"fabricInterfaceCount has no effect on a {protocol} member group (only RDMA and EFA groups request devices)",
                severity=Severity.WARNING, subject=subject,
            ))
        grants.append(MemberGrant(
            backend=name, group_index=group_index, protocol=protocol, fabric_interface_count=count,
            node_selector=dict(member.get("nodeSelector") or {}),
            resources=fabric_resources(protocol, count),
        ))
    return findings, grants
