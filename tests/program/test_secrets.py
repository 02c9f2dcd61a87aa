"""Configuration given as Pulumi secrets stays secret: secret Outputs in the program, ``[secret]`` in files."""

import json

import pytest

from pulumi.runtime import rpc

from support.bad_input import dump, project_with, run_cli, stack_document
from gpu_fabric.program.render import render_stack
from support.stack_configs import PROJECT_DIR, stack_values

TOKEN = "hf_live_token_do_not_print"


def seed_with_token():
    values = stack_values("seed-rdma")
    values["modelDeployments"][0]["roles"][0]["env"] = [{"name": "HF_TOKEN", "value": TOKEN}]
    return {f"gpu-fabric:{key}": value for key, value in values.items()}


def test_a_secret_key_registers_its_objects_with_a_secret_spec(monkeypatch):
    from pulumi.runtime import config as runtime_config

    real = runtime_config.set_all_config

    def with_secret_key(config, secret_keys=None):
        real(config, [*(secret_keys or []), "gpu-fabric:modelDeployments"])

    monkeypatch.setattr(runtime_config, "set_all_config", with_secret_key)
    result = render_stack("seed-rdma", PROJECT_DIR, config=seed_with_token())
    deployment = next(r for r in result.resources if r.type.endswith(":ModelDeployment"))
    assert rpc.is_rpc_secret(deployment.inputs["spec"]), "the ModelDeployment spec is a secret Output"
    assert TOKEN in json.dumps(deployment.policy_inputs)  # policies read the value, as in the analyzer
    assert TOKEN not in json.dumps(deployment.public_inputs) and deployment.public_inputs["spec"] == "[secret]"
    others = [r for r in result.resources if r is not deployment]
    assert not any(rpc.is_rpc_secret(r.inputs.get("spec")) for r in others), "only the secret key's objects"


def test_render_writes_secret_for_a_secure_value_and_check_still_runs(tmp_path):
    document = stack_document("seed-rdma")
    document["config"]["gpu-fabric:modelDeployments"][0]["roles"][0]["env"] = [
        {"name": "HF_TOKEN", "value": {"secure": "v1:AAAABBBBCCCC"}}]
    project = project_with(tmp_path / "project", dump(document))
    render = run_cli("render", "--project", str(project), "--stack", "x", "--out", str(tmp_path / "out"))
    assert render.code == 0, render.describe()
    written = "".join(p.read_text() for p in (tmp_path / "out").rglob("*") if p.is_file())
    assert "v1:AAAABBBBCCCC" not in written
    manifest = next((tmp_path / "out" / "k8s" / "team-a").glob("modeldeployment-*.yaml")).read_text()
    assert "spec: '[secret]'" in manifest
    check = run_cli("check", "--project", str(project), "--stack", "x")
    assert check.code == 0, check.describe()


def test_keys_that_cannot_be_secret_are_refused(tmp_path):
    document = stack_document("seed-rdma")
    document["config"]["gpu-fabric:namespaces"] = [{"secure": "v1:AAAA"}]
    outcome = run_cli("render", "--project", str(project_with(tmp_path, dump(document))), "--stack", "x",
                      "--out", str(tmp_path / "out"))
    assert outcome.code == 2 and "namespaces: is a secret" in outcome.err, outcome.describe()


def test_the_documented_token_volume_is_accepted():
    import re

    import yaml

    from gpu_fabric.validation.configuration import load_config

    guide = (PROJECT_DIR / "docs" / "stacks.md").read_text()
    section = guide[guide.index("## Secrets and model tokens"):]
    snippet = yaml.safe_load(re.search(r"```yaml\n(.*?)```", section, re.S).group(1).replace("          # ...\n", ""))
    role = snippet["roles"][0]
    values = stack_values("seed-rdma")
    values["modelDeployments"][0]["roles"][0].update(env=role["env"], additionalVolumes=role["additionalVolumes"])
    config = load_config(values)
    volume = config.model_deployments[0].roles[0].additional_volumes[0]
    assert volume.secret.name == "hf-token" and volume.read_only is True


# -- values from the environment, secure: values in verify, messages ---------------------------------

CIPHERTEXT = "v1:AAAABBBBCCCCsecretcipher"


