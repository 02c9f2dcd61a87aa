#!/usr/bin/env python3
"""Pull-request comments for the gpu-fabric stacks a change touches (the CI workflows' logic).

    python gpu_fabric_pr.py changed-stacks --base origin/main [--project .]
    python gpu_fabric_pr.py offline --base origin/main --out comments/ [--project .] [--stack NAME ...]
    python gpu_fabric_pr.py preview --base origin/main --out comments/ [--project .] [--policy-pack policy]

``offline`` (no cloud credentials) runs ``gpu-fabric check`` and ``gpu-fabric diff --markdown``
for each changed stack; ``preview`` (credentials) runs ``pulumi preview --json --policy-pack`` and
renders it with ``gpu-fabric diff --from-preview-json --markdown``. Each writes one comment per
stack, ``<out>/<stack>.md``, whose first line is the stack's hidden marker; the workflow's last
step posts each file or edits the comment that already carries its marker. Exit 1 when a check
or a preview refused the change or a diff could not run (the comments are written first), 2 on
bad arguments. Everything but the posting runs offline.
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import subprocess
import sys
from pathlib import Path
from typing import Optional, Sequence

# A change to any of these (relative to the project folder) can change every stack's resources.
PROGRAM_PATTERNS: tuple[str, ...] = (
    "Pulumi.yaml", "requirements*.txt", "pyproject.toml",
    "components/*", "policy/*",
)
"""Files whose change touches every stack; the program's own ``*.py`` (``main:`` of ``Pulumi.yaml``) too."""
CHECK_OUTPUT_LIMIT = 4_000
COMMENT_LIMIT = 65_536


class CiError(Exception):
    """A problem the job must report and stop on (bad ref, no history)."""


def _run(command: Sequence[str], cwd: Optional[Path] = None,
         env: Optional[dict[str, str]] = None) -> subprocess.CompletedProcess:
    return subprocess.run(list(command), cwd=cwd, capture_output=True, text=True, check=False, env=env)


def preview_environment() -> dict[str, str]:
    """The environment of ``pulumi preview``: this one, with the engine's per-step checkpoints skipped.

    At preview the engine still keeps a snapshot manager, with a persister that discards what it is given, and
    by default serializes and integrity-checks the whole deployment after every step
    (pulumi/pulumi pkg/backend/snapshot.go ``defaultServiceLoop`` and ``saveSnapshot``; installed for
    previews by pkg/backend/diy/backend.go and pkg/backend/httpstate/backend.go): a cost that grows with the
    square of the resources. ``PULUMI_SKIP_CHECKPOINTS=true`` (sdk/go/common/env/env.go) serializes once, at the
    end (``unsafeServiceLoop``); a preview persists nothing either way, so nothing is at stake. A 2,219-resource
    preview took 150 s, 49 s with it (benchmarks/engine_preview.py --fleet). A value the job sets itself wins.
    """
    environment = dict(os.environ)
    environment.setdefault("PULUMI_SKIP_CHECKPOINTS", "true")
    return environment


def _git(project: Path, *args: str) -> str:
    result = _run(["git", "-C", str(project), *args])
    if result.returncode != 0:
        raise CiError(f"git {' '.join(args)}: {result.stderr.strip() or 'failed'}")
    return result.stdout


def _tool(name: str) -> list[str]:
    """The command for ``gpu-fabric`` or ``pulumi``; ``GPU_FABRIC`` / ``PULUMI`` override it."""
    override = os.environ.get(name.upper().replace("-", "_"))
    return override.split() if override else [name]


def _layout(project: Path) -> tuple[str, str]:
    """Where the project keeps its stack files and its program, as path prefixes in the project ("" for
    the project folder): ``stackConfigDir`` and ``main`` of ``Pulumi.yaml``, Pulumi's defaults when unset."""
    from gpu_fabric.program.project import ProjectError, read_project

    try:
        found = read_project(project)
    except ProjectError as error:
        raise CiError(str(error)) from None
    program = found.program_path.parent.relative_to(found.folder).as_posix()
    stack_folder, program_folder = (found.stack_config_dir, program)
    return ("" if stack_folder == "." else stack_folder + "/", "" if program_folder == "." else program_folder + "/")


def stacks_in(project: Path) -> list[str]:
    """Stacks of the working tree (``Pulumi.<stack>.yaml`` in the project's ``stackConfigDir``)."""
    from gpu_fabric.program.render import ProjectError, example_stacks

    try:
        return example_stacks(project)
    except ProjectError as error:
        raise CiError(str(error)) from None


