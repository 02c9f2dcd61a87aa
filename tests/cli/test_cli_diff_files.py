"""``gpu-fabric diff`` (and ``render``) on stack files and project files that are not what they seem (issue 40):
a FIFO, a device or a folder where the stack file belongs, a ``Pulumi.yaml`` that is a symbolic link loop,
and a diff interrupted while its base is extracted.
"""

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.bad_input import run_cli
from support.stack_configs import PROJECT_DIR
from support.git_repo import commit_everything, git

STACK = "aws-efa"


def committed_project(root: Path) -> Path:
    """A repository whose one commit (branch main) holds this project's Pulumi.yaml and stacks/."""
    root.mkdir(parents=True, exist_ok=True)
    shutil.copy(PROJECT_DIR / "Pulumi.yaml", root / "Pulumi.yaml")
    shutil.copytree(PROJECT_DIR / "stacks", root / "stacks", ignore=shutil.ignore_patterns("__pycache__"))
    commit_everything(root)
    return root


def refused(outcome, *words: str) -> None:
    """Exit 2, one line naming ``words``, no traceback."""
    assert outcome.code == 2 and not outcome.crashed, outcome.describe()
    lines = outcome.err.strip().splitlines()
    assert len(lines) == 1 and all(word in lines[0] for word in words), outcome.describe()


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    return committed_project(tmp_path_factory.mktemp("files") / "repo")


@pytest.mark.parametrize("kind, make", [
    ("a FIFO", os.mkfifo),
    ("a folder", os.mkdir),
    ("a character device", lambda path: os.symlink("/dev/null", path)),
])
@pytest.mark.parametrize("command", ["diff", "render"])
def test_a_stack_file_that_is_no_regular_file_is_named_as_what_it_is(repo, tmp_path, kind, make, command):
    stack_file = repo / "stacks" / "Pulumi.odd.yaml"
    make(stack_file)
    try:
        extra = ["--base", "main"] if command == "diff" else ["--out", str(tmp_path / "out")]
        # A FIFO no one writes to would block an open forever: the answer must come without reading it.
        outcome = run_cli(command, "--project", str(repo), "--stack", "odd", *extra)
    finally:
        os.rmdir(stack_file) if kind == "a folder" else os.unlink(stack_file)
    refused(outcome, "Pulumi.odd.yaml", f"is {kind}, not a regular file")
    assert "does not exist" not in outcome.err


def test_a_folder_committed_where_the_base_stack_file_belongs_is_named(tmp_path):
    root = committed_project(tmp_path / "repo")
    (root / "stacks" / "Pulumi.odd.yaml").mkdir()
    (root / "stacks" / "Pulumi.odd.yaml" / "README").write_text("not a stack\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "a folder named like a stack file")
    refused(run_cli("diff", "--project", str(root), "--base", "main", "--head", "main", "--stack", "odd"),
            "base main", "stacks/Pulumi.odd.yaml is a folder, not a regular file")


def _named_project(root: Path, name: str) -> str:
    text = (PROJECT_DIR / "Pulumi.yaml").read_text().replace("name: gpu-fabric", f"name: {name}", 1)
    assert f"name: {name}" in text
    return text


def test_a_pulumi_yaml_link_loop_in_the_working_tree_is_refused_not_read_as_absent(tmp_path):
    root = committed_project(tmp_path / "repo")
    (root / "Pulumi.yaml").unlink()
    os.symlink("Pulumi.yaml", root / "Pulumi.yaml")
    for command, extra in (("diff", ["--base", "main"]), ("render", ["--out", str(tmp_path / "out")])):
        outcome = run_cli(command, "--project", str(root), "--stack", STACK, *extra)
        refused(outcome, str(root / "Pulumi.yaml"), "symbolic link loop")


def test_a_pulumi_yaml_link_loop_at_the_base_is_refused_not_the_default_project(tmp_path):
    # With the default project name every URN of the base would differ from the head's: all creates and deletes.
    root = committed_project(tmp_path / "repo")
    (root / "Pulumi.yaml").unlink()
    os.symlink("Pulumi.yaml", root / "Pulumi.yaml")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "Pulumi.yaml points at itself")
    (root / "Pulumi.yaml").unlink()
    (root / "Pulumi.yaml").write_text(_named_project(root, "team-platform"))
    outcome = run_cli("diff", "--project", str(root), "--base", "main", "--stack", STACK, "--json")
    refused(outcome, "base main", "Pulumi.yaml is a symbolic link loop in the commit")
    assert outcome.out == ""


