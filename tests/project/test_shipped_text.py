"""Every tracked text file is free of merge-conflict markers, and docs/policies.md lists every policy.

docs/policies.md once shipped ``<<<<<<< HEAD`` ... ``>>>>>>> i28v`` in its policy table and nothing noticed
(issue 38). A conflict marker is a line starting with exactly seven ``<``, ``=`` or ``>`` (git's
``merge.conflictStyle`` default; ``diff3`` adds seven ``|``), followed by a space and a label or by the end
of the line for ``=======``. Markdown setext underlines of ``=`` are longer or shorter than seven in this
repository; a file that needs a literal seven-``=`` line can be listed in ALLOWED.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

PROJECT_DIR = Path(__file__).resolve().parents[2]

MARKER = re.compile(r"^(?:<{7}|>{7}|\|{7})(?: .*)?$|^={7}$", re.MULTILINE)
ALLOWED: frozenset[str] = frozenset()


def tracked_text_files() -> list[Path]:
    """The files git tracks in this checkout that decode as UTF-8 text (binary data such as .gz skipped)."""
    try:
        listed = subprocess.run(["git", "ls-files", "-z"], cwd=PROJECT_DIR, capture_output=True,
                                check=True, timeout=60).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the tracked files cannot be listed")
    files = []
    for name in sorted(filter(None, listed.decode().split("\0"))):
        path = PROJECT_DIR / name
        if name in ALLOWED or not path.is_file():
            continue
        data = path.read_bytes()
        if b"\0" in data:
            continue
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        files.append(path)
    return files


def conflict_markers(text: str) -> list[int]:
    """The 1-based line numbers of conflict-marker lines in a text."""
    return [text.count("\n", 0, match.start()) + 1 for match in MARKER.finditer(text)]


def test_the_marker_pattern_finds_a_conflict_and_leaves_markdown_alone():
    conflict = "a\n<<<<<<< HEAD\nb\n=======\nc\n>>>>>>> i28v\n"
    assert conflict_markers(conflict) == [2, 4, 6]
    assert conflict_markers("Title\n=====\nTitle\n==========\n`<<<<<<<< x`\n") == []


def test_no_tracked_text_file_holds_a_conflict_marker():
    files = tracked_text_files()
    assert len(files) > 100, "git ls-files listed too few files to be this checkout"
    found = {str(path.relative_to(PROJECT_DIR)): lines for path in files
             if (lines := conflict_markers(path.read_text(encoding="utf-8")))}
    assert found == {}, f"unresolved merge-conflict markers (file: line numbers): {found}"


def test_docs_policies_lists_every_policy_of_the_pack_once():
    """The table is written by hand, so a merge that drops a row (as resolving the conflict above could) fails."""
    from gpu_fabric.policies import ALL_POLICIES

    text = (PROJECT_DIR / "docs" / "policies.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\|[^|\n]*\| `([a-z0-9-]+)` \| (mandatory|advisory) \|", text, re.MULTILINE)
    named = [name for name, _ in rows]
    assert sorted(named) == sorted(policy.name for policy in ALL_POLICIES)
    levels = {policy.name: policy.enforcement_level.value for policy in ALL_POLICIES}
    assert {name: level for name, level in rows} == levels
