"""The result of a diff, shaped like ``pulumi preview --json``'s ``PreviewDigest``.

pulumi/pulumi ``sdk/pkg/display/json.go`` defines the digest: ``steps`` (each ``op``, ``urn``,
``oldState``/``newState``, ``diffReasons``, ``replaceReasons``, ``detailedDiff`` of
``{path: {kind, inputDiff}}``) and ``changeSummary`` (count per op). gpu-fabric adds ``type``
and ``rollsNodes`` to every step and ``hints`` where a reviewer must act (a missing alias).
Steps never carry a secret: secret values are ``[secret]``, as ``stateForJSONOutput`` masks them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from gpu_fabric.diff.paths import Path, format_path

OPS: tuple[str, ...] = ("create", "update", "replace", "delete", "same")
# Reviewers need the destructive steps first.
SEVERITY: dict[str, int] = {"replace": 0, "delete": 1, "update": 2, "create": 3, "same": 4}

SECRET = "[secret]"
# The value a preview shows for an output only known after apply: UnknownStringValue in
# pulumi/pulumi sdk/go/common/resource/plugin/rpc.go.
UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"


@dataclass(frozen=True)
class Change:
    """One changed property: ``kind`` is ``add``, ``delete`` or ``update``."""

    path: Path
    kind: str
    old: Any = None
    new: Any = None
    replaces: bool = False

    @property
    def key(self) -> str:
        """The path in Pulumi's spelling (a ``detailedDiff`` key)."""
        return format_path(self.path)


@dataclass
class Step:
    """One resource's planned operation."""

    op: str
    urn: str
    type: str
    changes: list[Change] = field(default_factory=list)
    rolls_nodes: bool = False
    hints: list[str] = field(default_factory=list)
    old_state: Optional[dict[str, Any]] = None
    new_state: Optional[dict[str, Any]] = None
    replace_reasons_override: Optional[list[str]] = None
    diff_reasons_override: Optional[list[str]] = None

    @property
    def name(self) -> str:
        """The resource name (the URN's last part)."""
        return self.urn.rsplit("::", 1)[-1]

    @property
    def diff_reasons(self) -> list[str]:
        """Top-level properties that changed, as the engine lists them."""
        if self.diff_reasons_override is not None:
            return self.diff_reasons_override
        return sorted({format_path(change.path[:1]) for change in self.changes if change.path})

    @property
    def replace_reasons(self) -> list[str]:
        """The changed fields that force replacement (full paths)."""
        if self.replace_reasons_override is not None:
            return self.replace_reasons_override
        return sorted({change.key for change in self.changes if change.replaces}) if self.op == "replace" else []

    def to_json(self) -> dict[str, Any]:
        """The step as a ``PreviewStep`` object plus gpu-fabric's fields."""
        detailed = {
            change.key: {"kind": change.kind + ("-replace" if change.replaces else ""), "inputDiff": True}
            for change in self.changes
        }
        document: dict[str, Any] = {
            "op": self.op,
            "urn": self.urn,
            "type": self.type,
            "diffReasons": self.diff_reasons,
            "replaceReasons": self.replace_reasons,
            "detailedDiff": dict(sorted(detailed.items())),
            "rollsNodes": self.rolls_nodes,
        }
        if self.old_state is not None:
            document["oldState"] = self.old_state
        if self.new_state is not None:
            document["newState"] = self.new_state
        if self.hints:
            document["hints"] = list(self.hints)
        return document


@dataclass
class Digest:
    """Every non-``same`` step of a stack, and the count of each op."""

    stack: str
    steps: list[Step]
    change_summary: dict[str, int]
    base: str = ""
    head: str = ""
    diagnostics: list[dict[str, Any]] = field(default_factory=list)
    source: str = ""
    """Where a digest read from a file came from (``pulumi preview --json`` output); empty for an offline diff."""

    @property
    def has_changes(self) -> bool:
        """True when any step is not ``same``."""
        return bool(self.steps)

    def to_json(self) -> dict[str, Any]:
        """``{steps, changeSummary}`` as ``pulumi preview --json`` prints them, plus where they came from."""
        document: dict[str, Any] = {
            "steps": [step.to_json() for step in self.steps],
            "changeSummary": dict(self.change_summary),
            "stack": self.stack,
        }
        if self.base:
            document["base"] = self.base
        if self.head:
            document["head"] = self.head
        if self.diagnostics:
            document["diagnostics"] = self.diagnostics
        if self.source:
            document["source"] = self.source
        return document


def sort_steps(steps: list[Step]) -> list[Step]:
    """Destructive first, then by URN: a stable order for JSON and Markdown alike."""
    return sorted(steps, key=lambda step: (SEVERITY.get(step.op, 9), step.urn))


def summarize(ops: list[str]) -> dict[str, int]:
    """Count per op, every op listed (zero included)."""
    return {op: sum(1 for each in ops if each == op) for op in OPS}