def changed_files(project: Path, base: str) -> list[str]:
    """Files changed between the merge base of ``base`` and HEAD, relative to the project folder."""
    prefix = _git(project, "rev-parse", "--show-prefix").strip()
    try:
        names = _git(project, "diff", "--name-only", f"{base}...HEAD", "--", ".").splitlines()
    except CiError as error:
        raise CiError(f"cannot compare with {base!r} (check out with fetch-depth: 0): {error}") from None
    return [name[len(prefix):] for name in names if name.startswith(prefix)]


def changed_stacks(project: Path, base: str) -> list[str]:
    """Stacks whose file changed, or every stack when the program, the pins or the package changed.

    A stack file the change added is listed (its diff is all creates), and so is one it deleted
    (its diff is all deletes: what ``pulumi destroy`` of that stack would remove).
    """
    files = changed_files(project, base)
    existing = stacks_in(project)
    stack_folder, program_folder = _layout(project)
    _refuse_stack_files_in_subfolders(project, files, stack_folder)
    prefix = f"{stack_folder}Pulumi."
    touched = {name[len(prefix):-len(".yaml")] for name in files
               if name.startswith(prefix) and name.endswith(".yaml") and "/" not in name[len(prefix):]
               and name != "Pulumi.yaml"}
    removed = sorted(touched - set(existing))
    patterns = (*PROGRAM_PATTERNS, f"{program_folder}*.py")
    if any(fnmatch.fnmatch(name, pattern) for name in files for pattern in patterns):
        return sorted([*existing, *removed])
    return sorted(stack for stack in touched)


def _refuse_stack_files_in_subfolders(project: Path, files: list[str], stack_folder: str) -> None:
    """A changed ``Pulumi.<name>.yaml`` below the stack folder is a stack file no stack of this project reads:
    Pulumi looks for ``<stackConfigDir>/Pulumi.<stack>.yaml`` only (pulumi/pulumi sdk/go/common/workspace/
    paths.go, ``DetectProjectStackPath``), never in subfolders. Passing over it would report "no stack
    changed" for a change that meant to change one, so it is refused -- unless a folder on its way holds a
    ``Pulumi.yaml``: then it belongs to that project, which has a job of its own."""
    for name in files:
        folder, _, file_name = name.rpartition("/")
        if not (file_name.startswith("Pulumi.") and file_name.endswith(".yaml") and file_name != "Pulumi.yaml"
                and name.startswith(stack_folder) and folder + "/" != stack_folder and (project / name).is_file()):
            continue
        parts = folder.split("/")
        if any((project / "/".join(parts[:depth]) / "Pulumi.yaml").is_file() for depth in range(1, len(parts) + 1)):
            continue  # a nested project's own stack file
        raise CiError(f"{name} is a stack file in a subfolder, and Pulumi reads stack files only from "
                      f"{stack_folder or './'} (stackConfigDir of {project / 'Pulumi.yaml'}): no stack of this project "
                      f"uses it; move it there, or give {folder}/ a Pulumi.yaml of its own and run with --project {folder}")


def _marker(stack: str) -> str:
    from gpu_fabric.diff.markdown import marker

    return marker(stack)


def _fenced(text: str, limit: int = CHECK_OUTPUT_LIMIT) -> str:
    text = text.strip().replace("```", "'''")
    if len(text) > limit:
        text = text[:limit] + f"\n… {len(text) - limit} more characters (see the job log)"
    return f"```\n{text}\n```"


def compose(stack: str, diff: subprocess.CompletedProcess, extra: str = "") -> str:
    """The comment: the diff's Markdown (or why it could not run), then ``extra``; within GitHub's limit."""
    marker = _marker(stack)
    if diff.returncode in (0, 2) and diff.stdout.startswith(marker):
        body = diff.stdout.rstrip("\n") + "\n"
    else:
        reason = (diff.stderr.strip().splitlines() or ["no output"])[-1]
        body = (f"{marker}\n### gpu-fabric diff: stack `{stack}`\n\n"
                f"**The diff could not be computed:** {reason.replace('`', chr(39))}\n")
    body += extra
    if len(body) > COMMENT_LIMIT:  # the diff keeps itself under 60,000; the extra is capped
        raise CiError(f"stack {stack}: comment of {len(body)} characters exceeds {COMMENT_LIMIT}")
    return body


