"""What every ``gpu-fabric`` sub-command shares: exit codes, options, help layout.

* Exit codes (the same for every command): 0 success, 1 policy violations or a failed
  verification, 2 input the tool cannot use (an unreadable file, an invalid configuration, an
  unknown ref). ``diff --detailed-exitcode`` also uses 2 for "there are changes", as
  ``pulumi preview --expect-no-changes`` and ``terraform plan -detailed-exitcode`` do.
* ``--quiet`` / ``-q`` on every command: only what decides the outcome (verdicts, violations,
  problems) is printed; listings (EFA domains, grants, per-pool tables) are left out.
* ``--help`` prints the description as plain text (no reStructuredText markup) and an
  ``examples:`` block, one line per use, kept verbatim.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any, NoReturn, Sequence

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2

EXIT_CODES_TEXT = "exit status: 0 success, 1 policy violations or failed verification, 2 input gpu-fabric cannot use"


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions and the examples block as written (line breaks kept), options wrapped."""


_INVALID_CHOICE = re.compile(r"invalid choice: '([^']*)' \(choose from (.*)\)")


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser whose "invalid choice" error (a misspelt command or option value) says which
    choice was meant; exits 2 as argparse does."""

    def error(self, message: str) -> NoReturn:
        from gpu_fabric.config.suggestions import did_you_mean

        match = _INVALID_CHOICE.search(message)
        if match:
            message += did_you_mean(match.group(1), re.findall(r"'([^']*)'", match.group(2)))
        super().error(message)


# ``name``, :func:`name`, :class:`~pkg.Name`, *word* -> plain text.
_ROLE = re.compile(r":[a-z]+:`~?([^`]+)`")
_LITERAL = re.compile(r"``([^`]+)``")
_EMPHASIS = re.compile(r"(?<![\w*])\*([^*\s][^*]*)\*(?![\w*])")


def plain_text(text: str) -> str:
    """``text`` without reStructuredText markup (double back-quotes, roles, emphasis, ``::``)."""
    text = _ROLE.sub(lambda match: match.group(1).rsplit(".", 1)[-1], text)
    text = _LITERAL.sub(r"\1", text)
    text = _EMPHASIS.sub(r"\1", text)
    return text.replace("::\n", ":\n")


def folder_argument(text: str) -> Path:
    """An argparse ``type`` for a folder gpu-fabric writes or reads: ``""`` is refused (exit 2), since
    ``Path("")`` is the current folder and ``--out ""`` (an unset shell variable) would write into it."""
    if not text.strip():
        raise argparse.ArgumentTypeError("must name a folder, not an empty string (write . for the current folder)")
    return Path(text)


def quiet_parent() -> argparse.ArgumentParser:
    """The options every command takes (``--quiet``), as an argparse parent parser."""
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument("-q", "--quiet", action="store_true",
                        help="print only verdicts, violations and problems (no listings)")
    return parent


def add_command(
    subparsers: Any,
    name: str,
    *,
    summary: str,
    description: str = "",
    examples: Sequence[str],
    parents: Sequence[argparse.ArgumentParser] = (),
) -> argparse.ArgumentParser:
    """Add sub-command ``name``: one-line ``summary`` in the command list, plain-text ``description``,
    ``examples`` (each a whole command line) and the exit codes in ``--help``; ``--quiet`` included."""
    if not examples:
        raise ValueError(f"command {name}: every command's help shows at least one example")
    epilog = "examples:\n" + "\n".join(f"  {example}" for example in examples) + "\n\n" + EXIT_CODES_TEXT
    return subparsers.add_parser(
        name,
        help=summary,
        description=plain_text(description.strip() or summary),
        epilog=epilog,
        formatter_class=HelpFormatter,
        parents=[quiet_parent(), *parents],
    )
