"""One pull-request comment for a digest, in the order a reviewer needs it, within GitHub's limit.

Layout (tfcmt's order, with the replace reasons stated up front -- pulumi/pulumi#6203 asks "why
is this replaced?"):

1. a hidden marker naming the stack, so a CI job finds and edits its own comment instead of
   adding one per push (pulumi/actions #519, #633) and several stacks never share one (#809);
2. a warning banner when anything is replaced or deleted or nodes roll;
3. the plan counts, then one list per op (replace, delete, update, create) with the reasons;
4. the property-level details, folded.

GitHub refuses a body over 65,536 characters (pulumi/actions #482), and a plan that does not fit
must still say what it does (tfcmt #1847), so the details are cut first, then the lists, each cut
saying how many entries it left out.
"""

from __future__ import annotations

import base64
import binascii
import difflib
import json
import re
from typing import Any

from gpu_fabric.diff.digest import SECRET, UNKNOWN, Change, Digest, Step

GITHUB_COMMENT_LIMIT = 65_536
# Room under the hard limit for what GitHub or a job adds around the body.
DEFAULT_BUDGET = 60_000
MAX_VALUE_CHARS = 160
MAX_BANNER_NAMES = 10
MAX_TEXT_DIFF_LINES = 40

LIST_ORDER: tuple[tuple[str, str], ...] = (
    ("replace", "Replace"), ("delete", "Delete"), ("update", "Update"), ("create", "Create"),
)
_MARKER_UNSAFE = re.compile(r"[^A-Za-z0-9._/-]")
# The CLI colours its messages; GitHub shows the escape codes raw (pulumi/actions #814, #1228).
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def marker(stack: str) -> str:
    """The hidden line that identifies this stack's comment (``<!-- gpu-fabric-diff stack=NAME -->``)."""
    return f"<!-- gpu-fabric-diff stack={_MARKER_UNSAFE.sub('_', stack) or '_'} -->"


def _code(text: str) -> str:
    """Inline code that survives any content (backticks inside are replaced)."""
    return "`" + str(text).replace("`", "'").replace("\n", " ") + "`"


def _value(value: Any) -> str:
    if value == UNKNOWN:
        return "(known after apply)"
    if value == SECRET:
        return SECRET
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 1] + "…"


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _reasons(step: Step) -> str:
    if step.op == "replace":
        reasons = step.replace_reasons or step.diff_reasons
        text = "replaced because " + ", ".join(_code(r) for r in reasons) + " changed" if reasons else "replaced"
    elif step.op == "update":
        keys = [change.key for change in step.changes] or step.diff_reasons
        shown = keys[:6]
        text = ", ".join(_code(k) for k in shown) + (f" and {len(keys) - len(shown)} more" if len(keys) > len(shown) else "")
    else:
        text = ""
    if step.rolls_nodes:
        text = (text + "; " if text else "") + "**rolls every node of the group**"
    return text


def _list_line(step: Step) -> str:
    line = f"- {_code(step.name)} ({_code(step.type)})"
    reasons = _reasons(step)
    if reasons:
        line += ": " + reasons
    for hint in step.hints:
        line += f"\n  - hint: {hint}"
    return line


def _banner(digest: Digest) -> list[str]:
    replaced = [s for s in digest.steps if s.op == "replace"]
    deleted = [s for s in digest.steps if s.op == "delete"]
    rolling = [s for s in digest.steps if s.rolls_nodes]
    if not (replaced or deleted or rolling):
        return []
    parts = []
    if replaced:
        parts.append(f"**replaces {_plural(len(replaced), 'resource')}**")
    if deleted:
        parts.append(f"**deletes {_plural(len(deleted), 'resource')}**")
    text = "This change " + " and ".join(parts) if parts else "This change"
    if rolling:
        names = ", ".join(_code(s.name) for s in rolling[:MAX_BANNER_NAMES])
        more = f" and {len(rolling) - MAX_BANNER_NAMES} more" if len(rolling) > MAX_BANNER_NAMES else ""
        text += (" and " if parts else " ") + f"**replaces the nodes** of {_plural(len(rolling), 'node group')}: {names}{more}"
    return ["> [!WARNING]", "> " + text + ".", ""]


def _summary(digest: Digest) -> str:
    counts = digest.change_summary
    if not digest.steps:
        return f"**No changes.** {_plural(counts.get('same', 0), 'resource')} unchanged."
    parts = [f"{counts.get(op, 0)} to {op}" for op, _ in LIST_ORDER if counts.get(op, 0)]
    others = sorted(op for op in counts if op not in dict(LIST_ORDER) and op != "same" and counts[op])
    parts += [f"{counts[op]} {op}" for op in others]
    return "**Plan:** " + ", ".join(parts) + f"; {counts.get('same', 0)} unchanged."


