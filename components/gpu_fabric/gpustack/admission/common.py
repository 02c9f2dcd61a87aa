"""What the operator's webhook files share: the ModelDeployment vocabulary, value readers, finding helpers.

The engine, router and role-kind values and the ``ModelDeployment...`` helpers are the operator's
(``api/worker`` and ``pkg/worker/webhooks/worker/model_deployment.go`` at
:data:`gpu_fabric.gpustack.operator_pin.OPERATOR_COMMIT`); the transfer legs
(:mod:`gpu_fabric.gpustack.transfer_legs`) read them too.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from gpu_fabric.config.quantity import QuantityError, parse_quantity
from gpu_fabric.config.shapes import mapping_at
from gpu_fabric.findings import Finding, ObjectRef

ENGINE_VLLM = "vLLM"
ENGINE_SGLANG = "SGLang"
ROUTER_LLMD = "llm-d-router"
ROUTER_VLLM = "vllm-router"
ROUTER_SGLANG = "sglang-gateway"
KIND_SERVER, KIND_PREFILL, KIND_DECODE = "Server", "Prefill", "Decode"


def effective_role_kind(role: Mapping[str, Any]) -> str:
    """``ModelDeploymentEffectiveRoleKind``: the kind, ``Server`` when unset."""
    return str(role.get("kind") or KIND_SERVER)


def declares_both_halves(spec: Mapping[str, Any]) -> bool:
    """``ModelDeploymentDeclaresBothHalves``: a Prefill and a Decode role are both declared."""
    kinds = {effective_role_kind(role) for role in roles_of(spec)}
    return KIND_PREFILL in kinds and KIND_DECODE in kinds


def arg_name(arg: str) -> str:
    """``ModelDeploymentArgName``: the flag of ``--flag=value`` (the token itself otherwise)."""
    return arg.split("=", 1)[0]


def spec_of(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """An object's ``spec``, empty when it has none (or there is no object)."""
    spec = (obj or {}).get("spec")
    return spec if isinstance(spec, Mapping) else {}


def engine_name(spec: Mapping[str, Any]) -> str:
    """``spec.engine.name``, ``""`` when unset."""
    engine = spec.get("engine")
    return str(engine.get("name") or "") if isinstance(engine, Mapping) else ""


def roles_of(spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """``spec.roles``, each entry a mapping (an entry of another shape reads as empty)."""
    roles = spec.get("roles")
    return [role if isinstance(role, Mapping) else {} for role in roles] if isinstance(roles, list) else []


def int_or(value: Any, default: int) -> int:
    """An integer field as the webhook reads it: engine-serialized whole doubles count, anything else is ``default``."""
    if isinstance(value, bool) or value is None:
        return default
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value if isinstance(value, int) else default


def quantity_or_none(value: Any) -> Any:
    """A ``resource.Quantity`` field as a number, or ``None`` when it does not parse."""
    try:
        return parse_quantity(value)
    except QuantityError:
        return None


def duplicate_value(value: str) -> str:
    """``field.Duplicate``'s text: the API server quotes the value it is handed (Go ``%q``)."""
    return f"Duplicate value: {json.dumps(value, ensure_ascii=False)}"


def object_findings(kind: str, obj: Mapping[str, Any], found: list[Finding], namespace: str | None) -> list[Finding]:
    """Findings against one object (``found``, at paths of the object), naming it."""
    meta = mapping_at(obj, "metadata")
    subject = ObjectRef(kind, str(meta.get("name") or ""), namespace)
    return [finding.about(subject) for finding in found]
