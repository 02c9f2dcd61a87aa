"""Every command reads ``secure:`` values where render does, refuses plaintext credentials, and quotes neither."""

import pytest
import yaml

from support.bad_input import dump, project_with, run_cli, stack_document
from support.workloads import with_container, wrap

CIPHERTEXT = "v1:AAAAAAAAAAAAAAAA:c2VjcmV0LWNpcGhlcnRleHQtbm9ib2R5LW1heS1xdW90ZQ=="
HF_TOKEN = "hf_" + "Ab1" * 11 + "x"  # the shape of a Hugging Face user access token, not a real one


def _stack_with_env(value, role_change=None) -> str:
    document = stack_document("seed-rdma")
    role = document["config"]["gpu-fabric:modelDeployments"][0]["roles"][0]
    role["env"] = [{"name": "HF_TOKEN", "value": value}]
    if role_change:
        role.update(role_change)
    return dump(document)


def _commands(project, tmp_path):
    manifest = tmp_path / "workload.yaml"
    manifest.write_text(yaml.safe_dump(wrap("Deployment", with_container())))
    return {
        "render": ["render", "--project", str(project), "--stack", "x", "--out", str(tmp_path / "out")],
        "check": ["check", "--project", str(project), "--stack", "x"],
        "lint --stack": ["lint", "--stack", "x", "--project", str(project), str(manifest)],
        "efa-info --stack": ["efa-info", "--offline", "--stack", "x", "--project", str(project), "p5.48xlarge"],
    }


@pytest.mark.parametrize("command", ["render", "check", "lint --stack", "efa-info --stack"])
def test_a_secure_env_value_is_read_by_every_command_and_never_quoted(tmp_path, command):
    project = project_with(tmp_path, _stack_with_env({"secure": CIPHERTEXT}))
    outcome = run_cli(*_commands(project, tmp_path)[command])
    assert outcome.code in (0, 1) and not outcome.crashed, outcome.describe()  # 1: lint's verdict on its manifest
    assert "[secret]" not in outcome.err and CIPHERTEXT not in outcome.out + outcome.err
    if command == "render":
        written = "".join(path.read_text() for path in (tmp_path / "out").rglob("*") if path.is_file())
        assert CIPHERTEXT not in written and "[secret]" in written


@pytest.mark.parametrize("command", ["render", "check", "lint --stack", "efa-info --stack"])
def test_a_secure_value_a_field_refuses_is_reported_without_its_ciphertext(tmp_path, command):
    project = project_with(tmp_path, _stack_with_env("x", {"image": {"secure": CIPHERTEXT}}))
    outcome = run_cli(*_commands(project, tmp_path)[command])
    assert outcome.code == 2 and not outcome.crashed, outcome.describe()
    assert CIPHERTEXT not in outcome.out + outcome.err and "image" in outcome.err


@pytest.mark.parametrize("command", ["render", "check", "lint --stack", "efa-info --stack"])
def test_a_plaintext_token_in_a_role_env_is_refused_by_every_command(tmp_path, command):
    project = project_with(tmp_path, _stack_with_env(HF_TOKEN))
    outcome = run_cli(*_commands(project, tmp_path)[command])
    assert outcome.code == 2 and not outcome.crashed, outcome.describe()
    assert "gpu-fabric:modelDeployments[0].roles[0].env[0].value: HF_TOKEN holds a Hugging Face token" in outcome.err
    assert "pulumi config set --secret" in outcome.err
    assert HF_TOKEN not in outcome.out + outcome.err
    assert not (tmp_path / "out").exists()


def test_lint_stack_refuses_a_plaintext_token_in_a_manifest(tmp_path):
    project = project_with(tmp_path, dump(stack_document("aws-efa")))
    manifest = tmp_path / "deployment.yaml"
    manifest.write_text(yaml.safe_dump(wrap("Deployment", with_container(env=[{"name": "HF_TOKEN", "value": HF_TOKEN}]))))
    outcome = run_cli("lint", "--stack", "x", "--project", str(project), str(manifest))
    assert outcome.code == 1, outcome.describe()
    assert "spec.template.spec.containers[0].env[0].value: HF_TOKEN holds a Hugging Face token in plain text" in outcome.out
    assert "[plaintext-credential]" in outcome.out and HF_TOKEN not in outcome.out + outcome.err
