"""Run policies outside the engine: build the analyzer's argument objects from plain resources.

``gpu-fabric check`` (over an offline render) and the tests (over builder output) use this, so both
drive the policies exactly as the analyzer does: one ``ResourceValidationArgs`` per resource for
resource policies, one ``StackValidationArgs`` for stack policies, props wrapped in the same
unknown-checking proxy, and parents linked as ``PolicyResource`` objects.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Optional, Sequence

from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from gpu_fabric.policies.analyzer_calls import call_scope
from gpu_fabric.policies.engine_wire import NotApplicableError, UnknownValueError, proxied
from gpu_fabric.plan.resource_view import Resource


@dataclass(frozen=True)
class Violation:
    """One violation a policy reported."""

    policy: str
    enforcement: EnforcementLevel
    severity: Optional[str]
    message: str
    urn: str
    """URN of the resource at fault ("" for the stack as a whole)."""

    @property
    def mandatory(self) -> bool:
        return self.enforcement == EnforcementLevel.MANDATORY


def options(parent: str = "") -> PolicyResourceOptions:
    """Resource options as the analyzer builds them for a resource without special options."""
    return PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [], parent or None)


def resource_args(resource: Resource, config: Optional[Mapping[str, Any]] = None) -> ResourceValidationArgs:
    """``ResourceValidationArgs`` of one resource (props proxied as in ``Analyze``)."""
    return _resource_validation(resource, proxied(_copy(resource.props)), config)


def _resource_validation(resource: Resource, props: Any, config: Optional[Mapping[str, Any]]) -> ResourceValidationArgs:
    return ResourceValidationArgs(resource.type, props, resource.urn, resource.name, options(resource.parent), None, config)


def stack_args(resources: Sequence[Resource], config: Optional[Mapping[str, Any]] = None) -> StackValidationArgs:
    """``StackValidationArgs`` of a whole stack, parents and dependencies linked as in ``AnalyzeStack``."""
    resources = [r.stack_view for r in resources]
    policy_resources = [
        PolicyResource(r.type, proxied(_copy(r.props)), r.urn, r.name, options(r.parent), None, None, [], {})
        for r in resources
    ]
    by_urn = {pr.urn: pr for pr in policy_resources}
    for resource, policy_resource in zip(resources, policy_resources):
        if resource.parent in by_urn:
            policy_resource.parent = by_urn[resource.parent]
        policy_resource.property_dependencies = {
            key: [by_urn[urn] for urn in urns if urn in by_urn] for key, urns in resource.property_dependencies.items()}
    return StackValidationArgs(policy_resources, config)


_SCALARS = (str, int, float, bool, type(None))


def _copy(value: Any) -> Any:
    # Exact types first, without the abstract-class check below for every value (see engine_wire.plain).
    kind = type(value)
    if kind is dict:
        return {key: _copy(item) for key, item in value.items()}
    if kind is list:
        return [_copy(item) for item in value]
    if kind in _SCALARS:
        return value
    if isinstance(value, Mapping):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_copy(item) for item in value]
    return value


def _settle(result: Any) -> None:
    if inspect.isawaitable(result):
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(result)
        finally:
            loop.close()


def _severity(policy: Policy) -> Optional[str]:
    return policy.severity.value if policy.severity is not None else None


def _enforcement(policy: Policy, default: EnforcementLevel) -> EnforcementLevel:
    level = policy.enforcement_level or default
    return EnforcementLevel.MANDATORY if level == EnforcementLevel.REMEDIATE else level


@dataclass(frozen=True)
class NotApplicable:
    """A policy that declared itself not applicable to a resource (or the stack), and why."""

    policy: str
    reason: str
    urn: str


class _SharedArguments:
    """What :func:`run_policies` hands every policy of one run, made once: the analyzer's way within one call.

    The pack's servicer shares one decoding of a request among the policies of the call
    (:mod:`gpu_fabric.policies.analyzer_calls`); built per policy here, ``check`` copied every resource's props
    once for each of the pack's stack policies and each resource policy. Policies only read what they are handed.
    """

    def __init__(self, resources: Sequence[Resource]) -> None:
        self.resources = resources
        self._stack: Optional[list[PolicyResource]] = None
        self._props: dict[int, Any] = {}

    def stack(self, config: Optional[Mapping[str, Any]]) -> StackValidationArgs:
        if self._stack is None:
            self._stack = stack_args(self.resources).resources
        return StackValidationArgs(self._stack, config)

    def resource(self, index: int, config: Optional[Mapping[str, Any]]) -> ResourceValidationArgs:
        resource = self.resources[index]
        if index not in self._props:
            self._props[index] = proxied(_copy(resource.props))
        return _resource_validation(resource, self._props[index], config)


def run_policy(
    policy: Policy,
    resources: Sequence[Resource],
    config: Optional[Mapping[str, Any]] = None,
    default_enforcement: EnforcementLevel = EnforcementLevel.MANDATORY,
    not_applicable: Optional[list[NotApplicable]] = None,
    *,
    shared: Optional[_SharedArguments] = None,
) -> list[Violation]:
    """Every violation ``policy`` reports over ``resources`` (each resource, or the stack once).

    A policy that touches a value unknown at preview yields an advisory violation, as in the
    analyzer; a policy that declares itself not applicable yields no violation, and its reason is
    appended to ``not_applicable`` when given. A policy that raises anything else fails, as the
    analyzer fails the preview: a mandatory "policy failed" violation naming the error.
    """
    enforcement = _enforcement(policy, default_enforcement)
    if enforcement == EnforcementLevel.DISABLED:
        return []
    arguments = shared if shared is not None else _SharedArguments(resources)
    found: list[Violation] = []

    def reporter(default_urn: str, fixed: bool):
        def report(message: str, urn: Optional[str] = None) -> None:
            target = default_urn if fixed else (urn or "")
            found.append(Violation(policy.name, enforcement, _severity(policy), message, target))
        return report

    def attempt(call, default_urn: str) -> None:
        try:
            call()
        except UnknownValueError as error:
            found.append(Violation(policy.name, EnforcementLevel.ADVISORY, _severity(policy),
                                   f"can't run policy during preview: {error.message}", default_urn))
        except NotApplicableError as error:
            if not_applicable is not None:
                not_applicable.append(NotApplicable(policy.name, getattr(error, "reason", None) or "", default_urn))
        except Exception as error:  # noqa: BLE001 - the analyzer turns any other failure into an error too
            found.append(Violation(policy.name, EnforcementLevel.MANDATORY, _severity(policy),
                                   f"policy failed: {type(error).__name__}: {error}", default_urn))

    if isinstance(policy, ResourceValidationPolicy):
        for index, resource in enumerate(resources):
            resource_validation = arguments.resource(index, config)
            attempt(lambda: _settle(policy.validate(resource_validation, reporter(resource.urn, True))), resource.urn)
    elif isinstance(policy, StackValidationPolicy):
        stack_validation = arguments.stack(config)
        attempt(lambda: _settle(policy.validate(stack_validation, reporter("", False))), "")
    return found


def run_policies(
    policies: Iterable[Policy],
    resources: Sequence[Resource],
    config: Optional[Mapping[str, Mapping[str, Any]]] = None,
    not_applicable: Optional[list[NotApplicable]] = None,
) -> list[Violation]:
    """Every violation of every policy; ``config`` maps policy names to their configuration.

    As in one analyzer call, the policies share what they are handed (:class:`_SharedArguments`) and, where every
    resource has a URN of its own, the plain resources they decode from it (an analyzer call's scope,
    :func:`gpu_fabric.policies.analyzer_calls.call_scope`).
    """
    shared = _SharedArguments(resources)
    unique_urns = len({resource.urn for resource in resources}) == len(resources)
    violations: list[Violation] = []
    with call_scope() if unique_urns else contextlib.nullcontext():
        for policy in policies:
            violations.extend(run_policy(policy, resources, (config or {}).get(policy.name),
                                         not_applicable=not_applicable, shared=shared))
    return violations
