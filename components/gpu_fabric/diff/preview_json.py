"""Read a real ``pulumi preview --json`` digest into a :class:`Digest` (for jobs with credentials).

The file is what pulumi/pulumi ``sdk/pkg/display/json.go`` prints: ``{config, steps, diagnostics,
duration, changeSummary}``; ``steps`` and ``changeSummary`` are omitted when empty. A replacement
appears as up to three steps with one URN (``replace``, ``create-replacement``,
``delete-replaced``); they become one ``replace`` step. Values are already masked by the engine
(``[secret]``); they are masked again in case the file came from elsewhere.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

from gpu_fabric.diff.compare import redact
from gpu_fabric.diff.digest import Change, Digest, Step, sort_steps
from gpu_fabric.diff.paths import parse_path
from gpu_fabric.diff.replace_rules import rolls_nodes
from gpu_fabric.diff.source import DiffInputError
from gpu_fabric.program.urn import parse_urn

_REPLACE_OPS = {"replace", "create-replacement", "delete-replaced"}
_QUIET_OPS = {"same", "read", "refresh"}


def load_preview_digest(path: Path, *, stack: Optional[str] = None) -> Digest:
    """Parse ``path``; a malformed file is a one-line :class:`DiffInputError` naming it."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as error:
        raise DiffInputError(f"preview file {path}: cannot be read: {error.strerror or error}") from None
    try:
        document = json.loads(text)
    except ValueError as error:
        raise DiffInputError(f"preview file {path}: not JSON ({error})") from None
    return digest_from_preview(document, source=str(path), stack=stack)


def _fail(source: str, message: str) -> DiffInputError:
    return DiffInputError(f"preview file {source}: {message}")


def _value_at(state: Any, path: tuple) -> Any:
    value = state.get("inputs") if isinstance(state, dict) else None
    for segment in path:
        if isinstance(value, dict) and isinstance(segment, str) and segment in value:
            value = value[segment]
        elif isinstance(value, list) and isinstance(segment, int) and 0 <= segment < len(value):
            value = value[segment]
        else:
            return None
    return redact(value)


def _changes(step: dict[str, Any], source: str, where: str) -> list[Change]:
    detailed = step.get("detailedDiff")
    replace_reasons = set(step.get("replaceReasons") or [])
    changes = []
    if isinstance(detailed, dict) and detailed:
        items = [(key, value.get("kind", "update") if isinstance(value, dict) else "update") for key, value in detailed.items()]
    else:  # a provider without detailed diff: the top-level keys only
        items = [(key, "update") for key in step.get("diffReasons") or []]
    for key, kind in sorted(items):
        if not isinstance(key, str) or not isinstance(kind, str):
            raise _fail(source, f"{where}.detailedDiff has a non-string key or kind")
        try:
            path = parse_path(key)
        except ValueError:
            path = (key,)
        replaces = kind.endswith("-replace") or key in replace_reasons or str(path[:1][0] if path else "") in replace_reasons
        base_kind = kind[: -len("-replace")] if kind.endswith("-replace") else kind
        changes.append(Change(path, base_kind, _value_at(step.get("oldState"), path),
                              _value_at(step.get("newState"), path), replaces))
    return changes


def digest_from_preview(document: Any, *, source: str = "<preview>", stack: Optional[str] = None) -> Digest:
    """A :class:`Digest` of a parsed ``PreviewDigest``."""
    if not isinstance(document, dict):
        raise _fail(source, "the top level is not a JSON object (expected `pulumi preview --json` output)")
    steps_in = document.get("steps")
    steps_in = [] if steps_in is None else steps_in
    if not isinstance(steps_in, list):
        raise _fail(source, "`steps` is not a list")
    merged: dict[str, dict[str, Any]] = {}
    ops: dict[str, str] = {}
    for index, step in enumerate(steps_in):
        where = f"steps[{index}]"
        if not isinstance(step, dict) or not isinstance(step.get("op"), str) or not isinstance(step.get("urn"), str):
            raise _fail(source, f"{where} needs a string `op` and `urn`")
        try:
            parse_urn(step["urn"])
        except ValueError:
            raise _fail(source, f"{where}.urn is not a Pulumi URN: {step['urn']!r}") from None
        op = "replace" if step["op"] in _REPLACE_OPS else step["op"]
        urn = step["urn"]
        # Keep the step that carries the diff (``replace``), fill in the states from its siblings.
        if urn in merged and merged[urn].get("detailedDiff") and not step.get("detailedDiff"):
            merged[urn].setdefault("oldState", step.get("oldState"))
            merged[urn].setdefault("newState", step.get("newState"))
            continue
        merged[urn] = {**merged.get(urn, {}), **{k: v for k, v in step.items() if v is not None}, "_where": where}
        ops[urn] = op

    steps = []
    for urn, step in merged.items():
        op = ops[urn]
        if op in _QUIET_OPS:
            continue
        state = step.get("newState") or step.get("oldState") or {}
        type_ = str(state["type"]) if isinstance(state, dict) and state.get("type") else parse_urn(urn).type
        changes = _changes(step, source, step["_where"])
        reasons = step.get("replaceReasons")
        steps.append(Step(
            op, urn, type_, changes,
            rolls_nodes=rolls_nodes(type_, op, [c.path for c in changes]),
            old_state=redact(step.get("oldState")) if step.get("oldState") else None,
            new_state=redact(step.get("newState")) if step.get("newState") else None,
            replace_reasons_override=[str(r) for r in reasons] if isinstance(reasons, list) and op == "replace" else None,
            diff_reasons_override=[str(r) for r in step["diffReasons"]] if isinstance(step.get("diffReasons"), list) else None,
        ))

    summary = document.get("changeSummary")
    if summary is None:
        summary = {}
        for op in ops.values():
            summary[op] = summary.get(op, 0) + 1
    if not isinstance(summary, dict) or not all(isinstance(k, str) and isinstance(v, int) for k, v in summary.items()):
        raise _fail(source, "`changeSummary` is not a map of op to count")
    diagnostics = document.get("diagnostics")
    diagnostics = [] if diagnostics is None else diagnostics
    if not isinstance(diagnostics, list):
        raise _fail(source, "`diagnostics` is not a list")
    kept = [{key: d[key] for key in ("urn", "message", "severity") if key in d} for d in diagnostics if isinstance(d, dict)]
    if stack is None:
        urns = list(merged)
        if not urns:
            raise _fail(source, "has no steps to take the stack name from; pass --stack NAME")
        stack = parse_urn(urns[0]).stack
    return Digest(stack, sort_steps(steps), dict(summary), diagnostics=kept, source=source)
