"""A folder of a commit, written out as git stores it: blobs from the object database, symbolic links
resolved through the commit's own trees.

``git archive`` is not a faithful copy for a diff's base: it leaves out every path marked
``export-ignore`` in ``.gitattributes`` (gitattributes(5), "Creating an archive"), so a stack file a
team keeps out of its release tarballs looks absent at the base -- an existing stack shows as all
creates. It also writes symbolic links as links, which point nowhere in a temporary folder (a
stack file linked from a shared folder vanishes) or out of it (tarfile's ``data`` filter then
raises). Here the folder is listed with ``git ls-tree`` and its blobs read with ``git cat-file
--batch`` (git-ls-tree(1), git-cat-file(1)), which know no attributes; a link (mode ``120000``,
its blob holding the target) is followed inside the commit's trees component by component, as the
kernel follows it on a checkout, and what it names is written in its place. A link whose target
leaves the repository (an absolute path, or ``..`` above the top) names something git does not
hold: it is not written, and :meth:`CommitFolder.outside_link` says which link hides a path.
"""

from __future__ import annotations

import os
import stat
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

LINK_MODE = "120000"
TREE_TYPE = "tree"
BLOB_TYPE = "blob"
MAX_LINK_HOPS = 40
"""Links followed while resolving one path: Linux's limit (path_resolution(7), ``ELOOP``)."""


class GitTreeError(Exception):
    """git could not list or read the commit's objects; the message is git's, on one line."""


class OutsideTree(Exception):
    """A symbolic link leads out of the repository."""

    def __init__(self, link: str, target: str):
        super().__init__(f"{link} -> {target}")
        self.link = link
        self.target = target


class NotInTree(Exception):
    """A path (or a link's target) the commit does not hold, or a link loop."""


@dataclass(frozen=True)
class Entry:
    """One tree entry: ``mode``, object ``type`` and ``oid`` as ``git ls-tree`` prints them."""

    mode: str
    type: str
    oid: str

    @property
    def is_link(self) -> bool:
        return self.mode == LINK_MODE


def _run(repo: Path, args: list[str], stdin: bytes = b"") -> bytes:
    result = subprocess.run(["git", "-C", str(repo), *args], input=stdin, capture_output=True, check=False)
    if result.returncode != 0:
        message = " ".join(result.stderr.decode(errors="replace").split()) or f"git {args[0]} failed"
        raise GitTreeError(message)
    return result.stdout


def _parse_ls_tree(output: bytes) -> list[tuple[str, Entry]]:
    """``<mode> SP <type> SP <oid> TAB <path>`` records, NUL-terminated (``-z``)."""
    entries = []
    for record in output.split(b"\0"):
        if not record:
            continue
        meta, _, name = record.partition(b"\t")
        mode, kind, oid = meta.decode().split(" ")
        entries.append((os.fsdecode(name), Entry(mode, kind, oid)))
    return entries


@dataclass
class CommitTrees:
    """The trees and blobs of one commit, read lazily and cached."""

    repo: Path
    commit: str
    _trees: dict[str, dict[str, Entry]] = field(default_factory=dict)
    _blobs: dict[str, bytes] = field(default_factory=dict)

    _root: Optional[Entry] = None

    def root(self) -> Entry:
        """The commit's top tree."""
        if self._root is None:
            oid = _run(self.repo, ["rev-parse", "--verify", "--quiet", f"{self.commit}^{{tree}}"]).decode().strip()
            if not oid:
                raise GitTreeError(f"{self.commit} names no commit")
            self._root = Entry("040000", TREE_TYPE, oid)
        return self._root

    def children(self, tree: Entry) -> dict[str, Entry]:
        if tree.oid not in self._trees:
            self._trees[tree.oid] = dict(_parse_ls_tree(_run(self.repo, ["ls-tree", "-z", tree.oid])))
        return self._trees[tree.oid]

    def prefetch(self, tree: Entry) -> None:
        """Every folder under ``tree`` listed with one ``git ls-tree -r -t`` (not one git process per folder)."""
        if tree.oid in self._trees:
            return
        listed: dict[str, Entry] = {}
        self._trees[tree.oid] = {}
        for path, entry in _parse_ls_tree(_run(self.repo, ["ls-tree", "-r", "-t", "-z", tree.oid])):
            listed[path] = entry
            parent, _, name = path.rpartition("/")
            parent_oid = listed[parent].oid if parent else tree.oid  # -t lists a folder before its contents
            self._trees.setdefault(parent_oid, {})[name] = entry
            if entry.type == TREE_TYPE:
                self._trees.setdefault(entry.oid, {})

    def blobs(self, oids: list[str]) -> dict[str, bytes]:
        """The contents of ``oids``, read with one ``git cat-file --batch``."""
        wanted = sorted(set(oids) - set(self._blobs))
        if wanted:
            output = _run(self.repo, ["cat-file", "--batch"], "".join(f"{oid}\n" for oid in wanted).encode())
            position = 0
            for oid in wanted:
                header_end = output.index(b"\n", position)
                header = output[position:header_end].decode().split(" ")
                if len(header) != 3:  # "<oid> missing"
                    raise GitTreeError(f"object {oid} is missing from the repository")
                size = int(header[2])
                self._blobs[oid] = output[header_end + 1:header_end + 1 + size]
                position = header_end + 1 + size + 1  # the contents end with a newline of cat-file's own
        return {oid: self._blobs[oid] for oid in oids}

    def link_target(self, link: Entry) -> str:
        return os.fsdecode(self.blobs([link.oid])[link.oid])

    def resolve(self, path: str, *, follow_last: bool = True) -> tuple[str, Entry]:
        """The real path (no links in it, ``""`` for the top) and entry that ``path`` names in the commit.

        Raises :class:`OutsideTree` for a link that leads out of the repository and :class:`NotInTree`
        for a path the commit does not hold (a dangling link, a link loop).
        """
        pending = path.split("/")
        real: list[tuple[str, Entry]] = []  # (name, entry) from the top down
        hops = 0
        while pending:
            part = pending.pop(0)
            if part in ("", "."):
                continue
            if part == "..":
                if not real:  # above the top of the repository
                    raise OutsideTree(path, path)
                real.pop()
                continue
            here = real[-1][1] if real else self.root()
            if here.type != TREE_TYPE:
                raise NotInTree(f"{'/'.join(name for name, _ in real)} is not a folder")
            entry = self.children(here).get(part)
            if entry is None:
                raise NotInTree(f"{'/'.join([*(name for name, _ in real), part])} does not exist")
            if entry.is_link and (pending or follow_last):
                hops += 1
                if hops > MAX_LINK_HOPS:
                    raise NotInTree(f"{path}: too many levels of symbolic links")
                target = self.link_target(entry)
                if target.startswith("/"):
                    raise OutsideTree("/".join([*(name for name, _ in real), part]), target)
                pending = target.split("/") + pending  # relative to the folder holding the link
                continue
            real.append((part, entry))
        return "/".join(name for name, _ in real), (real[-1][1] if real else self.root())


