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


MAX_PREVIEW_BYTES = 64 * 1024 * 1024
"""Largest preview file read (a fleet's preview is a few MB; more is not a preview, and would exhaust memory)."""

MAX_DEPTH = 64
"""Deepest nesting of arrays and objects accepted (resource states nest a dozen levels)."""

# RFC 8259 section 8.1: JSON text exchanged between systems is UTF-8; PowerShell's ``>`` writes
# UTF-16LE with a byte-order mark. Both are read; a BOM says which, else the RFC 4627 section 3
# pattern of zero bytes in the first two bytes tells UTF-16 without one.
_BOMS = ((b"\xef\xbb\xbf", "utf-8-sig"), (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16"))


def decode_preview_bytes(data: bytes, source: str) -> str:
    """``data`` as text: UTF-8 (BOM optional) or UTF-16 (BOM or RFC 4627 zero-byte pattern); else refused."""
    if data.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        raise _fail(source, "is UTF-32; write it as UTF-8 (pulumi preview --json > file on a POSIX shell does)")
    encoding = next((name for bom, name in _BOMS if data.startswith(bom)), None)
    if encoding is None and len(data) >= 2:
        if data[0] == 0 and data[1] != 0:
            encoding = "utf-16-be"
        elif data[0] != 0 and data[1] == 0:
            encoding = "utf-16-le"
    try:
        return data.decode(encoding or "utf-8")
    except UnicodeDecodeError as error:
        raise _fail(source, f"is not {encoding or 'UTF-8'} text (byte 0x{data[error.start]:02x} at offset {error.start}); "
                            "write it as UTF-8 or UTF-16 (PowerShell: | Out-File -Encoding utf8)") from None


def _depth_problem(document: Any) -> Optional[str]:
    """Where ``document`` nests deeper than :data:`MAX_DEPTH` (checked without recursion)."""
    pending: list[tuple[Any, int, str]] = [(document, 1, "")]
    while pending:
        value, depth, where = pending.pop()
        if not isinstance(value, (dict, list)):
            continue
        if depth > MAX_DEPTH:
            return where or "the top level"
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in items:
            pending.append((item, depth + 1, f"{where}[{key}]" if isinstance(key, int) else f"{where}.{key}".lstrip(".")))
    return None


def load_preview_digest(path: Path, *, stack: Optional[str] = None) -> Digest:
    """Parse ``path``; a malformed, oversized, deeply nested or non-UTF file is a one-line
    :class:`DiffInputError` naming it (and the step and field where the shape is wrong)."""
    path = Path(path)
    source = str(path)
    try:
        if not path.is_file():
            raise _fail(source, "is not a regular file")
        with path.open("rb") as handle:
            data = handle.read(MAX_PREVIEW_BYTES + 1)
    except OSError as error:
        raise DiffInputError(f"preview file {path}: cannot be read: {error.strerror or error}") from None
    if len(data) > MAX_PREVIEW_BYTES:
        raise _fail(source, f"is larger than {MAX_PREVIEW_BYTES // (1024 * 1024)} MiB; not a `pulumi preview --json` digest")
    text = decode_preview_bytes(data, source)
    try:
        document = json.loads(text)
    except RecursionError:
        raise _fail(source, f"nests arrays or objects deeper than {MAX_DEPTH} levels") from None
    except ValueError as error:
        raise DiffInputError(f"preview file {path}: not JSON ({error})") from None
    deep = _depth_problem(document)
    if deep is not None:
        raise _fail(source, f"nests arrays or objects deeper than {MAX_DEPTH} levels (at {deep})")
    return digest_from_preview(document, source=source, stack=stack)


def _fail(source: str, message: str) -> DiffInputError:
    return DiffInputError(f"preview file {source}: {message}")


def _check_step_shape(step: dict[str, Any], source: str, where: str) -> None:
    """Each field of a step the digest reads has the type pulumi's ``display/json.go`` writes."""
    for field in ("oldState", "newState", "detailedDiff"):
        if step.get(field) is not None and not isinstance(step[field], dict):
            raise _fail(source, f"{where}.{field} is not an object (got {type(step[field]).__name__})")
    for field in ("diffReasons", "replaceReasons"):
        value = step.get(field)
        if value is not None and not (isinstance(value, list) and all(isinstance(item, str) for item in value)):
            raise _fail(source, f"{where}.{field} is not a list of strings")
    for field in ("oldState", "newState"):
        state = step.get(field)
        if isinstance(state, dict):
            if state.get("type") is not None and not isinstance(state["type"], str):
                raise _fail(source, f"{where}.{field}.type is not a string")
            if state.get("inputs") is not None and not isinstance(state["inputs"], dict):
                raise _fail(source, f"{where}.{field}.inputs is not an object")
    for key, value in (step.get("detailedDiff") or {}).items():
        if isinstance(value, dict) and value.get("kind") is not None and not isinstance(value["kind"], str):
            raise _fail(source, f"{where}.detailedDiff[{key!r}].kind is not a string")


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
        _check_step_shape(step, source, where)
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
    for index, diagnostic in enumerate(diagnostics):
        if not isinstance(diagnostic, dict):
            raise _fail(source, f"diagnostics[{index}] is not an object")
        for key in ("urn", "message", "severity"):
            if diagnostic.get(key) is not None and not isinstance(diagnostic[key], str):
                raise _fail(source, f"diagnostics[{index}].{key} is not a string")
    kept = [{key: d[key] for key in ("urn", "message", "severity") if key in d} for d in diagnostics]
    if stack is None:
        urns = list(merged)
        if not urns:
            raise _fail(source, "has no steps to take the stack name from; pass --stack NAME")
        stack = parse_urn(urns[0]).stack
    return Digest(stack, sort_steps(steps), dict(summary), diagnostics=kept, source=source)
