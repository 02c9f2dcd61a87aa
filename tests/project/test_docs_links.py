"""Every relative link and ``#anchor`` in README.md and docs/*.md resolves, as GitHub renders them.

A link to a file or folder of the repository must name one that exists; an anchor must be the slug of a
heading of its target file (or an explicit ``<a name>``/``id``), with GitHub's slug rules: lower case,
punctuation other than ``-`` and ``_`` dropped, each space a ``-``, and ``-1``, ``-2``... for repeated
headings (github-slugger, which github.com uses). Links in code spans and fenced code are not links.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from functools import lru_cache
from pathlib import Path
from urllib.parse import unquote

import pytest

PROJECT_DIR = Path(__file__).resolve().parents[2]
DOCUMENTS = [PROJECT_DIR / "README.md", *sorted((PROJECT_DIR / "docs").glob("*.md")),
             # Every other Markdown file the repository ships (issue 38: dead anchors in every shipped file).
             *sorted(path for pattern in ("*.md", "examples/**/*.md", "tests/**/*.md", "components/**/*.md")
                     for path in PROJECT_DIR.glob(pattern) if path.name != "README.md" or path.parent != PROJECT_DIR)]

FENCE = re.compile(r"^\s{0,3}(```|~~~)")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEFINITION = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
HTML_ANCHOR = re.compile(r"<a\s+[^>]*(?:name|id)=\"([^\"]+)\"", re.IGNORECASE)
EXTERNAL = re.compile(r"^(?:[a-z][a-z0-9+.-]*:|//)", re.IGNORECASE)


def prose_lines(text: str) -> list[tuple[int, str]]:
    """The lines outside fenced code, with their numbers."""
    lines, fenced = [], None
    for number, line in enumerate(text.splitlines(), 1):
        fence = FENCE.match(line)
        if fence:
            marker = fence.group(1)
            if fenced is None:
                fenced = marker
            elif marker == fenced:
                fenced = None
            continue
        if fenced is None:
            lines.append((number, line))
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text (github-slugger): inline markup gone, then the slug rules."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading keeps its text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.replace("`", "").replace("*", "")
    text = text.lower()
    kept = []
    for char in text:
        category = unicodedata.category(char)
        if char in "-_ " or category[0] in "LNM":
            kept.append(char)
    return "".join(kept).replace(" ", "-")


@lru_cache(maxsize=None)
def anchors(path: Path) -> frozenset[str]:
    """Every anchor a Markdown file offers: its headings' slugs (repeats numbered) and explicit HTML anchors."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    for _, line in prose_lines(path.read_text(encoding="utf-8")):
        heading = HEADING.match(line)
        if heading:
            base = slug(heading.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
        found.update(HTML_ANCHOR.findall(line))
    return frozenset(found)


def links(path: Path) -> list[tuple[int, str]]:
    """The link targets of a Markdown file outside code, with their line numbers."""
    found = []
    for number, line in prose_lines(path.read_text(encoding="utf-8")):
        definition = REFERENCE_DEFINITION.match(line)
        if definition:
            found.append((number, definition.group(1)))
            continue
        for target in INLINE_LINK.findall(CODE_SPAN.sub("", line)):
            found.append((number, target))
    return found


def problem(document: Path, target: str) -> str | None:
    """Why a link target does not resolve, or ``None`` when it does (external links are not followed)."""
    if not target or EXTERNAL.match(target):
        return None
    path_part, _, anchor = target.partition("#")
    destination = (document.parent / unquote(path_part)).resolve() if path_part else document
    if path_part:
        if not destination.exists():
            return f"{path_part} does not exist"
        if not destination.is_relative_to(PROJECT_DIR):
            return f"{path_part} is outside the repository"
    if anchor:
        if destination.is_dir() or destination.suffix.lower() != ".md":
            return None  # GitHub's line anchors (#L10) and anchors into rendered non-Markdown files are not checked
        if unquote(anchor).lower() not in anchors(destination):
            return f"{destination.relative_to(PROJECT_DIR)} has no heading or anchor #{anchor}"
    return None


def test_the_documents_exist():
    assert (PROJECT_DIR / "README.md").is_file() and len(DOCUMENTS) > 1


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(PROJECT_DIR)))
def test_every_relative_link_and_anchor_resolves(document):
    broken = [f"{document.relative_to(PROJECT_DIR)}:{number}: ({target}) {reason}"
              for number, target in links(document)
              if (reason := problem(document, target)) is not None]
    assert broken == [], "\n".join(broken)


@pytest.mark.parametrize("heading, expected", [
    ("`schema`: editor completion", "schema-editor-completion"),
    ("What gpu-fabric is", "what-gpu-fabric-is"),
    ("Exit codes (0, 1, 2)", "exit-codes-0-1-2"),
    ("`render --out DIR`", "render---out-dir"),
    ("EFA & RDMA: one fabric", "efa--rdma-one-fabric"),
    ("snake_case keys", "snake_case-keys"),
    ("A [linked](other.md) heading", "a-linked-heading"),
])
def test_slugs_follow_github(heading, expected):
    assert slug(heading) == expected


def test_repeated_headings_are_numbered(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Usage\n\n## Usage\n\n```\n# not a heading\n```\n\n## Usage\n", encoding="utf-8")
    assert anchors(page) == {"usage", "usage-1", "usage-2"}


def test_a_broken_link_and_a_broken_anchor_are_named(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "PROJECT_DIR", tmp_path)
    (tmp_path / "other.md").write_text("# Present\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text("[a](missing.md) [b](other.md#absent) [c](other.md#present) [d](https://example.com/x#y)"
                    " `[e](not-a-link.md)`\n", encoding="utf-8")
    reasons = [problem(page, target) for _, target in links(page)]
    assert reasons == ["missing.md does not exist", "other.md has no heading or anchor #absent", None, None]
