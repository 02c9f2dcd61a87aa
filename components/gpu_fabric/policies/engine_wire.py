"""The engine-wire boundary: with :mod:`~gpu_fabric.policies.analyzer_calls`, the only modules that touch
pulumi_policy's internals.

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

import math
from typing import Any, Mapping

from pulumi_policy import PolicyResource, StackValidationArgs
from pulumi_policy.policy import _NotApplicableError, _PolicyAnalyzerServicer
from pulumi_policy.proxy import UnknownValueError, _DictProxy, _ListProxy, _is_unknown, unknown_checking_proxy

from gpu_fabric.config.shapes import UNKNOWN, Unknown, as_mapping
from gpu_fabric.policies.analyzer_calls import current_scope, decode_non_finite_numbers, share_decoding_per_call
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
    scope = current_scope()
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
    scope = current_scope()
    if scope is None:
        return _resource_of(args)
    return scope.resources.get(("resource", args.urn)) or scope.resources.setdefault(
        ("resource", args.urn), _resource_of(args))