def _decoded_text(value: Any) -> str | None:
    """Multi-line text to diff line by line: plain multi-line strings, or base64 of text (user data)."""
    if not isinstance(value, str) or value in (SECRET, UNKNOWN):
        return None
    if "\n" in value:
        return value
    if len(value) >= 16 and re.fullmatch(r"[A-Za-z0-9+/=\s]+", value):
        try:
            decoded = base64.b64decode(value, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return None
        return decoded if "\n" in decoded else None
    return None


def _change_lines(change: Change) -> list[str]:
    if change.kind == "add":
        return [f"+ {change.key}: {_value(change.new)}"]
    if change.kind == "delete":
        return [f"- {change.key}: {_value(change.old)}"]
    old_text, new_text = _decoded_text(change.old), _decoded_text(change.new)
    if old_text is not None and new_text is not None:
        lines = [f"~ {change.key}: (text, line diff)"]
        body = [line for line in difflib.unified_diff(old_text.splitlines(), new_text.splitlines(), lineterm="", n=1)
                if not line.startswith(("---", "+++"))]
        shown = body[:MAX_TEXT_DIFF_LINES]
        lines += ["  " + line if line.startswith("@@") else line[0] + "   " + line[1:] for line in shown]
        if len(body) > len(shown):
            lines.append(f"    … {len(body) - len(shown)} more lines")
        return lines
    return [f"~ {change.key}: {_value(change.old)} => {_value(change.new)}"]


def _details_block(step: Step) -> str:
    kinds = {"replace": "+-", "update": "~", "create": "+", "delete": "-"}
    lines = [f"{kinds.get(step.op, '*')} {step.type} {step.name} ({step.op})", f"    [urn={step.urn}]"]
    for change in step.changes:
        lines += ["    " + line for line in _change_lines(change)]
    return "\n".join(lines).replace("```", "'''")


def _diagnostics(digest: Digest) -> list[str]:
    shown = [d for d in digest.diagnostics if d.get("severity") in ("error", "warning")]
    if not shown:
        return []
    lines = [f"#### Diagnostics ({len(shown)})"]
    for diagnostic in shown:
        message = " ".join(_ANSI.sub("", str(diagnostic.get("message", ""))).split())
        message = message if len(message) <= 300 else message[:299] + "…"
        where = f" {_code(diagnostic['urn'].rsplit('::', 1)[-1])}" if diagnostic.get("urn") else ""
        lines.append(f"- **{diagnostic['severity']}**{where}: {message.replace('`', chr(39))}")
    return lines + [""]


def _fit(lines: list[str], budget: int, more_line) -> tuple[list[str], int]:
    """Keep as many of ``lines`` as fit in ``budget`` characters (with room for the "more" line)."""
    kept: list[str] = []
    used = 0
    for index, line in enumerate(lines):
        left = len(lines) - index - 1
        reserve = len(more_line(left)) + 1 if left else 0
        if used + len(line) + 1 + reserve > budget:
            return kept, len(lines) - len(kept)
        kept.append(line)
        used += len(line) + 1
    return kept, 0


def render_markdown(digest: Digest, *, budget: int = DEFAULT_BUDGET) -> str:
    """The comment body; never longer than ``budget`` (at most 65,536) characters."""
    budget = min(budget, GITHUB_COMMENT_LIMIT)
    title = f"### gpu-fabric diff: stack {_code(digest.stack)}"
    head = [marker(digest.stack), title]
    if digest.source:
        head.append(f"From `pulumi preview --json` ({_code(digest.source.rsplit('/', 1)[-1])}).")
    elif digest.base or digest.head:
        head.append(f"{_code(digest.base or 'base')} → {_code(digest.head or 'head')}")
    head += [""] + _banner(digest) + [_summary(digest), ""] + _diagnostics(digest)
    text = "\n".join(head) + "\n"
    footer = ("\n<sub>Rendered by `gpu-fabric diff --from-preview-json`.</sub>\n" if digest.source else
              "\n<sub>Rendered offline by `gpu-fabric diff`; `--json` prints every step.</sub>\n")

    # The lists: every op's section, cut (with a count) only if they alone overflow.
    sections: list[str] = []
    remaining = budget - len(text) - len(footer) - 200
    for op, label in LIST_ORDER:
        steps = [step for step in digest.steps if step.op == op]
        if not steps:
            continue
        header = f"#### {label} ({len(steps)})"
        lines, cut = _fit([_list_line(step) for step in steps], max(remaining - len(header) - 2, 0),
                          lambda left, op=op: f"- … and {left} more to {op}")
        if cut:
            lines.append(f"- … and {cut} more to {op}")
        block = "\n".join([header, *lines]) + "\n\n"
        sections.append(block)
        remaining -= len(block)
    others = [step for step in digest.steps if step.op not in dict(LIST_ORDER)]
    if others:
        block = "\n".join([f"#### Other ({len(others)})", *(f"- {_code(s.name)}: {s.op}" for s in others[:50])])
        if len(others) > 50:
            block += f"\n- … and {len(others) - 50} more"
        if len(block) < remaining:
            sections.append(block + "\n\n")
            remaining -= len(block) + 2
    text += "".join(sections)

    # The details, folded, cut first.
    detailed = [step for step in digest.steps if step.changes]
    if detailed:
        opening = f"<details><summary>Details ({_plural(len(detailed), 'changed resource')})</summary>\n\n```diff\n"
        closing = "```\n</details>\n"
        room = budget - len(text) - len(footer) - len(opening) - len(closing)
        blocks, cut = _fit([_details_block(step) for step in detailed], room,
                           lambda left: f"… {left} more resources' details not shown")
        if cut:
            blocks.append(f"… {cut} more resources' details not shown")
        if room > 0:
            text += opening + "\n".join(blocks) + "\n" + closing
    text += footer
    if len(text) > budget:  # only if the head itself overflows: keep the marker, counts and note
        text = "\n".join([marker(digest.stack), title, "", _summary(digest), "",
                          "The plan is too large for one comment; run `gpu-fabric diff --json`."]) + "\n"
    return text