@dataclass
class CommitFolder:
    """A folder of a commit written out under a destination; what could not be written is kept."""

    destination: Path
    outside_links: dict[str, str] = field(default_factory=dict)
    """Path under the destination -> target, for every link that leads out of the repository."""

    def outside_link(self, path: Path) -> Optional[tuple[str, str]]:
        """The link (path relative to the destination, target) whose leaving the repository hides ``path``."""
        try:
            relative = path.resolve().relative_to(self.destination.resolve()).as_posix()
        except ValueError:
            return None
        for link, target in sorted(self.outside_links.items()):
            if relative == link or relative.startswith(link + "/"):
                return link, target
        return None


def write_commit_folder(repo: Path, commit: str, folder: str, destination: Path) -> CommitFolder:
    """Write ``folder`` (relative to the top of the repository, ``""`` for the top) of ``commit``
    under ``destination``, links resolved inside the commit; raise :class:`NotInTree` when the commit
    has no such folder and :class:`GitTreeError` when git cannot read it."""
    trees = CommitTrees(repo, commit)
    written = CommitFolder(destination)
    real, entry = trees.resolve(folder) if folder else ("", trees.root())
    if entry.type != TREE_TYPE:
        raise NotInTree(f"{folder} is not a folder")
    trees.prefetch(entry)
    files: list[tuple[Path, Entry]] = []
    _collect(trees, real, entry, Path(), frozenset({entry.oid}), files, written)
    contents = trees.blobs([blob.oid for _, blob in files])
    destination.mkdir(parents=True, exist_ok=True)
    for relative, blob in files:
        path = destination / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(contents[blob.oid])
        if blob.mode == "100755":
            path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return written


def _safe_name(name: str) -> bool:
    # git's fsck refuses these tree entries; a hand-made tree could still hold them.
    return name not in ("", ".", "..", ".git") and "/" not in name and "\0" not in name


def _collect(trees: CommitTrees, real: str, tree: Entry, relative: Path, expanding: frozenset[str],
             files: list[tuple[Path, Entry]], written: CommitFolder) -> None:
    """Every blob under ``tree`` (at ``real`` in the commit), links followed, as (path under the destination, blob)."""
    for name, entry in sorted(trees.children(tree).items()):
        if not _safe_name(name):
            continue
        here = f"{real}/{name}" if real else name
        target_real, target = here, entry
        if entry.is_link:
            try:
                target_real, target = trees.resolve(here)
            except OutsideTree:
                written.outside_links[(relative / name).as_posix()] = trees.link_target(entry)
                continue
            except NotInTree:
                continue  # a dangling link: a checkout has nothing there either
        if target.type == BLOB_TYPE:
            files.append((relative / name, target))
        elif target.type == TREE_TYPE and target.oid not in expanding:  # a link to a folder holding it: no loop
            _collect(trees, target_real, target, relative / name, expanding | {target.oid}, files, written)
        # a submodule (type "commit") has no contents in this repository, as in `git archive`
