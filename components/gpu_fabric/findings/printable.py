"""Text from the input or an API server, made safe to print on a terminal or in a CI log: the one escaper.

A name, a stack name, a server's answer can hold anything. Printed raw, a terminal escape
(``ESC[2J``, a bidirectional override) rewrites what the reader sees, and a line that starts with
``::`` is a GitHub Actions workflow command the runner acts on (``::error file=...::``,
``::add-mask::``, ``::stop-commands::``; docs.github.com, "Workflow commands for GitHub Actions": the
runner trims leading blanks and takes any line that then starts with ``::``), as is ``##vso[`` anywhere
in an Azure Pipelines log ("Logging commands"). So:

* :func:`one_line` is for a value put into a line of text: every control or invisible formatting
  character, newlines included, is shown as an escape (``\\n``, ``\\x1b``, ``\\u202e``);
* :func:`escape_output` is what the command line applies to everything it writes
  (:mod:`gpu_fabric.cli.output`): the same escapes except the line breaks and tabs the output is
  made of, and a backslash before ``::`` at the start of a line and between the ``#`` of ``##[``, so
  that no log runner reads a command in it, whatever string was spliced in where.

Deterministic: the same text always escapes the same way.
"""

from __future__ import annotations

import re

# C0 and C1 controls, DEL, zero-width and bidirectional formatting characters, line/paragraph separators.
_INVISIBLE = "\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff"
_CONTROL_IN_OUTPUT = re.compile(f"[{_INVISIBLE}]")
_CONTROL_IN_LINE = re.compile(f"[{_INVISIBLE}\n\t]")
_LEGACY_COMMAND = re.compile(r"##(?=(?:vso)?\[)")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    char = match.group(0)
    code = ord(char)
    return _NAMED.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def one_line(text: object) -> str:
    """``text`` as one printable line: control and invisible characters (line breaks too) as escapes."""
    return _LEGACY_COMMAND.sub("#\\\\#", _CONTROL_IN_LINE.sub(_escape, str(text)))


def escape_output(text: str, line_head: str | None = "") -> tuple[str, str | None]:
    """``text`` as it may be written after ``line_head`` (what the current line holds so far, while it is only
    blanks and at most one ``:``; ``None`` once it holds more), and the new line head.

    Line breaks and tabs stay; every other control character becomes an escape; a workflow command
    cannot start a line.
    """
    text = _LEGACY_COMMAND.sub("#\\\\#", _CONTROL_IN_OUTPUT.sub(_escape, text))
    lines = text.split("\n")
    heads = [line_head] + [""] * (len(lines) - 1)
    for index, (line, head) in enumerate(zip(lines, heads)):
        if head is None:
            continue
        joined = head + line
        start = len(joined) - len(joined.lstrip(" \t"))
        if joined.startswith("::", start):
            cut = max(start, len(head)) - len(head)  # before the first colon still to be written
            lines[index] = line[:cut] + "\\" + line[cut:]
    last = (heads[-1] if len(lines) == 1 else "")
    tail = (last + lines[-1]) if last is not None else None
    next_head = tail if tail is not None and len(tail.lstrip(" \t")) < 2 and set(tail.lstrip(" \t")) <= {":"} else None
    return "\n".join(lines), next_head


QUOTE_LIMIT = 64
"""How much of a value a message quotes: enough to recognise it, never a 5,000-digit wall."""


def quoted(text: object, limit: int = QUOTE_LIMIT) -> str:
    """``text`` quoted for a message (``repr``), cut after ``limit`` characters with how long it was."""
    text = str(text)
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(text):,} characters)"
