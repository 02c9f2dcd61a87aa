"""Small command-line defects: empty folder and operator arguments, project names Pulumi refuses, a
closed pipe after ``--version``, and a ``$KUBECONFIG`` that names a missing file."""

import os
import subprocess
import sys

import pytest

from support.bad_input import dump, project_with, run_cli, stack_document
from support.stack_configs import PROJECT_DIR


def test_render_out_empty_is_refused_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    outcome = run_cli("render", "--project", str(PROJECT_DIR), "--stack", "seed-rdma", "--out", "")
    assert outcome.code == 2 and "--out" in outcome.err and "empty" in outcome.err, outcome.describe()
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("option", ["--record", "--replay"])
def test_verify_record_or_replay_empty_is_refused(tmp_path, monkeypatch, option):
    monkeypatch.chdir(tmp_path)
    outcome = run_cli("verify", "--project", str(PROJECT_DIR), "--stack", "seed-rdma", option, "")
    assert outcome.code == 2 and option in outcome.err, outcome.describe()
    assert not list(tmp_path.iterdir())


def test_lint_operator_empty_is_refused(tmp_path):
    manifest = tmp_path / "empty.yaml"
    manifest.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    outcome = run_cli("lint", "--operator", "", str(manifest))
    assert outcome.code == 2, outcome.describe()
    assert "--operator '' is not a GPUStack operator version" in outcome.err


@pytest.mark.parametrize("name", ["team::gpu", "team gpu", "a" * 101])
def test_a_project_name_pulumi_refuses_is_refused_naming_the_field(tmp_path, name):
    project = project_with(tmp_path, dump(stack_document("seed-rdma")))
    (project / "Pulumi.yaml").write_text(f"name: '{name}'\nruntime: python\nmain: stacks/\nstackConfigDir: stacks\n")
    for command in (["render", "--out", str(tmp_path / "out")], ["check"]):
        outcome = run_cli(command[0], "--project", str(project), "--stack", "x", *command[1:])
        assert outcome.code == 2 and not outcome.crashed, outcome.describe()
        assert "Pulumi.yaml: `name:`" in outcome.err and "is not a Pulumi project name" in outcome.err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("name", ["team::gpu", "team gpu"])
def test_the_library_reads_no_project_pulumi_refuses(tmp_path, name):
    """render_stack (the library, diff's renders) refuses it where the project is read, not only the CLI."""
    from gpu_fabric.program.project import ProjectError
    from gpu_fabric.program.render import render_stack

    project = project_with(tmp_path, dump(stack_document("seed-rdma")))
    (project / "Pulumi.yaml").write_text(f"name: '{name}'\nruntime: python\nmain: stacks/\nstackConfigDir: stacks\n")
    with pytest.raises(ProjectError, match="is not a Pulumi project name"):
        render_stack("x", project)


def test_a_dotted_project_name_pulumi_takes_still_renders(tmp_path):
    project = project_with(tmp_path, dump(stack_document("seed-rdma")))
    (project / "Pulumi.yaml").write_text("name: team.gpu_fabric-1\nruntime: python\nmain: stacks/\nstackConfigDir: stacks\n")
    outcome = run_cli("render", "--project", str(project), "--stack", "x", "--out", str(tmp_path / "out"))
    assert outcome.code == 0, outcome.describe()


@pytest.mark.parametrize("argv", [["--version"], ["--help"]])
def test_a_reader_that_goes_away_gets_no_broken_pipe_error(argv):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(PROJECT_DIR / "components"), os.environ.get("PYTHONPATH", "")])}
    process = subprocess.Popen([sys.executable, "-m", "gpu_fabric.cli", *argv], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env=env)
    process.stdout.close()  # `| head -1` that already exited: the first write fails
    _, err = process.communicate(timeout=60)
    assert b"BrokenPipeError" not in err and b"Exception ignored" not in err and b"Traceback" not in err, err


def test_kubeconfig_naming_a_missing_file_says_so(monkeypatch, tmp_path):
    missing = tmp_path / "nonexistent"
    monkeypatch.setenv("KUBECONFIG", str(missing))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    outcome = run_cli("verify", "--project", str(PROJECT_DIR), "--stack", "seed-rdma")
    assert outcome.code == 2, outcome.describe()
    assert f"{missing}, the file $KUBECONFIG names, does not exist" in outcome.err
    assert "is unset" not in outcome.err
