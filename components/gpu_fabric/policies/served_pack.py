"""The ready pack's policies as its process serves them: described at once, their rules imported behind.

Under ``pulumi preview --policy-pack``, the engine starts the pack, waits for its handshake (the port it
prints) and asks for its policies (``GetAnalyzerInfo``) before the stack program registers its first
resource; a Python pack's start-up therefore adds to the preview's wall time. Importing every policy
imports every rule module of every domain (about a quarter of a second on the 2-core machine of
``benchmarks/engine_preview.py``, issue 39), and none of it is needed to answer those first calls.

So the pack's process serves :func:`served_policies`: the same policies, built from
``pack_policies.json`` (each policy's name, kind, description, levels and config schema, written by
``scripts/generate_pack_policies.py`` from :data:`gpu_fabric.policies.ALL_POLICIES`; a test holds the file
to them field by field, as ``GetAnalyzerInfo`` answers), each validating through the real policy object,
which it imports on its first call. :func:`import_policies_in_background` starts that import at once in a
thread, so it runs while the engine starts the program; a call that arrives first waits for it on the
import lock. Verdicts, messages and paths are the real policies' own.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any, Mapping, Optional

from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyConfigSchema,
    ResourceValidationPolicy,
    Severity,
    StackValidationPolicy,
)

POLICIES_FILE = Path(__file__).with_name("pack_policies.json")
"""What the engine is told about each policy, in the pack's order (generated, see the module docstring)."""


def policy_description(policy: Policy) -> dict[str, Any]:
    """What ``GetAnalyzerInfo`` tells the engine about ``policy``, as plain JSON values."""
    if policy.framework is not None:  # no gpu-fabric policy names one; the file has no field for it
        raise ValueError(f"policy {policy.name}: a framework is not carried by {POLICIES_FILE.name}")
    if isinstance(policy, ResourceValidationPolicy) and policy.has_remediation():
        raise ValueError(f"policy {policy.name}: a remediation is not carried by {POLICIES_FILE.name}")
    schema = policy.config_schema
    return {
        "name": policy.name,
        "kind": "stack" if isinstance(policy, StackValidationPolicy) else "resource",
        "description": policy.description,
        "enforcementLevel": _value(policy.enforcement_level),
        "displayName": policy.display_name,
        "severity": _value(policy.severity),
        "tags": list(policy.tags) if policy.tags is not None else None,
        "remediationSteps": policy.remediation_steps,
        "url": policy.url,
        "configSchema": None if schema is None else {
            "properties": dict(schema.properties), "required": list(schema.required or [])},
    }


def policies_file_text(policies: list[Policy]) -> str:
    """The text of :data:`POLICIES_FILE` for ``policies`` (byte-stable)."""
    return json.dumps([policy_description(policy) for policy in policies], indent=1, sort_keys=True) + "\n"


def served_policies(path: Path = POLICIES_FILE) -> list[Policy]:
    """The pack's policies as described in ``path``, each validating through the real policy of its name."""
    return [_served(entry) for entry in json.loads(path.read_text(encoding="utf-8"))]


def import_policies_in_background() -> threading.Thread:
    """Start importing every policy in a daemon thread (what the first validation would otherwise wait for)."""
    thread = threading.Thread(target=_import_policies, name="gpu-fabric-policies-import", daemon=True)
    thread.start()
    return thread


def _import_policies() -> Mapping[str, Any]:
    from gpu_fabric.policies.all_policies import POLICIES_BY_NAME

    return POLICIES_BY_NAME


def _served(entry: Mapping[str, Any]) -> Policy:
    name = entry["name"]

    def validate(args: Any, report_violation: Any) -> Any:
        return _import_policies()[name].validate(args, report_violation)

    schema: Optional[Mapping[str, Any]] = entry["configSchema"]
    common: dict[str, Any] = {
        "enforcement_level": EnforcementLevel(entry["enforcementLevel"]) if entry["enforcementLevel"] else None,
        "config_schema": None if schema is None else PolicyConfigSchema(
            properties=dict(schema["properties"]), required=list(schema["required"]) or None),
        "display_name": entry["displayName"],
        "severity": Severity(entry["severity"]) if entry["severity"] else None,
        "tags": entry["tags"],
        "remediation_steps": entry["remediationSteps"],
        "url": entry["url"],
    }
    kind = StackValidationPolicy if entry["kind"] == "stack" else ResourceValidationPolicy
    return kind(name=name, description=entry["description"], validate=validate, **common)


def _value(member: Any) -> Any:
    return getattr(member, "value", member)
