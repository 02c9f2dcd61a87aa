"""The engine-wire boundary: the one module that touches pulumi_policy's internals.

The analyzer hands a policy its resource's inputs wrapped in an unknown-checking proxy
(``pulumi_policy/proxy.py``): touching a value that is unknown at preview (an id or output of another
resource) raises, and the engine then downgrades the whole policy to an advisory "can't run during
preview" note. Policies never want that, so the boundary first copies the props into plain Python
(:func:`plain`), with every unknown value replaced by the typed :data:`gpu_fabric.config.shapes.UNKNOWN`
and the wire's doubles turned back into ints where they are whole (``networkCardIndex: 1.0`` -> ``1``),
and hands policies :class:`~gpu_fabric.plan.resource_view.Resource` objects.

It also wraps what ``gpu-fabric check`` and the tests need to drive policies as the analyzer does:
the proxy itself (:func:`proxied`), the analyzer's exceptions, and pulumi_policy's own analyzer
servicer. These are private names of pulumi-policy (``_DictProxy``, ``_ListProxy``, ``_is_unknown``,
``_NotApplicableError``, ``_PolicyAnalyzerServicer``), read at the versions of
:data:`PULUMI_POLICY_VERSIONS`; a test pins the installed version to that range.
"""

from __future__ import annotations

import functools
import math
import threading
from typing import Any, Callable, Mapping, Optional

import pulumi_policy.policy as _analyzer_module
from google.protobuf import json_format as _json_format
from google.protobuf import struct_pb2
from pulumi_policy import PolicyResource, StackValidationArgs
from pulumi_policy.policy import _NotApplicableError, _PolicyAnalyzerServicer
from pulumi_policy.proxy import UnknownValueError, _DictProxy, _ListProxy, _is_unknown, unknown_checking_proxy

from gpu_fabric.config.shapes import UNKNOWN, Unknown, as_mapping
from gpu_fabric.plan.resource_view import Resource

PULUMI_POLICY_VERSIONS = ((1, 18), (2, 0))
"""The pulumi-policy releases this boundary was written against: at least 1.18, below 2.0 (as pyproject.toml
and policy/requirements.txt require)."""

NotApplicableError = _NotApplicableError
"""What ``args.not_applicable(reason)`` raises inside a policy (its ``reason`` is the note)."""

AnalyzerServicer = _PolicyAnalyzerServicer
"""pulumi_policy's analyzer gRPC servicer (``PolicyPack`` builds one, then serves it forever)."""

__all__ = ["AnalyzerServicer", "NotApplicableError", "UnknownValueError", "decode_non_finite_numbers", "plain",
           "proxied", "resource_of", "share_decoding_per_call", "stack_resources"]


class _CallScope:
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
        self.resources: dict[tuple[str, str], Resource] = {}


_calls = threading.local()
"""The current thread's :class:`_CallScope` (``scope``), set only while a wrapped analyzer call runs."""


def _scope() -> Optional[_CallScope]:
    return getattr(_calls, "scope", None)


def _one_decoding_per_call(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def call(self: Any, request: Any, context: Any) -> Any:
        _calls.scope = _CallScope()
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
    in a :class:`_CallScope`. Findings and messages are those of the unwrapped servicer, decoded once.
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
            scope = _scope()
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



def _is_unknown_sentinel(value: Any) -> bool:
    # pulumi_policy/proxy.py ``_is_unknown``: the engine's sentinels (``UNKNOWN_STRING_VALUE``
    # "04da6b54-80e4-46f7-96ec-b56ff0331ba9", the one pulumi/runtime/rpc.py ``UNKNOWN`` writes for
    # every unknown, and its number/bool/array/object/asset/archive siblings). The analyzer keeps
    # them as strings inside its unknown-checking proxy (``_DictProxy``/``_ListProxy``), which raises
    # ``UnknownValueError`` on access; :func:`plain` reads past the proxy and types them instead.
    return bool(_is_unknown(value))


def _target(value: Any) -> Any:
    """The raw list/dict behind an unknown-checking proxy (without triggering its checks)."""
    if isinstance(value, (_DictProxy, _ListProxy)):
        return value["__target"]
    return value


def plain(value: Any) -> Any:
    """Copy ``value`` into plain dicts/lists; unknowns become :data:`UNKNOWN`, whole doubles ints."""
    # Exact types first: nearly every value is one, and the ``isinstance`` checks below go through the
    # abstract classes (the proxies are ``Mapping``/``Sequence``s) -- for every policy the engine calls,
    # over every resource's props, that was most of a stack validation's time.
    kind = type(value)
    if kind is str:
        return UNKNOWN if _is_unknown_sentinel(value) else value
    if kind is int or kind is bool or value is None:
        return value
    value = _target(value)
    kind = type(value)
    if kind is dict:
        return {str(key): plain(item) for key, item in value.items()}
    if kind is list:
        return [plain(item) for item in value]
    if isinstance(value, Unknown):
        return value
    if isinstance(value, str):  # a str subclass
        return UNKNOWN if _is_unknown_sentinel(value) else value
    if isinstance(value, float):
        return int(value) if math.isfinite(value) and value.is_integer() else value
    if isinstance(value, Mapping):
        return {str(key): plain(value[key]) for key in value}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if hasattr(value, "value") and type(value).__name__ == "Secret":
        return plain(value.value)
    return value


def proxied(value: Any) -> Any:
    """``value`` wrapped in the analyzer's unknown-checking proxy, as a policy receives it."""
    return unknown_checking_proxy(value)


def _parent_urn(resource: PolicyResource) -> str:
    if resource.parent is not None:
        return resource.parent.urn
    opts = getattr(resource, "opts", None)
    return str(getattr(opts, "parent", None) or "")


def _stack_resource(r: PolicyResource) -> Resource:
    return Resource(
        r.resource_type, r.name, r.urn, as_mapping(plain(r.props)), _parent_urn(r),
        {key: tuple(d.urn for d in deps) for key, deps in (r.property_dependencies or {}).items()},
    )


def stack_resources(args: StackValidationArgs) -> list[Resource]:
    """Every resource of a stack validation as :class:`Resource` with plain props (made once per
    ``AnalyzeStack`` call for all its policies, see :func:`share_decoding_per_call`)."""
    scope = _scope()
    if scope is None:
        return [_stack_resource(r) for r in args.resources]
    made = scope.resources
    return [made.get(("stack", r.urn)) or made.setdefault(("stack", r.urn), _stack_resource(r))
            for r in args.resources]


def _resource_of(args: Any) -> Resource:
    parent = str(getattr(getattr(args, "opts", None), "parent", None) or "")
    return Resource(args.resource_type, args.name, args.urn, as_mapping(plain(args.props)), parent)


def resource_of(args: Any) -> Resource:
    """The resource of a ``ResourceValidationArgs`` with plain props (made once per ``Analyze`` call)."""
    scope = _scope()
    if scope is None:
        return _resource_of(args)
    return scope.resources.get(("resource", args.urn)) or scope.resources.setdefault(
        ("resource", args.urn), _resource_of(args))