def test_a_pulumi_yaml_link_to_nothing_at_the_base_is_refused(tmp_path):
    root = committed_project(tmp_path / "repo")
    (root / "Pulumi.yaml").unlink()
    os.symlink("shared/Pulumi.yaml", root / "Pulumi.yaml")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "Pulumi.yaml points at a file not committed")
    refused(run_cli("diff", "--project", str(root), "--base", "main", "--head", "main", "--stack", STACK),
            "Pulumi.yaml is a symbolic link to shared/Pulumi.yaml, which the commit does not hold")


def _extracted(tmp: Path) -> bool:
    return any(tmp.rglob("Pulumi.aws-efa.yaml"))


@pytest.mark.parametrize("signum, code, message", [
    (signal.SIGTERM, 128 + signal.SIGTERM, "gpu-fabric diff: terminated"),
    (signal.SIGINT, 130, "gpu-fabric: interrupted"),
])
def test_an_interrupted_diff_leaves_nothing_in_tmpdir(repo, tmp_path, signum, code, message):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    # Both ends at a ref: both are extracted (the base by the worker process, the head by the command itself).
    process = subprocess.Popen(
        [sys.executable, "-m", "gpu_fabric.cli", "diff", "--project", str(repo), "--base", "main", "--head", "main",
         "--stack", STACK], env={**os.environ, "TMPDIR": str(scratch)}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, start_new_session=True)
    deadline = time.monotonic() + 60
    while not _extracted(scratch) and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _extracted(scratch), "the diff never extracted its base"
    time.sleep(0.2)  # into the renders
    os.killpg(process.pid, signum)  # the whole group, as Ctrl-C or a CI runner's cancel does
    out, err = process.communicate(timeout=60)
    assert process.returncode == code, err
    assert err.strip() == message and "Traceback" not in err
    leftovers = sorted(path.name for path in scratch.iterdir() if path.name.startswith("gpu-fabric-diff-"))
    assert leftovers == []


def test_a_stack_asked_for_by_name_whose_file_is_in_a_subfolder_says_pulumi_does_not_read_it(repo, tmp_path):
    team = repo / "stacks" / "team"
    team.mkdir()
    shutil.copy(repo / "stacks" / f"Pulumi.{STACK}.yaml", team / "Pulumi.team-efa.yaml")
    try:
        for command, extra in (("diff", ["--base", "main"]), ("render", ["--out", str(tmp_path / "out")])):
            outcome = run_cli(command, "--project", str(repo), "--stack", "team-efa", *extra)
            refused(outcome, "team/Pulumi.team-efa.yaml is in a subfolder", "reads stack files only from")
    finally:
        shutil.rmtree(team)


DIGITS = "9" * 5000


@pytest.mark.parametrize("written", [f'"1.{DIGITS}"', f"1{DIGITS}"], ids=["quoted", "an integer"])
def test_a_5000_digit_kubernetes_version_is_blamed_on_the_field_not_the_program(repo, written):
    text = (repo / "stacks" / "Pulumi.dra-efa.yaml").read_text()
    assert 'kubernetesVersion: "1.34"' in text
    stack_file = repo / "stacks" / "Pulumi.big.yaml"
    stack_file.write_text(text.replace('kubernetesVersion: "1.34"', f"kubernetesVersion: {written}", 1))
    try:
        outcome = run_cli("diff", "--project", str(repo), "--base", "main", "--stack", "big")
    finally:
        stack_file.unlink()
    refused(outcome, "stack 'big' at head", "cluster.kubernetesVersion")
    assert "raised" not in outcome.err and "Error:" not in outcome.err and DIGITS not in outcome.err
