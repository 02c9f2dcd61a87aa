"""One analyzer call, decoded once: the patches the pack's servicer gets before it serves.

pulumi_policy's servicer (``pulumi_policy/policy.py`` ``_PolicyAnalyzerServicer``, a private class at
:data:`gpu_fabric.policies.engine_wire.PULUMI_POLICY_VERSIONS`) decodes a request's resources once per
policy, and with protobuf's JSON mapping, which has no NaN or infinity. The two functions here change
both, idempotently, and import nothing of gpu-fabric's rules: the ready pack applies them before it
answers the engine's handshake (:mod:`gpu_fabric.policies.served_pack`), and
:mod:`gpu_fabric.policies.engine_wire` keeps each call's decoded resources in the scope they open.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from typing import Any, Callable, Iterator, Optional, Sequence

import pulumi_policy.policy as _analyzer_module
from google.protobuf import json_format as _json_format
from google.protobuf import struct_pb2
from pulumi_policy.policy import _PolicyAnalyzerServicer

from gpu_fabric.interpreter.collector import collector_paused

__all__ = ["CallScope", "call_scope", "current_scope", "decode_non_finite_numbers", "judged_once",
           "share_decoding_per_call"]


class CallScope:
    """What one analyzer call (``Analyze`` or ``AnalyzeStack``) has decoded, for every policy it runs.

    pulumi_policy's servicer decodes the request once per policy: ``AnalyzeStack`` turns every resource's
    ``Struct`` into a dict for each of the pack's 22 stack policies, and each policy then copied every
    resource again into plain props (:func:`stack_resources`), so a stack's decoding grew as resources x
    policies. Within one call every policy is handed the same request, so the ``Struct`` decode, what
    pulumi_policy derives from it (:func:`_once_per_call`; each kept by the object it was made from, see
    :meth:`once`) and the plain :class:`Resource` (keyed by URN) are made once and shared; policies only read them.
    """

    def __init__(self) -> None:
        self.made: dict[tuple[str, int], tuple[Any, Any]] = {}  # (what, id(argument)) -> (argument, result)
        self.resources: dict[tuple[str, str], Any] = {}  # plan.resource_view.Resource
        self.judged: dict[str, tuple[tuple[Any, ...], Any]] = {}  # what -> (the resources judged, result)

    def once(self, what: str, argument: Any, make: Callable[[Any], Any]) -> Any:
        """``make(argument)``, made once in this call for the same ``argument`` object (the argument is kept, so
        its id stays its own while the call lasts)."""
        key = (what, id(argument))
        made = self.made.get(key)
        if made is None or made[0] is not argument:
            made = self.made[key] = (argument, make(argument))
        return made[1]

    def judged_once(self, what: str, resources: Sequence[Any], judge: Callable[[Sequence[Any]], Any]) -> Any:
        """``judge(resources)``, judged once in this call while the same resource objects come in, in the same order.

        Policies that read one judgement of the stack (``fabric-workloads`` and its advisory twin, each reporting
        one severity; the transfer analysis; the EFA domains) each get a list of their own from the servicer, but
        the same plain resources (:func:`stack_resources`, one per URN per call): the judgement is made for the
        first and handed to the others. What it returns is shared, so callers only read it.
        """
        held = tuple(resources)
        kept = self.judged.get(what)
        if kept is not None and len(kept[0]) == len(held) and all(a is b for a, b in zip(kept[0], held)):
            return kept[1]
        result = judge(held)
        self.judged[what] = (held, result)
        return result


_calls = threading.local()
"""The current thread's :class:`CallScope` (``scope``), set only while a wrapped analyzer call runs."""


def current_scope() -> Optional[CallScope]:
    return getattr(_calls, "scope", None)


def judged_once(what: str, resources: Sequence[Any], judge: Callable[[Sequence[Any]], Any]) -> Any:
    """``judge(resources)``, once per call for the same resources where a call is open (:meth:`CallScope.judged_once`);
    outside one, judged each time."""
    scope = current_scope()
    return judge(resources) if scope is None else scope.judged_once(what, resources, judge)