def test_pulumi_config_from_the_environment_is_ignored_like_the_readme_says(tmp_path, monkeypatch):
    """``PULUMI_CONFIG`` (and its secret keys) would otherwise fill keys the stack file lacks, as plain text."""
    document = stack_document("seed-rdma")
    deployments = document["config"].pop("gpu-fabric:modelDeployments")
    deployments[0]["roles"][0]["env"] = [{"name": "HF_TOKEN", "value": TOKEN}]
    project = project_with(tmp_path / "project", dump(document))
    quiet = run_cli("render", "--project", str(project), "--stack", "x", "--out", str(tmp_path / "quiet"))
    assert quiet.code == 0, quiet.describe()
    monkeypatch.setenv("PULUMI_CONFIG", json.dumps({"gpu-fabric:modelDeployments": json.dumps(deployments)}))
    monkeypatch.setenv("PULUMI_CONFIG_SECRET_KEYS", json.dumps(["gpu-fabric:modelDeployments"]))
    monkeypatch.setenv("PULUMI_CONFIG_GPU_FABRIC_MODELDEPLOYMENTS", json.dumps(deployments))
    loud = run_cli("render", "--project", str(project), "--stack", "x", "--out", str(tmp_path / "loud"))
    assert loud.code == 0, loud.describe()
    written = {p.relative_to(tmp_path / "loud"): p.read_bytes() for p in (tmp_path / "loud").rglob("*") if p.is_file()}
    assert TOKEN.encode() not in b"".join(written.values())
    assert written == {p.relative_to(tmp_path / "quiet"): p.read_bytes()
                       for p in (tmp_path / "quiet").rglob("*") if p.is_file()}
    readme = (PROJECT_DIR / "README.md").read_text()
    assert "`PULUMI_CONFIG*`" in readme


def test_a_stack_with_a_secure_value_verifies(tmp_path):
    from support.fake_kube import FakeApiServer
    from support.verify_clusters import seed_cluster

    document = stack_document("seed-rdma")
    document["config"]["gpu-fabric:modelDeployments"][0]["roles"][0]["env"] = [
        {"name": "HF_TOKEN", "value": {"secure": CIPHERTEXT}}]
    project = project_with(tmp_path / "project", dump(document))
    with FakeApiServer(seed_cluster()) as server:
        kubeconfig = server.kubeconfig(tmp_path)
        outcome = run_cli("verify", "--project", str(project), "--stack", "x", "--kubeconfig", str(kubeconfig),
                          "--json")
    assert outcome.code == 0, outcome.describe()
    assert json.loads(outcome.out)["result"] == "pass"
    assert CIPHERTEXT not in outcome.out + outcome.err


@pytest.mark.parametrize("command", ["render", "check", "verify"])
def test_a_refused_secure_value_is_never_quoted(command, tmp_path):
    document = stack_document("seed-rdma")
    document["config"]["gpu-fabric:modelDeployments"][0]["roles"][0]["replicas"] = {"secure": CIPHERTEXT}
    project = project_with(tmp_path / "project", dump(document))
    extra = {"render": ["--out", str(tmp_path / "out")], "verify": ["--replay", str(tmp_path / "none")]}.get(command, [])
    outcome = run_cli(command, "--project", str(project), "--stack", "x", *extra)
    assert outcome.code == 2 and not outcome.crashed, outcome.describe()
    assert "replicas" in outcome.err
    assert CIPHERTEXT not in outcome.out + outcome.err and "AAAABBBB" not in outcome.out + outcome.err


def test_a_plain_token_the_engine_hands_the_program_is_refused_and_a_secret_one_is_not():
    """Under ``pulumi up`` the program sees values, not the stack file: a plain key's token is refused there too."""
    import copy

    from gpu_fabric.config.base import ConfigError
    from gpu_fabric.config.secrets import configuration_credentials
    from support.stack_configs import stack_values

    values = copy.deepcopy(stack_values("seed-rdma"))
    values["modelDeployments"][0]["roles"][0]["env"] = [{"name": "HF_TOKEN", "value": "hf_" + "a" * 34}]
    [(path, message)] = configuration_credentials(values, "gpu-fabric", secret_keys=[])
    assert path == "modelDeployments[0].roles[0].env[0].value" and "hf_" not in message
    assert "pulumi config set --secret --path 'gpu-fabric:modelDeployments[0].roles[0].env[0].value'" in message
    assert configuration_credentials(values, "gpu-fabric", secret_keys=["modelDeployments"]) == []
    with pytest.raises(ConfigError, match="HF_TOKEN looks like a credential"):
        render_stack("seed-rdma", PROJECT_DIR, config={f"gpu-fabric:{k}": v for k, v in values.items()})
