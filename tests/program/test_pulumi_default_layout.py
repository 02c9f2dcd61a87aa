"""A project as ``pulumi new python`` makes it: ``Pulumi.yaml`` with no ``main:`` and no
``stackConfigDir:``, the program ``__main__.py`` and ``Pulumi.<stack>.yaml`` beside it.

Pulumi's project file reference: ``main`` defaults to the folder of ``Pulumi.yaml``, and the stack
files live there too when ``stackConfigDir`` is not set. Every command that takes ``--stack`` finds the
stack and the program in that layout; gpu-fabric's own layout (this repository) says ``stacks/``
explicitly.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from gpu_fabric.program.project import STACK_PROGRAM_TEXT, read_project
from gpu_fabric.program.urn import parse_urn
from support.bad_input import run_cli
from support.fake_kube import FakeApiServer
from support.stack_configs import PROJECT_DIR
from support.verify_clusters import seed_cluster

PULUMI_NEW_PROJECT = "name: platform\nruntime:\n  name: python\ndescription: A minimal Python Pulumi program\n"
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.invalid", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1",
           "PATH": "/usr/bin:/bin:/usr/local/bin"}


def pulumi_new_layout(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "Pulumi.yaml").write_text(PULUMI_NEW_PROJECT)
    (folder / "__main__.py").write_text('"""A Python Pulumi program"""\n\n' + STACK_PROGRAM_TEXT)
    for stack in ("seed-rdma", "aws-efa"):
        shutil.copy(PROJECT_DIR / "stacks" / f"Pulumi.{stack}.yaml", folder / f"Pulumi.{stack}.yaml")
    return folder


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """The layout, committed as the only commit of branch ``main`` (for ``diff``)."""
    folder = pulumi_new_layout(tmp_path_factory.mktemp("pulumi-new"))
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "pulumi new python"]):
        subprocess.run(["git", "-C", str(folder), *args], check=True, capture_output=True, env=GIT_ENV)
    return folder


def test_main_and_stack_config_dir_default_to_the_project_folder(tmp_path):
    folder = pulumi_new_layout(tmp_path)
    found = read_project(folder)
    assert (found.name, found.main, found.stack_config_dir) == ("platform", ".", ".")
    assert found.program_path == folder / "__main__.py" and found.stacks_folder == folder


def test_the_example_project_keeps_its_explicit_stacks_folder():
    document = yaml.safe_load((PROJECT_DIR / "Pulumi.yaml").read_text())
    assert document["main"] == "stacks/" and document["stackConfigDir"] == "stacks"
    found = read_project(PROJECT_DIR)
    assert found.program_path == PROJECT_DIR / "stacks" / "__main__.py"
    assert found.stacks_folder == PROJECT_DIR / "stacks"


def test_a_folder_without_pulumi_yaml_is_read_in_gpu_fabrics_layout(tmp_path):
    found = read_project(tmp_path)
    assert (found.name, found.main, found.stack_config_dir) == ("gpu-fabric", "stacks", "stacks")


def test_render_finds_the_stack_and_the_program_beside_pulumi_yaml(project, tmp_path):
    outcome = run_cli("render", "--project", str(project), "--stack", "seed-rdma", "--out", str(tmp_path / "out"))
    assert outcome.code == 0, outcome.describe()
    resources = json.loads((tmp_path / "out" / "resources.json").read_text())
    assert resources and {parse_urn(r["urn"]).project for r in resources} == {"platform"}


def test_render_without_stack_renders_every_stack_file_beside_pulumi_yaml(tmp_path):
    folder = pulumi_new_layout(tmp_path / "project")
    outcome = run_cli("render", "--project", str(folder), "--quiet")
    assert outcome.code == 0, outcome.describe()
    assert [line.split(":")[0] for line in outcome.out.splitlines()] == ["stack aws-efa", "stack seed-rdma"]
    assert (folder / "out" / "aws-efa" / "resources.json").is_file()


def test_check_runs_the_pack_over_the_stack(project):
    outcome = run_cli("check", "--project", str(project), "--stack", "seed-rdma")
    assert outcome.code == 0, outcome.describe()
    assert outcome.out.startswith("stack seed-rdma: 17 resources checked against ")


def test_lint_judges_workloads_against_the_stacks_pools(project):
    wrong = PROJECT_DIR / "tests" / "fixtures" / "workloads" / "vllm-efa-wrong.yaml"
    outcome = run_cli("lint", "--stack", "aws-efa", "--project", str(project), str(wrong))
    assert outcome.code == 1, outcome.describe()
    assert "(pool gpustack--nvidia-h100-linux-amd64): requests vpc.amazonaws.com/efa without hugepages-2Mi" in outcome.out


def test_efa_info_prints_the_stacks_domains(project):
    outcome = run_cli("efa-info", "--stack", "aws-efa", "--project", str(project), "--offline")
    assert outcome.code == 0, outcome.describe()
    assert outcome.out.startswith("EFA domain ")


def test_verify_reads_the_stack_and_checks_the_cluster(project, tmp_path):
    with FakeApiServer(seed_cluster()) as server:
        kubeconfig = server.kubeconfig(tmp_path)
        outcome = run_cli("verify", "--project", str(project), "--stack", "seed-rdma", "--kubeconfig", str(kubeconfig))
    assert outcome.code == 0, outcome.describe()
    assert "result: ok" in outcome.out


def test_diff_reads_the_base_in_the_same_layout(project):
    outcome = run_cli("diff", "--base", "main", "--stack", "seed-rdma", "--project", str(project))
    assert outcome.code == 0, outcome.describe()
    summary = json.loads(outcome.out)["changeSummary"]
    assert summary == {"create": 0, "update": 0, "replace": 0, "delete": 0, "same": 17}


def _stacks_layout_without_keys(folder: Path, *, program_beside: bool) -> Path:
    (folder / "stacks").mkdir(parents=True)
    (folder / "Pulumi.yaml").write_text(PULUMI_NEW_PROJECT)
    shutil.copy(PROJECT_DIR / "stacks" / "Pulumi.seed-rdma.yaml", folder / "stacks" / "Pulumi.seed-rdma.yaml")
    (folder / ("__main__.py" if program_beside else "stacks/__main__.py")).write_text(STACK_PROGRAM_TEXT)
    return folder


def test_a_program_in_stacks_without_main_says_to_add_main(tmp_path):
    folder = _stacks_layout_without_keys(tmp_path, program_beside=False)
    outcome = run_cli("render", "--project", str(folder), "--stack", "seed-rdma", "--out", str(tmp_path / "out"))
    assert outcome.code == 2 and not outcome.crashed, outcome.describe()
    assert outcome.err.count("\n") == 1 and "add `main: stacks/` to" in outcome.err
    assert "Pulumi's default is the project folder" in outcome.err


@pytest.mark.parametrize("command", ["render", "check"])
def test_stack_files_in_stacks_without_stack_config_dir_say_to_add_it(tmp_path, command):
    folder = _stacks_layout_without_keys(tmp_path, program_beside=True)
    outcome = run_cli(command, "--project", str(folder), "--stack", "seed-rdma")
    assert outcome.code == 2 and not outcome.crashed, outcome.describe()
    assert outcome.err.count("\n") == 1 and "add `stackConfigDir: stacks` to" in outcome.err
    assert str(folder / "Pulumi.seed-rdma.yaml") + " does not exist" in outcome.err


def test_the_ci_example_finds_changed_stacks_beside_pulumi_yaml(tmp_path):
    import os
    import sys

    import gpu_fabric

    folder = pulumi_new_layout(tmp_path / "platform")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "base"], ["checkout", "-q", "-b", "work"]):
        subprocess.run(["git", "-C", str(folder), *args], check=True, capture_output=True, env=GIT_ENV)
    env = {**os.environ, "PYTHONPATH": str(Path(gpu_fabric.__file__).resolve().parents[1])}

    def changed() -> list[str]:
        run = subprocess.run([sys.executable, str(PROJECT_DIR / "examples" / "ci" / "gpu_fabric_pr.py"), "changed-stacks",
                              "--base", "main", "--project", str(folder)], capture_output=True, text=True, env=env, timeout=120)
        assert run.returncode == 0, run.stderr
        return run.stdout.split()

    def commit(path: str, text: str) -> None:
        (folder / path).write_text((folder / path).read_text() + text)
        subprocess.run(["git", "-C", str(folder), "commit", "-q", "-am", path], check=True, capture_output=True, env=GIT_ENV)

    assert changed() == []
    commit("Pulumi.aws-efa.yaml", "\n")
    assert changed() == ["aws-efa"]
    commit("__main__.py", "\n")  # the program: every stack
    assert changed() == ["aws-efa", "seed-rdma"]
