"""``gpu-fabric diff`` reads the base's stack files as git stores them, in real repositories.

A stack file marked ``export-ignore`` in ``.gitattributes``, a stack file that is a symbolic link to
a shared file, a project whose ``stacks`` folder is a link: each is an existing stack at the base
(nothing created), not a new one. A link out of the repository is refused in one line (exit 2)
where the render needs what it points at, and ignored where it does not; a link loop does not hang.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from gpu_fabric.diff.git_tree import CommitTrees, NotInTree, OutsideTree, write_commit_folder
from support.bad_input import run_cli
from support.stack_configs import PROJECT_DIR
from support.git_repo import git

SEED_RESOURCES, EFA_RESOURCES = 17, 27  # each with one tenant Namespace (docs/stacks.md#tenant-namespaces)


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    """A platform repository: the project in ``infra/``, one stack file export-ignored, one a link to
    ``shared/``, a second project ``linked/`` whose ``stacks`` is a link to ``infra/stacks``, and
    links out of the repository and in a loop beside them."""
    top = tmp_path_factory.mktemp("links")
    outside = top / "outside.yaml"
    shutil.copy(PROJECT_DIR / "stacks" / "Pulumi.seed-rdma.yaml", outside)
    root = top / "repo"
    (root / "infra" / "stacks").mkdir(parents=True)
    (root / "shared").mkdir()
    shutil.copy(PROJECT_DIR / "Pulumi.yaml", root / "infra" / "Pulumi.yaml")
    shutil.copy(PROJECT_DIR / "stacks" / "__main__.py", root / "infra" / "stacks" / "__main__.py")
    shutil.copy(PROJECT_DIR / "stacks" / "Pulumi.seed-rdma.yaml", root / "infra" / "stacks" / "Pulumi.seed-rdma.yaml")
    shutil.copy(PROJECT_DIR / "stacks" / "Pulumi.aws-efa.yaml", root / "shared" / "efa.yaml")
    os.symlink("../../shared/efa.yaml", root / "infra" / "stacks" / "Pulumi.aws-efa.yaml")
    os.symlink(str(outside), root / "infra" / "stacks" / "Pulumi.absolute.yaml")
    os.symlink("../../../outside.yaml", root / "infra" / "stacks" / "Pulumi.above.yaml")
    os.symlink("/usr/share", root / "infra" / "unrelated")  # out of the repository, but no render reads it
    os.symlink(".", root / "infra" / "loop")
    (root / "linked").mkdir()
    shutil.copy(PROJECT_DIR / "Pulumi.yaml", root / "linked" / "Pulumi.yaml")
    os.symlink("../infra/stacks", root / "linked" / "stacks")
    (root / ".gitattributes").write_text("infra/stacks/Pulumi.seed-rdma.yaml export-ignore\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "platform")
    return root


def diff(project: Path, stack: str, *extra: str):
    return run_cli("diff", "--base", "main", "--stack", stack, "--project", str(project), *extra)


def summary(outcome) -> dict:
    assert outcome.code == 0 and not outcome.crashed, outcome.describe()
    return json.loads(outcome.out)["changeSummary"]


def test_an_export_ignored_stack_file_is_an_existing_stack(repo):
    archived = subprocess.run(["git", "-C", str(repo), "archive", "main"], capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archived)) as tar:  # what `git archive` gives: no such stack
        assert "infra/stacks/Pulumi.seed-rdma.yaml" not in tar.getnames()
    assert summary(diff(repo / "infra", "seed-rdma")) == {
        "create": 0, "update": 0, "replace": 0, "delete": 0, "same": SEED_RESOURCES}


def test_a_stack_file_linked_to_a_shared_file_is_an_existing_stack(repo):
    assert summary(diff(repo / "infra", "aws-efa", "--head", "main"))["same"] == EFA_RESOURCES


def test_a_stacks_folder_that_is_a_link_is_followed_inside_the_commit(repo):
    assert summary(diff(repo / "linked", "aws-efa")) == {
        "create": 0, "update": 0, "replace": 0, "delete": 0, "same": EFA_RESOURCES}


@pytest.mark.parametrize("stack, target", [("absolute", "outside.yaml"), ("above", "../../../outside.yaml")])
def test_a_stack_file_linked_out_of_the_repository_is_refused_in_one_line(repo, stack, target):
    outcome = diff(repo / "infra", stack)
    assert outcome.code == 2 and not outcome.crashed, outcome.describe()
    assert outcome.out == "" and outcome.err.count("\n") == 1
    assert outcome.err.startswith(f"gpu-fabric diff: base main (") and f"stacks/Pulumi.{stack}.yaml is a symbolic link to " in outcome.err
    assert target in outcome.err and "outside the repository" in outcome.err


def test_the_commit_folder_holds_what_git_stores(repo, tmp_path):
    commit = git(repo, "rev-parse", "main").strip()
    written = write_commit_folder(repo, commit, "infra", tmp_path / "base")
    stacks = tmp_path / "base" / "stacks"
    assert (stacks / "Pulumi.seed-rdma.yaml").read_bytes() == (repo / "infra" / "stacks" / "Pulumi.seed-rdma.yaml").read_bytes()
    assert (stacks / "Pulumi.aws-efa.yaml").read_bytes() == (repo / "shared" / "efa.yaml").read_bytes()
    assert not (stacks / "Pulumi.aws-efa.yaml").is_symlink()
    assert sorted(written.outside_links) == ["stacks/Pulumi.above.yaml", "stacks/Pulumi.absolute.yaml", "unrelated"]
    assert not (tmp_path / "base" / "unrelated").exists() and not (tmp_path / "base" / "loop" / "loop").exists()
    assert written.outside_link(stacks / "Pulumi.absolute.yaml") == ("stacks/Pulumi.absolute.yaml", str(repo.parent / "outside.yaml"))
    assert written.outside_link(stacks / "Pulumi.seed-rdma.yaml") is None


def test_resolving_follows_links_and_stops_at_the_top_of_the_repository(repo):
    trees = CommitTrees(repo, git(repo, "rev-parse", "main").strip())
    real, entry = trees.resolve("linked/stacks/Pulumi.aws-efa.yaml")
    assert real == "shared/efa.yaml" and entry.type == "blob"
    with pytest.raises(OutsideTree):
        trees.resolve("infra/stacks/Pulumi.above.yaml")
    with pytest.raises(NotInTree):
        trees.resolve("infra/stacks/Pulumi.none.yaml")


def test_a_link_loop_is_not_followed_forever(tmp_path):
    os.symlink("b", tmp_path / "a")
    os.symlink("a", tmp_path / "b")
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "a loop")
    with pytest.raises(NotInTree, match="too many levels of symbolic links"):
        CommitTrees(tmp_path, "main").resolve("a")
