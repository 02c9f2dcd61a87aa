"""``gpu-fabric diff`` in a pipeline and under the CI example, with stack programs that stop early,
register nothing or print.

Run as users run it, in a child process with a timeout: ``gpu-fabric diff ... | cat`` ends when diff
does (no second process keeps the pipe open), an end whose program stops or registers nothing is one
line and exit 2, and what the programs print never lands in the JSON or Markdown.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import gpu_fabric
from support.stack_configs import PROJECT_DIR
from support.git_repo import commit_everything, git

STACK = "seed-rdma"
PROGRAM = (PROJECT_DIR / "stacks" / "__main__.py").read_text()
ENV = {**os.environ, "PYTHONPATH": str(Path(gpu_fabric.__file__).resolve().parents[1])}
CI_SCRIPT = PROJECT_DIR / "examples" / "ci" / "gpu_fabric_pr.py"


def repository(tmp_path: Path, base_program: str, head_program: str) -> Path:
    """Branch ``main`` runs ``base_program``, branch ``work`` (checked out) ``head_program``."""
    root = tmp_path / "platform"
    (root / "stacks").mkdir(parents=True)
    shutil.copy(PROJECT_DIR / "Pulumi.yaml", root / "Pulumi.yaml")
    shutil.copy(PROJECT_DIR / "stacks" / f"Pulumi.{STACK}.yaml", root / "stacks" / f"Pulumi.{STACK}.yaml")
    (root / "stacks" / "__main__.py").write_text(base_program)
    commit_everything(root)
    git(root, "checkout", "-q", "-b", "work")
    (root / "stacks" / "__main__.py").write_text(head_program)
    git(root, "commit", "-q", "--allow-empty", "-am", "head")
    return root


def diff_through_cat(repo: Path, *options: str) -> subprocess.CompletedProcess:
    """``gpu-fabric diff --base main --stack seed-rdma OPTIONS | cat``, exit status diff's (pipefail)."""
    command = " ".join([sys.executable, "-m", "gpu_fabric.cli", "diff", "--base", "main", "--stack", STACK,
                        "--project", str(repo), *options])
    return subprocess.run(["bash", "-c", f"set -o pipefail; {command} | cat"], capture_output=True, text=True,
                          timeout=180, env=ENV)


EXITS_EARLY = "import os\nos._exit(0)\n" + PROGRAM
REGISTERS_NOTHING = "import pulumi\npulumi.export('nothing', 0)\n"


@pytest.mark.parametrize("side, program, says", [
    ("base", EXITS_EARLY, "the stack program stacks/__main__.py exited early (its process ended: exit code 0)"),
    ("head", EXITS_EARLY, "the stack program {repo}/stacks/__main__.py exited early (its process ended: exit code 0)"),
    ("base", REGISTERS_NOTHING, "registered no resources"),
])
def test_an_end_whose_program_stops_or_registers_nothing_fails_and_the_pipe_closes(tmp_path, side, program, says):
    repo = repository(tmp_path, program if side == "base" else PROGRAM, program if side == "head" else PROGRAM)
    run = diff_through_cat(repo, "--markdown")
    assert run.returncode == 2, run.stdout + run.stderr
    assert run.stdout == "" and run.stderr.count("\n") == 1 and "Traceback" not in run.stderr
    where = "base main (" if side == "base" else "head (working tree)"
    assert run.stderr.startswith(f"gpu-fabric diff: stack '{STACK}' at {where}") and says.format(repo=repo) in run.stderr


NOISY = ("print('the program says hello')\nimport subprocess\n"
         "subprocess.run(['sh', '-c', 'echo a child of the program'], check=True)\n") + PROGRAM


def test_what_programs_print_stays_out_of_the_json_and_the_markdown(tmp_path):
    repo = repository(tmp_path, NOISY, NOISY + "\n")
    as_json = diff_through_cat(repo, "--json")
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout)["changeSummary"]["same"] > 0
    assert as_json.stderr.count("the program says hello") == 2 and as_json.stderr.count("a child of the program") == 2
    as_markdown = diff_through_cat(repo, "--markdown")
    assert as_markdown.returncode == 0 and as_markdown.stdout.startswith(f"<!-- gpu-fabric-diff stack={STACK} -->")
    assert "hello" not in as_markdown.stdout and "child" not in as_markdown.stdout


def test_the_ci_example_finishes_and_reports_a_program_that_exits_early(tmp_path):
    repo = repository(tmp_path, PROGRAM, EXITS_EARLY)
    out = tmp_path / "comments"
    run = subprocess.run([sys.executable, str(CI_SCRIPT), "offline", "--base", "main", "--project", str(repo),
                          "--out", str(out)], capture_output=True, text=True, timeout=300,
                         env={**ENV, "GPU_FABRIC": f"{sys.executable} -m gpu_fabric.cli"})
    assert run.returncode == 1, run.stdout + run.stderr
    comment = (out / f"{STACK}.md").read_text()
    assert "**The diff could not be computed:**" in comment and "exited early (its process ended: exit code 0)" in comment
