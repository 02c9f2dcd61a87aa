"""Where the contents of a git submodule at a given commit are, for writing a commit's folder out.

A commit's tree holds a submodule as a "gitlink": an entry of type ``commit`` whose object id is the
submodule's commit, recorded by the superproject (gitmodules(5); git-ls-tree(1) lists it with mode
``160000``). Its files are in the submodule's own repository, never in the superproject's objects,
so ``git archive`` and a plain tree walk leave the folder empty -- a stack kept in a submodule
looked absent at the base, and the diff showed every resource as a create.

What a user expects of the base is the submodule's content as the base commit pins it: the commit
the gitlink names, read from the submodule's repository in this clone. That repository is the
submodule's checkout (``<path>/.git``) or its git folder under the superproject's
``.git/modules/<name>`` (kept there also when the checkout is gone). When neither holds the
commit (the submodule was never initialised, or a shallow fetch left that commit out), the folder
cannot be written, and the reason says what to run.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Optional


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False)


def _module_name(repo: Path, commit: str, path: str) -> str:
    """The submodule's name in the commit's ``.gitmodules`` (its path when not listed, git's default)."""
    listed = _git(repo, "config", "--blob", f"{commit}:.gitmodules", "--get-regexp", r"^submodule\..*\.path$")
    for line in listed.stdout.splitlines():
        key, _, value = line.partition(" ")
        if value == path:
            return key[len("submodule."):-len(".path")]
    return path


def _candidates(repo: Path, commit: str, path: str) -> list[Path]:
    """Repositories that may hold the submodule's objects: its checkout, then its folder in ``.git/modules``."""
    found: list[Path] = []
    checkout = repo / path
    top = _git(checkout, "rev-parse", "--show-toplevel") if checkout.is_dir() else None
    # An uninitialised submodule is an empty folder: git answers there for the superproject, not for it.
    if top is not None and top.returncode == 0 and Path(top.stdout.strip()).resolve() == checkout.resolve():
        found.append(checkout)
    module = _git(repo, "rev-parse", "--git-path", f"modules/{_module_name(repo, commit, path)}")
    if module.returncode == 0 and module.stdout.strip():
        folder = Path(module.stdout.strip())
        folder = folder if folder.is_absolute() else repo / folder
        if folder.is_dir():
            found.append(folder)
    return found


def submodule_repository(repo: Path, commit: str, path: str, oid: str) -> tuple[Optional[Path], str]:
    """The repository holding commit ``oid`` of the submodule at ``path`` of ``commit``, or ``None`` and why not."""
    for candidate in _candidates(repo, commit, path):
        if _git(candidate, "cat-file", "-e", f"{oid}^{{commit}}").returncode == 0:
            return candidate, ""
    return None, (f"a git submodule whose commit {oid[:12]} is not in this clone; run `git submodule update --init "
                  f"{path}` (or fetch that commit) so that its content at this commit can be read")
