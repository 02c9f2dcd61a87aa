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
hold: it is not written, and :meth:`CommitFolder.outside_link` says which link hides a path. A
submodule's folder is written from the submodule's own repository at the commit the superproject
records (:mod:`gpu_fabric.diff.submodules`).
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
GITLINK_TYPE = "commit"
"""A submodule's entry: its object id is the submodule's commit, held in the submodule's own repository."""
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


class LinkLoop(NotInTree):
    """Resolving a path followed more links than the kernel would: a symbolic link loop."""


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
                    raise LinkLoop(f"{path}: too many levels of symbolic links")
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
    broken_links: dict[str, str] = field(default_factory=dict)
    """Path under the destination -> what it is (a loop, a link to nothing), for every link that names
    nothing in the commit: a checkout has no file there either, but a link, which a reader must not
    mistake for an absent file (a ``Pulumi.yaml`` loop is no missing ``Pulumi.yaml``)."""

    def outside_link(self, path: Path) -> Optional[tuple[str, str]]:
        """The link (path relative to the destination, target) whose leaving the repository hides ``path``."""
        return _covering(self.outside_links, self.destination, path)

    def broken_link(self, path: Path) -> Optional[tuple[str, str]]:
        """The link (path relative to the destination, what it is) that names nothing where ``path`` is."""
        return _covering(self.broken_links, self.destination, path)


def _covering(links: dict[str, str], destination: Path, path: Path) -> Optional[tuple[str, str]]:
    """The entry of ``links`` that is ``path`` (relative to ``destination``) or a folder above it."""
    try:
        relative = path.resolve().relative_to(destination.resolve()).as_posix()
    except ValueError:
        return None
    for link, value in sorted(links.items()):
        if relative == link or relative.startswith(link + "/"):
            return link, value
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
    submodules: list[tuple[Path, str, str]] = []
    _collect(trees, real, entry, Path(), frozenset({entry.oid}), files, written, submodules)
    contents = trees.blobs([blob.oid for _, blob in files])
    destination.mkdir(parents=True, exist_ok=True)
    for relative, blob in files:
        path = destination / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(contents[blob.oid])
        if blob.mode == "100755":
            path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    for relative, path_in_commit, oid in submodules:
        _write_submodule(repo, commit, path_in_commit, oid, destination / relative, relative.as_posix(), written)
    return written


def _write_submodule(repo: Path, commit: str, path: str, oid: str, destination: Path, relative: str,
                     written: CommitFolder) -> None:
    """The submodule at ``path`` of ``commit``, as its commit ``oid`` holds it, under ``destination``; what
    cannot be written (the commit is not in this clone) is kept in ``written`` as a broken link is."""
    from gpu_fabric.diff.submodules import submodule_repository

    sub_repo, why_not = submodule_repository(repo, commit, path, oid)
    if sub_repo is None:
        written.broken_links[relative] = why_not
        return
    inner = write_commit_folder(sub_repo, oid, "", destination)  # nested submodules: the same, one level down
    for mine, theirs in ((written.outside_links, inner.outside_links), (written.broken_links, inner.broken_links)):
        mine.update({f"{relative}/{link}": value for link, value in theirs.items()})


def _safe_name(name: str) -> bool:
    # git's fsck refuses these tree entries; a hand-made tree could still hold them.
    return name not in ("", ".", "..", ".git") and "/" not in name and "\0" not in name


def _collect(trees: CommitTrees, real: str, tree: Entry, relative: Path, expanding: frozenset[str],
             files: list[tuple[Path, Entry]], written: CommitFolder, submodules: list[tuple[Path, str, str]]) -> None:
    """Every blob under ``tree`` (at ``real`` in the commit), links followed, as (path under the destination, blob);
    every submodule as (path under the destination, its path in the commit, its commit)."""
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
            except LinkLoop:
                written.broken_links[(relative / name).as_posix()] = (
                    "a symbolic link loop in the commit, not a file this end can be rendered from")
                continue
            except NotInTree:  # a dangling link: a checkout has nothing there either
                written.broken_links[(relative / name).as_posix()] = (
                    f"a symbolic link to {trees.link_target(entry)}, which the commit does not hold")
                continue
        if target.type == BLOB_TYPE:
            files.append((relative / name, target))
        elif target.type == TREE_TYPE and target.oid not in expanding:  # a link to a folder holding it: no loop
            _collect(trees, target_real, target, relative / name, expanding | {target.oid}, files, written, submodules)
        elif target.type == GITLINK_TYPE:  # its contents are in the submodule's own repository
            submodules.append((relative / name, target_real, target.oid))
