"""Test helpers for the policies: resources from plain dicts, run a policy, read its violations.

Modelled on pulumi-policy-aws's ``createResourceValidationArgs`` / ``assertHasResourceViolation``:
fixtures are plain props (built with the project's own builders where they exist), the policy runs
through ``gpu_fabric.policies.runner`` exactly as the analyzer would run it.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence

from pulumi_policy import EnforcementLevel, Policy, Severity

from gpu_fabric.plan.resource_view import Resource
from gpu_fabric.policies.runner import Violation, resource_args, run_policy, stack_args

STACK = "test"
PROJECT = "gpu-fabric"
PROJECT_DIR = Path(__file__).resolve().parents[2]


def urn(type_: str, name: str, parent_types: Sequence[str] = ()) -> str:
    """A URN the engine would give ``name`` of ``type_`` under parents of ``parent_types``."""
    qualified = "$".join([*parent_types, type_])
    return f"urn:pulumi:{STACK}::{PROJECT}::{qualified}::{name}"


def resource(type_: str, props: Mapping[str, Any], name: str = "r", parent: Optional[Resource] = None) -> Resource:
    """A resource of ``type_`` with ``props`` (copied), optionally under ``parent``."""
    parent_types: list[str] = []
    if parent is not None:
        qualified = parent.urn.split("::")[2]
        parent_types = qualified.split("$")
    return Resource(type_, name, urn(type_, name, parent_types), copy.deepcopy(dict(props)), parent.urn if parent else "")


def k8s(manifest: Mapping[str, Any], name: Optional[str] = None, parent: Optional[Resource] = None,
        patch: bool = False) -> Resource:
    """A pulumi-kubernetes resource carrying ``manifest`` (type from its apiVersion and kind)."""
    api_version, kind = manifest["apiVersion"], manifest["kind"]
    group_version = api_version if "/" in api_version else f"core/{api_version}"
    type_ = f"kubernetes:{group_version}:{kind}{'Patch' if patch else ''}"
    meta = manifest.get("metadata") or {}
    default = f"{meta.get('namespace', '')}-{meta.get('name', kind.lower())}".strip("-")
    return resource(type_, manifest, name or default, parent)


def component(type_: str, props: Mapping[str, Any], name: str) -> Resource:
    """A component resource (``gpu-fabric:index:...``)."""
    return resource(type_, props, name)


def run(policy: Policy, resources: Iterable[Resource], config: Optional[Mapping[str, Any]] = None) -> list[Violation]:
    """Every violation ``policy`` reports over ``resources``."""
    return run_policy(policy, list(resources), config)


def messages(policy: Policy, resources: Iterable[Resource], config: Optional[Mapping[str, Any]] = None) -> list[str]:
    """The messages of every violation."""
    return [v.message for v in run(policy, resources, config)]


def assert_no_violations(policy: Policy, resources: Iterable[Resource], config=None) -> None:
    found = run(policy, resources, config)
    assert not found, "\n".join(f"{v.urn}: {v.message}" for v in found)


def assert_violation(policy: Policy, resources: Iterable[Resource], fragment: str, urn: Optional[str] = None,
                     config=None) -> Violation:
    """Assert one violation's message contains ``fragment`` (and it names ``urn``); return it."""
    found = run(policy, resources, config)
    for violation in found:
        if fragment in violation.message and (urn is None or violation.urn == urn):
            return violation
    listing = "\n".join(f"  {v.urn}: {v.message}" for v in found) or "  (none)"
    raise AssertionError(f"no violation containing {fragment!r}{' on ' + urn if urn else ''}; got:\n{listing}")


def assert_metadata(policy: Policy, enforcement: EnforcementLevel = EnforcementLevel.MANDATORY) -> None:
    """Rich metadata: description, severity, remediation steps, the expected enforcement."""
    assert policy.description and len(policy.description) > 30
    assert isinstance(policy.severity, Severity)
    assert policy.remediation_steps and len(policy.remediation_steps) > 30
    assert policy.enforcement_level == enforcement


def rendered(stack: str, project_dir: Path = PROJECT_DIR, config: Optional[dict] = None) -> list[Resource]:
    """A stack rendered offline, as plain resources."""
    from gpu_fabric.program.render import render_stack

    result = render_stack(stack, project_dir, config=config)
    return [Resource(r.type, r.name, r.urn, r.inputs, r.parent, r.dependencies) for r in result.resources]


__all__ = [
    "Resource", "Violation", "assert_metadata", "assert_no_violations", "assert_violation", "component",
    "k8s", "messages", "rendered", "resource", "resource_args", "run", "stack_args", "urn",
]


def replace_props(resources: Sequence[Resource], match, change) -> list[Resource]:
    """A copy of ``resources`` where each resource ``match(r)`` accepts gets ``change(props)`` applied
    (``change`` edits the copied props in place or returns new ones)."""
    out = []
    for r in resources:
        if match(r):
            props = copy.deepcopy(dict(r.props))
            props = change(props) or props
            r = Resource(r.type, r.name, r.urn, props, r.parent, r.property_dependencies)
        out.append(r)
    return out


def of_type(suffix: str, name_contains: str = ""):
    """A ``match`` for :func:`replace_props`: type ends with ``suffix`` and name contains the text."""
    return lambda r: r.type.endswith(suffix) and name_contains in r.name
