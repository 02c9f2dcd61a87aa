"""``gpu-fabric diff`` of stacks kept in a git submodule (issue 40): the base is the submodule's content at
the commit the base pins, read from the submodule's own repository, not an empty folder (all creates).
A submodule whose commit this clone does not hold is refused in one line saying what to run.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from gpu_fabric.diff.git_tree import write_commit_folder
from support.bad_input import run_cli
from support.stack_configs import PROJECT_DIR
from support.git_repo import git as shared_git

STACK = "aws-efa"


def git(repo: Path, *args: str) -> str:
    return shared_git(repo, *args, env={"GIT_ALLOW_PROTOCOL": "file"})  # submodules are cloned over file://


def raise_max_size(stacks: Path) -> None:
    """Let the first managed node group scale one node further: an update of that node group."""
    path = stacks / f"Pulumi.{STACK}.yaml"
    document = yaml.safe_load(path.read_text())
    pool = next(p for p in document["config"]["gpu-fabric:pools"] if p.get("aws", {}).get("scaling"))
    pool["aws"]["scaling"]["maxSize"] += 1
    path.write_text(yaml.safe_dump(document, sort_keys=False))


@pytest.fixture(scope="module")
def platform(tmp_path_factory) -> Path:
    """A platform repository whose ``stacks/`` (program and stack files) is a submodule. Branch main pins the
    submodule's first commit; the submodule's checkout has moved on to a second commit (a change under review)."""
    top = tmp_path_factory.mktemp("submodule")
    source = top / "stacks-repo"
    shutil.copytree(PROJECT_DIR / "stacks", source, ignore=shutil.ignore_patterns("__pycache__"))
    git(source, "init", "-q", "-b", "main")
    git(source, "add", "-A")
    git(source, "commit", "-q", "-m", "stacks")
    root = top / "platform"
    root.mkdir()
    shutil.copy(PROJECT_DIR / "Pulumi.yaml", root / "Pulumi.yaml")
    git(root, "init", "-q", "-b", "main")
    git(root, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(source), "stacks")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "platform")
    raise_max_size(root / "stacks")
    git(root / "stacks", "commit", "-q", "-am", "one node more")
    return root


def test_the_commit_folder_holds_the_submodule_at_the_pinned_commit(platform, tmp_path):
    written = write_commit_folder(platform, git(platform, "rev-parse", "main").strip(), "", tmp_path / "out")
    pinned = git(platform / "stacks", "show", f"HEAD~1:Pulumi.{STACK}.yaml")
    assert (tmp_path / "out" / "stacks" / f"Pulumi.{STACK}.yaml").read_text() == pinned
    assert not written.broken_links and not written.outside_links


def test_a_stack_in_a_submodule_diffs_against_the_pinned_content(platform):
    outcome = run_cli("diff", "--project", str(platform), "--base", "main", "--stack", STACK, "--json")
    assert outcome.code == 0, outcome.describe()
    digest = json.loads(outcome.out)
    assert digest["changeSummary"]["create"] == 0 and digest["changeSummary"]["delete"] == 0
    assert [step["op"] for step in digest["steps"]] and {step["op"] for step in digest["steps"]} == {"update"}
    assert "without stack" not in digest["base"]


def test_a_submodule_this_clone_does_not_hold_is_refused_saying_what_to_run(platform, tmp_path):
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(platform), str(clone))  # no --recurse-submodules: stacks/ is empty
    outcome = run_cli("diff", "--project", str(clone), "--base", "main", "--stack", STACK)
    assert outcome.code == 2 and not outcome.crashed, outcome.describe()
    assert len(outcome.err.strip().splitlines()) == 1
    assert "base main" in outcome.err and "stacks is a git submodule" in outcome.err
    assert "git submodule update --init stacks" in outcome.err