@contextlib.contextmanager
def call_scope() -> Iterator[CallScope]:
    """A :class:`CallScope` for this thread while the block runs (the one already open, inside another)."""
    scope = current_scope()
    if scope is not None:
        yield scope
        return
    _calls.scope = scope = CallScope()
    try:
        yield scope
    finally:
        _calls.scope = None


def _one_decoding_per_call(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def call(self: Any, request: Any, context: Any) -> Any:
        # The call's decoding allocates a dict per property of every resource, and the cyclic collector's
        # full passes walk the whole heap: with it running, AnalyzeStack of a 8,723-resource fleet took
        # 17.1 s CPU against 2.5 s for 2,219 (6.9x for 3.9x the resources), with it paused 6.1 s against
        # 1.3 s (benchmarks/engine_preview.py --pack-calls). Policies make no garbage cycles worth
        # collecting mid-call; the collector runs again on its own schedule when the call ends.
        with call_scope(), collector_paused():
            return method(self, request, context)

    call.__wrapped_by_gpu_fabric__ = True  # type: ignore[attr-defined]
    return call


def share_decoding_per_call() -> None:
    """Make each ``Analyze``/``AnalyzeStack`` call decode its resources once for all its policies, with the
    cyclic garbage collector paused while it runs (idempotent).

    The pack's entry point (``policy/__main__.py``) and ``gpu-fabric check --preview`` call this before they
    serve; it wraps two methods of pulumi_policy's servicer (a private class at :data:`PULUMI_POLICY_VERSIONS`)
    in a :class:`CallScope`. Findings and messages are those of the unwrapped servicer, decoded once.
    """
    for name in ("Analyze", "AnalyzeStack"):
        method = getattr(_PolicyAnalyzerServicer, name)
        if not getattr(method, "__wrapped_by_gpu_fabric__", False):
            setattr(_PolicyAnalyzerServicer, name, _one_decoding_per_call(method))
    for name in ("deserialize_properties", "unknown_checking_proxy"):
        function = getattr(_analyzer_module, name)
        if not getattr(function, "__wrapped_by_gpu_fabric__", False):
            setattr(_analyzer_module, name, _once_per_call(function))


def _once_per_call(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function(value)`` made once per analyzer call for the same ``value`` object, then handed out again.

    ``AnalyzeStack`` runs, for each of the pack's stack policies, ``unknown_checking_proxy(deserialize_properties(
    decoded))`` over every resource (``pulumi_policy/policy.py``): with the decode shared, the same dict goes in
    each time, and these two made most of a stack check's CPU (a 2,219-resource fleet: 48,818 proxies built for
    2,219 resources). Within a call every policy now gets the same proxy of a resource's properties. gpu-fabric's
    policies only read it (each builds its plain :class:`~gpu_fabric.plan.resource_view.Resource` from it, also
    once per call); a policy of another pack composed with these, served after this patch, must not write
    into ``props`` either. Outside a call, or with more arguments, ``function`` runs as it is.
    """

    @functools.wraps(function)
    def once(value: Any, *args: Any) -> Any:
        scope = current_scope()
        if scope is None or args:
            return function(value, *args)
        return scope.once(function.__name__, value, function)

    once.__wrapped_by_gpu_fabric__ = True  # type: ignore[attr-defined]
    return once


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
            return scope.once("struct", message, _struct_dict)
        return _json_format.MessageToDict(message, *args, **kwargs)


def decode_non_finite_numbers() -> None:
    """Make the analyzer decode NaN and infinite numbers instead of failing the call (idempotent).

    The pack's entry point (``policy/__main__.py``) and ``gpu-fabric check --preview`` call this before
    they serve; it replaces the ``json_format`` module pulumi_policy's servicer reads (a private
    attribute of ``pulumi_policy.policy`` at :data:`PULUMI_POLICY_VERSIONS`).
    """
    if not isinstance(_analyzer_module.json_format, _NonFiniteTolerantJsonFormat):
        _analyzer_module.json_format = _NonFiniteTolerantJsonFormat()  # type: ignore[assignment]
