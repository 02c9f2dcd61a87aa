"""``pulumi preview`` under the real engine, with the policy pack loaded from ``policy/``.

What the mocks could not show: that the engine starts the pack (a Python policy pack run by the
language host), sends it what it really sends (wire doubles, secrets, unknowns), that a mandatory
violation fails the preview with the operator's own message, and that a value unknown at preview is
not refused.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from e2e.engine import ROOT, PulumiWorkspace, gpu_fabric, output_of, rendered_objects

PACK_NAME = "gpu-fabric"
NO_FABRIC_LEG = "no effective RDMA or EFA transfer leg uses the requested interfaces"
"""The operator's admission message (pkg/worker/webhooks/worker/model_deployment.go) the pack repeats."""


def test_seed_stack_previews_clean_with_the_pack(workspace: PulumiWorkspace):
    workspace.stack_init("seed-rdma")
    done = workspace.pulumi("preview", "--stack", "seed-rdma", "--policy-pack", str(workspace.project / "policy"))
    assert done.returncode == 0, output_of(done)
    text = done.stdout + done.stderr
    assert "Policies:" in text, output_of(done)
    assert PACK_NAME in text.split("Policies:", 1)[1], output_of(done)
    assert "mandatory" not in text.split("Policies:", 1)[1], output_of(done)


def test_a_stack_file_whose_deployment_has_no_transfer_leg_is_refused_at_its_field(workspace: PulumiWorkspace):
    config_file = workspace.project / "stacks" / "Pulumi.seed-rdma.yaml"
    stack = yaml.safe_load(config_file.read_text())
    deployment = stack["config"]["gpu-fabric:modelDeployments"][0]
    deployment.pop("kvTransfer")
    deployment.pop("router")
    config_file.write_text(yaml.safe_dump(stack, sort_keys=False))
    workspace.stack_init("seed-rdma")
    done = workspace.pulumi("preview", "--stack", "seed-rdma", "--policy-pack", str(workspace.project / "policy"))
    text = done.stdout + done.stderr
    assert done.returncode != 0, output_of(done)
    assert "modelDeployments[0].roles[0].resources.interface" in text, output_of(done)
    assert "Traceback" not in text, output_of(done)


def test_a_misspelt_config_namespace_fails_the_preview_as_render_refuses_it(workspace: PulumiWorkspace):
    """``gpufabric:modelDeployments`` beside ``gpu-fabric:pools``: render refuses it at its key, and so does the
    program under the engine (which hands it every namespace), instead of previewing without the deployment."""
    config_file = workspace.project / "stacks" / "Pulumi.seed-rdma.yaml"
    stack = yaml.safe_load(config_file.read_text())
    stack["config"]["gpufabric:modelDeployments"] = stack["config"].pop("gpu-fabric:modelDeployments")
    config_file.write_text(yaml.safe_dump(stack, sort_keys=False))
    workspace.stack_init("seed-rdma")
    done = workspace.pulumi("preview", "--stack", "seed-rdma", "--policy-pack", str(workspace.project / "policy"))
    text = done.stdout + done.stderr
    assert done.returncode != 0, output_of(done)
    assert "gpufabric:modelDeployments: namespace 'gpufabric' is not 'gpu-fabric:'" in text, output_of(done)
    assert "Traceback" not in text, output_of(done)


def _seed_model_deployment(tmp_path: Path) -> dict:
    out = tmp_path / "seed-out"
    done = gpu_fabric("render", "--stack", "seed-rdma", "--out", str(out), "--quiet")
    assert done.returncode == 0, output_of(done)
    return next(obj for obj in rendered_objects(out) if obj["kind"] == "ModelDeployment")


TEAM_PROGRAM = '''\
"""A team's own program: a raw GPUStack ModelDeployment, no gpu-fabric component."""
import json
import pulumi_kubernetes as k8s

manifest = json.loads(open("deployment.json").read())
k8s.apiextensions.CustomResource(
    "raw-deployment",
    api_version=manifest["apiVersion"], kind=manifest["kind"],
    metadata=manifest["metadata"], spec=manifest["spec"])
'''


def test_a_raw_model_deployment_the_operator_refuses_fails_preview_with_its_message(
        engine_bin, cluster, tmp_path: Path):
    manifest = _seed_model_deployment(tmp_path)
    manifest["spec"].pop("router")
    manifest["spec"].pop("kvTransfer")
    workspace = PulumiWorkspace.program(tmp_path / "team", engine_bin, cluster.kubeconfig, tmp_path,
                                        "team-serving", "python",
                                        {"__main__.py": TEAM_PROGRAM, "deployment.json": json.dumps(manifest)})
    cluster.ensure_namespace("team-a")
    workspace.stack_init("dev")
    done = workspace.pulumi("preview", "--stack", "dev", "--policy-pack", str(ROOT / "policy"))
    text = done.stdout + done.stderr
    assert done.returncode != 0, output_of(done)
    assert NO_FABRIC_LEG in text, output_of(done)
    assert "gpustack-transfer-path-consistency" in text and "mandatory" in text, output_of(done)


UNKNOWN_INPUT_PROGRAM = '''\
"""A component input that is another resource's output: unknown at preview, so nothing to refuse yet."""
import pulumi
import pulumi_kubernetes as k8s
from gpu_fabric import ModelDeployment

namespace = k8s.core.v1.Namespace("tenant", metadata={"name": "team-a"})
deployment = {
    "name": "qwen-pd", "namespace": "team-a",
    "model": {"name": "Qwen/Qwen2.5-7B-Instruct"},
    # The namespace's uid exists only once the namespace is created: the engine sends it as unknown.
    "engine": {"name": "vLLM", "image": pulumi.Output.concat("gpustack/runner:cuda13.0-vllm0.29.0-", namespace.metadata.uid)},
    "router": {"name": "llm-d-router"},
    "kvTransfer": {"protocol": "RDMA"},
    "roles": [
        {"name": "prefill", "kind": "Prefill", "replicas": 1, "instanceType": "gpustack--nvidia-a10g-linux-amd64",
         "resources": {"accelerator": "2", "interface": "2"}},
        {"name": "decode", "kind": "Decode", "replicas": 1, "instanceType": "gpustack--nvidia-a10g-linux-amd64",
         "resources": {"accelerator": "2", "interface": "2"}},
    ],
}
ModelDeployment("qwen-pd", {"deployment": deployment},
                opts=pulumi.ResourceOptions(depends_on=[namespace]))
'''


def test_a_component_input_unknown_at_preview_is_not_refused(engine_bin, cluster, tmp_path: Path):
    workspace = PulumiWorkspace.program(tmp_path / "team", engine_bin, cluster.kubeconfig, tmp_path,
                                        "team-serving", "python", {"__main__.py": UNKNOWN_INPUT_PROGRAM})
    workspace.stack_init("dev")
    done = workspace.pulumi("preview", "--stack", "dev", "--policy-pack", str(ROOT / "policy"))
    assert done.returncode == 0, output_of(done)
    assert "Policies:" in done.stdout, output_of(done)
