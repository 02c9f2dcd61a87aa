"""One analyzer call, decoded once: the patches the pack's servicer gets before it serves.

pulumi_policy's servicer (``pulumi_policy/policy.py`` ``_PolicyAnalyzerServicer``, a private class at
:data:`gpu_fabric.policies.engine_wire.PULUMI_POLICY_VERSIONS`) decodes a request's resources once per
policy, and with protobuf's JSON mapping, which has no NaN or infinity. The two functions here change
both, idempotently, and import nothing of gpu-fabric's rules: the ready pack applies them before it
answers the engine's handshake (:mod:`gpu_fabric.policies.served_pack`), and
:mod:`gpu_fabric.policies.engine_wire` keeps each call's decoded resources in the scope they open.
"""

from __future__ import annotations

import functools
import threading
from typing import Any, Callable, Optional

import pulumi_policy.policy as _analyzer_module
from google.protobuf import json_format as _json_format
from google.protobuf import struct_pb2
from pulumi_policy.policy import _PolicyAnalyzerServicer

__all__ = ["CallScope", "current_scope", "decode_non_finite_numbers", "share_decoding_per_call"]


class CallScope:
    """What one analyzer call (``Analyze`` or ``AnalyzeStack``) has decoded, for every policy it runs.

    pulumi_policy's servicer decodes the request once per policy: ``AnalyzeStack`` turns every resource's
    ``Struct`` into a dict for each of the pack's 22 stack policies, and each policy then copied every
    resource again into plain props (:func:`stack_resources`), so a stack's decoding grew as resources x
    policies. Within one call every policy is handed the same request, so the ``Struct`` decode (keyed by
    the message, held here so its id stays its own) and the plain :class:`Resource` (keyed by URN) are made
    once and shared; the dicts pulumi_policy builds from the shared decode are its own copies
    (``deserialize_properties`` copies every dict and list), and policies only read a :class:`Resource`.
    """

    def __init__(self) -> None:
        self.structs: dict[int, tuple[struct_pb2.Struct, dict[str, Any]]] = {}
        self.resources: dict[tuple[str, str], Any] = {}  # plan.resource_view.Resource


_calls = threading.local()
"""The current thread's :class:`CallScope` (``scope``), set only while a wrapped analyzer call runs."""


def current_scope() -> Optional[CallScope]:
    return getattr(_calls, "scope", None)


def _one_decoding_per_call(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def call(self: Any, request: Any, context: Any) -> Any:
        _calls.scope = CallScope()
        try:
            return method(self, request, context)
        finally:
            _calls.scope = None

    call.__wrapped_by_gpu_fabric__ = True  # type: ignore[attr-defined]
    return call


def share_decoding_per_call() -> None:
    """Make each ``Analyze``/``AnalyzeStack`` call decode its resources once for all its policies (idempotent).

    The pack's entry point (``policy/__main__.py``) and ``gpu-fabric check --preview`` call this before they
    serve; it wraps two methods of pulumi_policy's servicer (a private class at :data:`PULUMI_POLICY_VERSIONS`)
    in a :class:`CallScope`. Findings and messages are those of the unwrapped servicer, decoded once.
    """
    for name in ("Analyze", "AnalyzeStack"):
        method = getattr(_PolicyAnalyzerServicer, name)
        if not getattr(method, "__wrapped_by_gpu_fabric__", False):
            setattr(_PolicyAnalyzerServicer, name, _one_decoding_per_call(method))


def _struct_value(value: struct_pb2.Value) -> Any:
    kind = value.WhichOneof("kind")
    if kind == "struct_value":
        return _struct_dict(value.struct_value)
    if kind == "list_value":
        return [_struct_value(item) for item in value.list_value.values]
    if kind == "number_value":
        return value.number_value
    if kind == "string_value":
        return value.string_value
    if kind == "bool_value":
        return value.bool_value
    return None


def _struct_dict(message: struct_pb2.Struct) -> dict[str, Any]:
    return {key: _struct_value(item) for key, item in message.fields.items()}


class _NonFiniteTolerantJsonFormat:
    """``google.protobuf.json_format`` as the analyzer uses it, but a ``Struct`` decodes natively.

    protobuf's JSON mapping has no NaN or infinity, so ``MessageToDict`` raises on a ``Struct`` holding
    one ("Fail to serialize NaN for Value.number_value"), and pulumi_policy's servicer calls it on every
    resource's properties (``pulumi_policy/policy.py`` ``Analyze``/``AnalyzeStack``): one NaN input
    anywhere failed the whole preview with a pack error. Decoded natively the NaN reaches the
    ``finite-numbers`` policy, which refuses it at its path. Every other message goes to protobuf.
    """

    def __getattr__(self, name: str) -> Any:
        return getattr(_json_format, name)

    @staticmethod
    def MessageToDict(message: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N802 - protobuf's name
        if isinstance(message, struct_pb2.Struct) and not args and not kwargs:
            scope = current_scope()
            if scope is None:
                return _struct_dict(message)
            decoded = scope.structs.get(id(message))
            if decoded is None or decoded[0] is not message:
                decoded = scope.structs[id(message)] = (message, _struct_dict(message))
            return decoded[1]
        return _json_format.MessageToDict(message, *args, **kwargs)


def decode_non_finite_numbers() -> None:
    """Make the analyzer decode NaN and infinite numbers instead of failing the call (idempotent).

    The pack's entry point (``policy/__main__.py``) and ``gpu-fabric check --preview`` call this before
    they serve; it replaces the ``json_format`` module pulumi_policy's servicer reads (a private
    attribute of ``pulumi_policy.policy`` at :data:`PULUMI_POLICY_VERSIONS`).
    """
    if not isinstance(_analyzer_module.json_format, _NonFiniteTolerantJsonFormat):
        _analyzer_module.json_format = _NonFiniteTolerantJsonFormat()  # type: ignore[assignment]
