"""Render a stack as it is at a git ref, or in the working tree, with the installed gpu-fabric.

The ref's project folder is written into a temporary folder from git's object database, as git
stores it (:mod:`gpu_fabric.diff.git_tree`: no ``export-ignore``, links resolved inside the commit;
nothing in the repository or its worktrees changes), then the stack program runs there under the
same offline mocks as ``gpu-fabric render``. Every problem is a :class:`DiffInputError` whose
one-line message names the ref, the stack or the file.
"""

from __future__ import annotations

import functools
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Optional

from gpu_fabric.diff.git_tree import CommitFolder, GitTreeError, NotInTree, write_commit_folder
from gpu_fabric.program.rendered import RenderResult


class DiffInputError(Exception):
    """Bad input to ``gpu-fabric diff``: an unknown ref, a missing stack, an invalid stack or file."""


class StackAbsentError(DiffInputError):
    """One end of the diff has no ``Pulumi.<stack>.yaml``: the stack is new in the change, or removed by it.

    :func:`render_base_and_head` turns it into an empty render of that end (so every resource is a
    create, or a delete); only when neither end has the stack is it an error.
    """


def _git(repo: Path, *args: str, binary: bool = False) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=not binary, check=False)


def _one_line(text: str) -> str:
    """Join a multi-line message into one line: ``"a:\n  b\n  c"`` -> ``"a: b; c"``."""
    joined = ""
    for line in (line.strip() for line in str(text).splitlines()):
        if line:
            joined += line if not joined else (" " if joined.endswith(":") else "; ") + line
    return joined


