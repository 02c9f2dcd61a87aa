"""``gpustackOperator: 0.12.0+as-0.11`` works in render, check and lint, and every one of them warns."""

import pytest
import yaml

from support.bad_input import dump, project_with, run_cli, stack_document

WARNING = "GPUStack operator 0.12.0 is newer than every line gpu-fabric mirrors"


def _project(tmp_path, version="0.12.0+as-0.11"):
    document = stack_document("seed-rdma")
    config = document["config"]
    config["gpu-fabric:gpustackOperator"] = version
    for deployment in config["gpu-fabric:modelDeployments"]:
        for role in deployment["roles"]:
            role["acceleratorType"] = role.pop("instanceType")  # the 0.11 line's spelling
    return project_with(tmp_path, dump(document))


@pytest.mark.parametrize("command", [["render", "--quiet"], ["render"], ["check", "--quiet"]])
def test_every_render_and_check_warns(tmp_path, command):
    project = _project(tmp_path)
    extra = ["--out", str(tmp_path / "out")] if command[0] == "render" else []
    outcome = run_cli(command[0], "--project", str(project), "--stack", "x", *extra, *command[1:])
    assert outcome.code == 0, outcome.describe()
    assert outcome.err.count(WARNING) == 1 and "0.11 line" in outcome.err
    if command[0] == "check":
        assert "gpustack-operator-unverified [advisory" in outcome.out and WARNING in outcome.out


def test_without_the_suffix_the_newer_release_is_refused_saying_how(tmp_path):
    project = _project(tmp_path, "0.12.0")
    outcome = run_cli("render", "--project", str(project), "--stack", "x", "--out", str(tmp_path / "out"))
    assert outcome.code == 2 and "gpustackOperator" in outcome.err and "0.12.0+as-0.11" in outcome.err, outcome.describe()


def test_lint_warns_with_the_operator_option_and_with_the_stacks_setting(tmp_path):
    project = _project(tmp_path)
    manifest = tmp_path / "objects.yaml"
    manifest.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}))
    for argv in (["lint", "--operator", "0.12.0+as-0.11", str(manifest)],
                 ["lint", "--stack", "x", "--project", str(project), str(manifest)]):
        outcome = run_cli(*argv)
        assert outcome.code == 0, outcome.describe()
        assert WARNING in outcome.err and "GPUStack operator 0.12.0 assumed (0.11 line" in outcome.out
