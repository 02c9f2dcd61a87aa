"""Writing a render into ``--out DIR`` without touching anything gpu-fabric did not write.

A ledger (``DIR/.gpu-fabric-render``) lists the files the previous render wrote. A new render

* refuses, before writing anything, to overwrite a file that is not in the ledger (unless it
  already holds exactly what would be written) or to write through a symbolic link, and to place a file outside ``DIR`` (every path component is checked,
  so no object name or namespace can climb out);
* removes only the ledger's files that the new render no longer writes, and the folders that this
  leaves empty;
* writes its files and the new ledger.

Only the ledger is written durably (``fsync`` before its rename): first listing the previous render's files and the
new ones (unless the ledger on disk lists every new one already), then the new ones alone. The manifests are not: a render writes them again at will, and a
``fsync`` each cost the 2,138-file fleet of ``benchmarks/render_fleet.py`` 1.3 to 1.6 s of a 0.2 s write on this
project's 2-core machine. Whatever a power loss or a failed write leaves half-written is listed in the ledger on
disk, so the next render replaces or removes it instead of refusing it as a file gpu-fabric did not write.

All of it through folder handles (:mod:`gpu_fabric.config.safe_files`): a symbolic link, FIFO or
device where a file or folder belongs is refused, never followed or opened, and every file is
created under an exclusive temporary name and renamed into place.
"""

from __future__ import annotations

import json
import re
from pathlib import Path, PurePosixPath
from typing import Mapping

from gpu_fabric.config.safe_files import Folder, UnsafeFileError

LEDGER = ".gpu-fabric-render"
MAX_LEDGER_BYTES = 16 * 2**20
MAX_LISTING_BYTES = 256 * 2**20
"""Larger than any render's ``resources.json``: a bigger file is not one gpu-fabric wrote."""
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


def _legacy_render(out: Folder) -> set[PurePosixPath]:
    """The files of a render made before the ledger existed: ``resources.json`` (a gpu-fabric
    listing) and the ``k8s/**/*.yaml`` beside it. Anything else in the folder stays foreign."""
    if out.kind("resources.json") != "file":
        return set()
    try:
        resources = json.loads(out.read("resources.json", MAX_LISTING_BYTES).decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return set()
    if not (isinstance(resources, list) and resources
            and all(isinstance(r, dict) and {"urn", "type", "inputs"} <= set(r) for r in resources)):
        return set()
    files = {PurePosixPath("resources.json")}
    if out.kind("k8s") == "a folder":
        for path in (out.path / "k8s").rglob("*.yaml"):
            if path.is_file() and not path.is_symlink():
                try:
                    files.add(safe_relative_path(path.relative_to(out.path).as_posix()))
                except OutputError:
                    continue
    return files


def _write_ledger(out: Folder, files: set[PurePosixPath]) -> None:
    out.write(LEDGER, (json.dumps(sorted(str(p) for p in files), indent=1) + "\n").encode("utf-8"))


def _previous_files(out: Folder) -> set[PurePosixPath]:
    kind = out.kind(LEDGER)
    if kind is None:
        return _legacy_render(out)
    if kind != "file":
        return set()  # a link or a folder as the ledger lists nothing we may touch
    try:
        listed = json.loads(out.read(LEDGER, MAX_LEDGER_BYTES).decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return set()
    files = set()
    for entry in listed if isinstance(listed, list) else []:
        try:
            files.add(safe_relative_path(entry))
        except (OutputError, TypeError):
            continue  # a tampered ledger must not make us delete anything outside our files
    return files


def _problems(out: Folder, files: Mapping[PurePosixPath, str], previous: set[PurePosixPath]) -> list[str]:
    """Everything in the way of writing ``files``, checked through the folder handle without following links."""
    problems = []
    ledger = out.kind(LEDGER)
    if ledger not in (None, "file"):
        problems.append(f"{out.path / LEDGER} is {ledger}, not the ledger gpu-fabric render writes; move it away")
    for relative in sorted(files):
        try:
            folder = out.walk(relative)
        except FileNotFoundError:
            continue  # a folder on the way does not exist yet: nothing there to overwrite
        except UnsafeFileError as error:
            problems.append(f"{error} (in the way: not a folder gpu-fabric can write into)")
            continue
        with folder:
            kind = folder.kind(relative.name)
            target = out.path.joinpath(*relative.parts)
            if kind not in (None, "file") or (kind == "file" and relative not in previous
                                               and not _holds(folder, relative.name, files[relative])):
                what = f" (it is {kind})" if kind not in (None, "file") else ""
                problems.append(f"{target} exists and was not written by gpu-fabric render{what}; "
                                "move it away or choose another --out")
    return sorted(set(problems))


def _holds(folder: Folder, name: str, text: str) -> bool:
    """The file already holds exactly ``text`` (rewriting it changes nothing; renders made before the ledger)."""
    data = text.encode("utf-8")
    try:
        return folder.read(name, len(data)) == data
    except (OSError, UnsafeFileError):
        return False


def _remove_stale(out: Folder, stale: PurePosixPath) -> None:
    try:
        folder = out.walk(stale)
    except (FileNotFoundError, UnsafeFileError):
        return  # gone, or a folder on its way was replaced by a link: nothing of ours to remove there
    with folder:
        folder.remove(stale.name)
    for parent in stale.parents:
        if not parent.parts:
            break
        try:
            holder = out.walk(parent)
        except (FileNotFoundError, UnsafeFileError):
            return
        with holder:
            if not holder.remove_empty(parent.name):
                return


def write_output(out: Path, files: Mapping[str, str]) -> None:
    """Write ``files`` (relative path -> text) under ``out`` as described above; all-or-nothing checks first.

    Every file operation goes through a handle on ``out`` and its sub-folders
    (:mod:`gpu_fabric.config.safe_files`): no symbolic link is followed, not even one planted after
    the checks, and each file is replaced by renaming an exclusively created temporary file.
    """
    planned = {safe_relative_path(path): text for path, text in files.items()}
    out = Path(out)
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise OutputError(f"{out} exists and is not a folder")
    try:
        with Folder.open(out, create=True) as folder:
            previous = _previous_files(folder)
            problems = _problems(folder, planned, previous)
            if problems:
                raise OutputError("; ".join(problems))
            planned_files = set(planned)
            if not planned_files <= previous or folder.kind(LEDGER) is None:
                _write_ledger(folder, previous | planned_files)  # every file the writes below may leave behind
            for stale in sorted(previous - planned_files, reverse=True):
                _remove_stale(folder, stale)
            for relative, text in sorted(planned.items()):
                with folder.walk(relative, create=True) as parent:
                    parent.write(relative.name, text.encode("utf-8"), durable=False)
            _write_ledger(folder, planned_files)
    except UnsafeFileError as error:
        raise OutputError(str(error)) from None