def repository_root(project_dir: Path) -> tuple[Path, str]:
    """The repository holding ``project_dir`` and the project's path inside it (``""`` at the root)."""
    top = _git(project_dir, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        raise DiffInputError(f"{project_dir} is not inside a git repository: {_one_line(top.stderr)}")
    root = Path(top.stdout.strip())
    relative = project_dir.resolve().relative_to(root.resolve())
    return root, "" if str(relative) == "." else relative.as_posix()


def resolve_ref(repo: Path, ref: str) -> str:
    """The commit ``ref`` names; ``DiffInputError`` naming the ref when it names none."""
    if ref.startswith("-"):
        raise DiffInputError(f"unknown ref {ref!r}: a ref cannot start with '-'")
    result = _git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    if result.returncode != 0 or not result.stdout.strip():
        raise DiffInputError(f"unknown ref {ref!r}: git cannot resolve it to a commit in {repo}")
    return result.stdout.strip()


def extract_project(repo: Path, commit: str, project_path: str, destination: Path) -> CommitFolder:
    """Write the project folder as git stores it at ``commit`` under ``destination``."""
    try:
        return write_commit_folder(repo, commit, project_path, destination)
    except (NotInTree, GitTreeError) as error:
        raise DiffInputError(f"commit {commit[:12]} has no folder {project_path or '.'}: {_one_line(str(error))}") from None


def render_stack_at(project_dir: Path, stack: str, ref: Optional[str], *, side: str,
                    scratch: Optional[Path] = None) -> tuple[RenderResult, str]:
    """Render ``stack`` of the project at ``ref`` (``None``: the working tree); return it and a label.

    ``side`` ("base" or "head") names the end in error messages. The commit's folder is written under
    ``scratch`` when given -- a folder the caller removes, so that nothing is left behind however this
    process ends (:func:`render_base_and_head`) -- else in a temporary folder of its own.
    """
    project_dir = Path(project_dir)
    if ref is None:
        return _render(project_dir, stack, f"{side} (working tree)"), "working tree"
    repo, project_path = repository_root(project_dir)
    commit = resolve_ref(repo, ref)
    label = f"{ref} ({commit[:12]})"
    with tempfile.TemporaryDirectory(prefix="gpu-fabric-diff-", dir=scratch) as folder:
        checkout = extract_project(repo, commit, project_path, Path(folder))
        return _render(checkout.destination, stack, f"{side} {label}", checkout), label


def render_base_and_head(
    project_dir: Path, stack: str, base_ref: str, head_ref: Optional[str]
) -> tuple[RenderResult, str, RenderResult, str]:
    """Both ends of a diff: the base rendered in a forked child while this process renders the head.

    The two renders are independent and each is CPU-bound, so on two cores a diff costs little
    more than one render (``benchmarks/diff_fleet.py``). With one core they run one after the
    other. A problem at the base is reported before one at the head.

    A stack only one end has is new in the change (no base: every resource is a create) or removed
    by it (no head: every resource is a delete), as ``pulumi preview`` of a new stack or
    ``pulumi destroy`` shows it; the missing end is an empty render labelled so. Neither end having
    it is an error naming both.
    """
    # Both ends extract into one folder that this process removes on every way out, after the base's child
    # has ended: a child that is killed, or ends with its parent, cannot clean up after itself.
    with tempfile.TemporaryDirectory(prefix="gpu-fabric-diff-") as folder:
        base, base_label, head, head_label = _both_ends(Path(project_dir), stack, base_ref, head_ref, Path(folder))
    if base is None and head is None:
        raise DiffInputError(f"neither the base ({base_label}) nor the head ({head_label}) has stack {stack!r}"
                             + _subfolder_hint(Path(project_dir), stack))
    return (base or RenderResult(stack), base_label, head or RenderResult(stack), head_label)


def _both_ends(project_dir: Path, stack: str, base_ref: str, head_ref: Optional[str],
               scratch: Path) -> tuple[Optional[RenderResult], str, Optional[RenderResult], str]:
    """The base (in a forked child, when there are two cores) and the head (here), either absent.

    Forked, not spawned: the child starts with what this process imported -- before the fork, what every render
    needs (:func:`gpu_fabric.program.shared_imports.before_the_fork`) -- where a spawned interpreter imported the
    SDKs again, about a second of CPU per diff. The child writes nothing on this process's standard output and is
    killed as this process ends, however it ends (:func:`gpu_fabric.program.completion.start_in_child`).
    """
    base: RenderResult | None
    head: RenderResult | None
    if (os.cpu_count() or 1) < 2 or not hasattr(os, "fork"):
        base, base_label = _render_or_absent(project_dir, stack, base_ref, "base", scratch)
        head, head_label = _render_or_absent(project_dir, stack, head_ref, "head", scratch)
        return base, base_label, head, head_label
    from gpu_fabric.program.completion import ProgramEnded, start_in_child
    from gpu_fabric.program.shared_imports import before_the_fork, expect

    expect({})  # the Kubernetes SDK's modules every stack registers with
    before_the_fork()
    # The base's child ends with this block, however it is left.
    with start_in_child(functools.partial(_render_or_absent, project_dir, stack, base_ref, "base", scratch),
                        ends_with_parent=True) as base_render:
        try:
            head, head_label = _render_or_absent(project_dir, stack, head_ref, "head", scratch)
        except DiffInputError:
            try:
                base_render.result()  # the base's own problem, if any, comes first
            except ProgramEnded:
                pass  # no word from the base: the head's problem is the one to report
            raise
        try:
            base, base_label = base_render.result()
        except ProgramEnded as ended:
            # Not rendered again here: whatever ended the child (the OOM killer, a signal) would be met
            # again, now by the command itself; a diff is never computed against a base that did not finish.
            raise DiffInputError(f"stack {stack!r} at base {base_ref}: the base was not rendered: its process "
                                 f"ended ({ended.how})") from None
    return base, base_label, head, head_label


def _subfolder_hint(project_dir: Path, stack: str) -> str:
    """Where the working tree holds the stack's file in a subfolder of the stack folder: that Pulumi never reads it."""
    from gpu_fabric.program.project import ProjectError, read_project

    try:
        return read_project(project_dir).subfolder_hint(stack)
    except (OSError, ProjectError):
        return ""  # the ends' own problems were reported as they were met


def _render_or_absent(project_dir: Path, stack: str, ref: Optional[str], side: str,
                      scratch: Optional[Path] = None) -> tuple[Optional[RenderResult], str]:
    """:func:`render_stack_at`, or ``None`` and a label saying so when that end has no such stack."""
    try:
        return render_stack_at(project_dir, stack, ref, side=side, scratch=scratch)
    except StackAbsentError:
        if ref is None:
            return None, f"working tree, without stack {stack}"
        commit = resolve_ref(repository_root(Path(project_dir))[0], ref)
        return None, f"{ref} ({commit[:12]}), without stack {stack}"


def _outside_repository(checkout: Optional[CommitFolder], path: Path, where: str) -> None:
    """Refuse the end when ``path``, which the render reads, is behind a link out of the repository,
    or is (or is under) a link that names nothing in the commit: a loop is no absent file."""
    if checkout is None or path.is_file():
        return
    hidden = checkout.outside_link(path)
    if hidden is not None:
        link, target = hidden
        raise DiffInputError(f"{where}: {link} is a symbolic link to {target}, outside the repository; git does not "
                             f"hold what it points at, so this end cannot be rendered from the commit")
    broken = checkout.broken_link(path)
    if broken is not None:
        link, what = broken
        raise DiffInputError(f"{where}: {link} is {what}")


def _render(project_dir: Path, stack: str, where: str, checkout: Optional[CommitFolder] = None) -> RenderResult:
    """Render, turning every failure into a one-line ``DiffInputError`` that names the stack and the end.

    ``checkout``: the commit's folder ``project_dir`` was written from, whose links out of the
    repository are refused where the render needs what they point at.
    """
    import yaml

    from gpu_fabric.program.errors import StackProgramError
    from gpu_fabric.program.render import ProjectError, read_project, render_stack, stack_config_path
    from gpu_fabric.config.base import ConfigError
    from gpu_fabric.config.safe_files import path_kind
    from gpu_fabric.config.stack_file import StackFileError

    _outside_repository(checkout, project_dir / "Pulumi.yaml", where)
    try:
        config = stack_config_path(project_dir, stack)
    except (FileNotFoundError, ProjectError) as error:  # a name Pulumi refuses, an unreadable Pulumi.yaml
        raise DiffInputError(f"{where}: {error}") from None
    _outside_repository(checkout, config, where)
    kind = path_kind(config)  # stat only: a FIFO is never opened, so it cannot block the diff
    if kind is None:
        raise StackAbsentError(f"{where} has no stack {stack!r} ({config.parent.name}/{config.name} does not exist there)")
    if kind != "file":
        raise DiffInputError(f"stack {stack!r} at {where}: {config.parent.name}/{config.name} is {kind}, "
                             f"not a regular file")
    _outside_repository(checkout, read_project(project_dir).program_path, where)
    try:
        return render_stack(stack, project_dir)
    except StackProgramError as error:
        # The program raised, exited early (sys.exit, os._exit) or registered nothing: a diff against
        # that would be silently empty or partial, so the end is refused.
        message = str(error)
        if checkout is not None:  # the temporary folder means nothing to the reader: paths in the project
            message = message.replace(f"{project_dir}{os.sep}", "")
        raise DiffInputError(f"stack {stack!r} at {where}: {_one_line(message)}") from None
    except ConfigError as error:
        raise DiffInputError(f"stack {stack!r} at {where} does not validate: {_one_line(str(error))}") from None
    except StackFileError as error:  # the file's own refusal names the file, line and key: no class name to add
        message = str(error).replace(f"{project_dir}{os.sep}", "") if checkout is not None else str(error)
        raise DiffInputError(f"stack {stack!r} at {where}: {_one_line(message)}") from None
    except yaml.YAMLError as error:
        raise DiffInputError(f"stack {stack!r} at {where}: {config.parent.name}/{config.name} is not valid YAML: "
                             f"{_one_line(str(error))}") from None
    except Exception as error:  # the stack program is user code: report, never a traceback
        raise DiffInputError(
            f"stack {stack!r} at {where} failed to render: {type(error).__name__}: {_one_line(str(error))}") from None
