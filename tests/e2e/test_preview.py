"""``pulumi preview`` under the real engine, with the policy pack loaded from ``policy/``.

What the mocks could not show: that the engine starts the pack (a Python policy pack run by the
language host), sends it what it really sends (wire doubles, secrets, unknowns), that a mandatory
violation fails the preview with the operator's own message, and that a value unknown at preview is
not refused.
"""

from __future__ import annotations

import base64
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


def test_a_binary_value_in_the_stack_file_fails_the_preview_as_render_refuses_it(workspace: PulumiWorkspace):
    """A ``!!binary`` model name: the engine decodes it and hands the program plain text, so the program reads its
    own stack file as ``render`` does and refuses the value at its key, before registering anything (a base64 value
    hides from a reviewer of the diff what the configuration says)."""
    # The stack exists first: ``pulumi stack init`` rewrites the file (adding the passphrase's encryptionsalt) and
    # writes such a value back decoded (``!!str Qwen/...``). The edit is a later change to the stack's file.
    workspace.stack_init("seed-rdma")
    config_file = workspace.project / "stacks" / "Pulumi.seed-rdma.yaml"
    model = "Qwen/Qwen2.5-7B-Instruct"
    text = config_file.read_text()
    assert f"name: {model}" in text
    config_file.write_text(text.replace(f"name: {model}", f"name: !!binary {base64.b64encode(model.encode()).decode()}"))
    refusal = "config.gpu-fabric:modelDeployments[0].model.name: binary data is not a JSON value"
    rendered = gpu_fabric("render", "--project", str(workspace.project), "--stack", "seed-rdma", "--out",
                          str(workspace.project / "out"))
    assert rendered.returncode == 2 and refusal in rendered.stderr, rendered.stdout + rendered.stderr
    done = workspace.pulumi("preview", "--stack", "seed-rdma", "--policy-pack", str(workspace.project / "policy"))
    output = done.stdout + done.stderr
    assert done.returncode != 0, output_of(done)
    assert f"{config_file.name}: {refusal}" in output, output_of(done)
    assert "Traceback" not in output, output_of(done)
    assert "gpu-fabric:index:GpuFabric" not in output, output_of(done)  # nothing registered
