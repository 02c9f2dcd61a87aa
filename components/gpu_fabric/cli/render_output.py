"""Writing a render into ``--out DIR`` without touching anything gpu-fabric did not write.

A ledger (``DIR/.gpu-fabric-render``) lists the files the previous render wrote. A new render

* refuses, before writing anything, to overwrite a file that is not in the ledger (unless it
  already holds exactly what would be written) or to write through a symbolic link, and to place a file outside ``DIR`` (every path component is checked,
  so no object name or namespace can climb out);
* removes only the ledger's files that the new render no longer writes, and the folders that this
  leaves empty;
* writes its files and the new ledger.
"""

from __future__ import annotations

import json
import re
from pathlib import Path, PurePosixPath
from typing import Mapping

LEDGER = ".gpu-fabric-render"
# A file or folder name gpu-fabric writes: Kubernetes names, kinds, "_cluster", ".yaml"/".json".
_SAFE_COMPONENT = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,254}$")


class OutputError(ValueError):
    """The render cannot be written without touching files gpu-fabric did not write."""


def safe_relative_path(path: str) -> PurePosixPath:
    """``path`` as a relative path of safe components; ``OutputError`` for ``..``, ``/``-rooted and odd names."""
    relative = PurePosixPath(path)
    if relative.is_absolute() or not relative.parts or any(
            part in (".", "..") or not _SAFE_COMPONENT.match(part) for part in relative.parts):
        raise OutputError(f"{path!r} is not a plain relative file name; it could land outside the output folder")
    return relative


def _legacy_render(out: Path) -> set[PurePosixPath]:
    """The files of a render made before the ledger existed: ``resources.json`` (a gpu-fabric
    listing) and the ``k8s/**/*.yaml`` beside it. Anything else in the folder stays foreign."""
    listing = out / "resources.json"
    try:
        resources = json.loads(listing.read_text(encoding="utf-8")) if listing.is_file() and not listing.is_symlink() else None
    except (OSError, ValueError):
        return set()
    if not (isinstance(resources, list) and resources
            and all(isinstance(r, dict) and {"urn", "type", "inputs"} <= set(r) for r in resources)):
        return set()
    files = {PurePosixPath("resources.json")}
    manifests = out / "k8s"
    if manifests.is_dir() and not manifests.is_symlink():
        for path in manifests.rglob("*.yaml"):
            if path.is_file() and not path.is_symlink():
                try:
                    files.add(safe_relative_path(path.relative_to(out).as_posix()))
                except OutputError:
                    continue
    return files


def _previous_files(out: Path) -> set[PurePosixPath]:
    ledger = out / LEDGER
    if not ledger.exists():
        return _legacy_render(out)
    if not ledger.is_file() or ledger.is_symlink():
        return set()
    try:
        listed = json.loads(ledger.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    files = set()
    for entry in listed if isinstance(listed, list) else []:
        try:
            files.add(safe_relative_path(entry))
        except (OutputError, TypeError):
            continue  # a tampered ledger must not make us delete anything outside our files
    return files


def _problems(out: Path, files: Mapping[PurePosixPath, str], previous: set[PurePosixPath]) -> list[str]:
    problems = []
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        return [f"{out} exists and is not a folder"]
    for relative in sorted(files):
        target = out.joinpath(*relative.parts)
        for parent in list(reversed(relative.parents))[1:]:
            folder = out.joinpath(*parent.parts)
            if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
                problems.append(f"{folder} is in the way (not a folder gpu-fabric can write into)")
        if target.is_symlink() or (target.exists() and not (target.is_file() and (
                relative in previous or _holds(target, files[relative])))):
            problems.append(f"{target} exists and was not written by gpu-fabric render; move it away or choose another --out")
    return sorted(set(problems))


def _holds(target: Path, text: str) -> bool:
    """The file already holds exactly ``text`` (rewriting it changes nothing; renders made before the ledger)."""
    try:
        return target.stat().st_size == len(text.encode("utf-8")) and target.read_text(encoding="utf-8") == text
    except (OSError, UnicodeDecodeError):
        return False


def write_output(out: Path, files: Mapping[str, str]) -> None:
    """Write ``files`` (relative path -> text) under ``out`` as described above; all-or-nothing checks first."""
    planned = {safe_relative_path(path): text for path, text in files.items()}
    previous = _previous_files(out)
    problems = _problems(out, planned, previous)
    if problems:
        raise OutputError("; ".join(problems))
    for stale in sorted(previous - set(planned), reverse=True):
        target = out.joinpath(*stale.parts)
        if target.is_file() and not target.is_symlink():
            target.unlink()
        for parent in stale.parents:
            folder = out.joinpath(*parent.parts)
            if parent.parts and folder.is_dir() and not folder.is_symlink() and not any(folder.iterdir()):
                folder.rmdir()
    out.mkdir(parents=True, exist_ok=True)
    for relative, text in sorted(planned.items()):
        target = out.joinpath(*relative.parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    (out / LEDGER).write_text(json.dumps(sorted(str(p) for p in planned), indent=1) + "\n", encoding="utf-8")