def check_section(check: subprocess.CompletedProcess) -> str:
    """``gpu-fabric check``'s verdict, its report folded."""
    verdict = {0: "passed", 1: "**refused** (mandatory policy violations)"}.get(check.returncode, "**could not run**")
    output = (check.stdout + check.stderr).strip()
    return (f"\n#### gpu-fabric check: {verdict}\n\n<details><summary>Report</summary>\n\n"
            f"{_fenced(output)}\n</details>\n")


def write_comment(out: Path, stack: str, body: str) -> Path:
    """``<out>/<stack>.md``; also appended to the job summary when ``GITHUB_STEP_SUMMARY`` is set."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{stack}.md"
    path.write_text(body)
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        with open(summary, "a") as handle:
            handle.write(body + "\n")
    return path


def offline(project: Path, base: str, out: Path, stacks: list[str]) -> int:
    """Check and diff each stack without credentials; 1 when any check refuses or any diff fails.

    A stack the change removed has nothing to check: its comment is the diff (all deletes) alone.
    """
    failed = False
    present = set(stacks_in(project))
    for stack in stacks:
        diff = _run([*_tool("gpu-fabric"), "diff", "--base", base, "--stack", stack, "--project", str(project), "--markdown"])
        if stack in present:
            check = _run([*_tool("gpu-fabric"), "check", "--stack", stack, "--project", str(project)])
            section, check_code = check_section(check), check.returncode
        else:
            section, check_code = "\n#### gpu-fabric check: not run (the change removes this stack)\n", 0
        write_comment(out, stack, compose(stack, diff, section))
        # diff exits 0 with changes (no --detailed-exitcode): anything else means it could not run.
        failed = failed or check_code != 0 or diff.returncode != 0
        print(f"{stack}: check exit {check_code}, diff exit {diff.returncode} -> {out / (stack + '.md')}")
    return 1 if failed else 0


def preview(project: Path, out: Path, stacks: list[str], policy_pack: str) -> int:
    """``pulumi preview --json`` each stack (credentials needed), rendered by gpu-fabric; 1 on refusal."""
    failed = False
    out.mkdir(parents=True, exist_ok=True)
    for stack in stacks:
        run = _run([*_tool("pulumi"), "preview", "--stack", stack, "--cwd", str(project), "--json",
                    "--policy-pack", policy_pack, "--non-interactive"], env=preview_environment())
        digest = out / f"{stack}.preview.json"
        digest.write_text(run.stdout)
        diff = _run([*_tool("gpu-fabric"), "diff", "--from-preview-json", str(digest), "--stack", stack, "--markdown"])
        extra = ""
        if run.returncode != 0:
            extra = (f"\n#### pulumi preview: **failed** (exit {run.returncode})\n\n<details><summary>stderr</summary>\n\n"
                     f"{_fenced(run.stderr)}\n</details>\n")
        write_comment(out, stack, compose(stack, diff, extra))
        failed = failed or run.returncode != 0 or diff.returncode != 0
        print(f"{stack}: pulumi preview exit {run.returncode}, render exit {diff.returncode} -> {out / (stack + '.md')}")
    return 1 if failed else 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point; see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("changed-stacks", "offline", "preview"):
        command = sub.add_parser(name)
        command.add_argument("--base", required=name != "preview", help="base ref, e.g. origin/main")
        command.add_argument("--project", type=Path, default=Path("."), help="the Pulumi project folder")
        if name != "changed-stacks":
            command.add_argument("--out", type=Path, required=True, help="folder for <stack>.md comments")
            command.add_argument("--stack", action="append", dest="stacks", help="these stacks instead of the changed ones")
        if name == "preview":
            command.add_argument("--policy-pack", default="policy", help="policy pack folder (default policy)")
    args = parser.parse_args(argv)
    try:
        stacks = getattr(args, "stacks", None) or (changed_stacks(args.project, args.base) if args.base else stacks_in(args.project))
        if args.command == "changed-stacks":
            print("\n".join(stacks))
            return 0
        if not stacks:
            print("no stack changed: nothing to comment")
            return 0
        if args.command == "offline":
            return offline(args.project, args.base, args.out, stacks)
        return preview(args.project, args.out, stacks, args.policy_pack)
    except CiError as error:
        print(f"gpu_fabric_pr: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
