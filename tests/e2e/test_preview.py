"""``pulumi preview`` under the real engine, with the policy pack loaded from ``policy/``.

What the mocks could not show: that the engine starts the pack (a Python policy pack run by the
language host), sends it what it really sends (wire doubles, secrets, unknowns), that a mandatory
violation fails the preview with the operator's own message, and that a value unknown at preview is
not refused.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
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


def _decided(preview_json: str) -> tuple[list[tuple[str, str]], list[str]]:
    """What a ``pulumi preview --json`` decided: each step's operation and URN, and its diagnostics (policy
    violations among them)."""
    document = json.loads(preview_json)
    steps = sorted((step["op"], step["urn"]) for step in document.get("steps", []))
    return steps, sorted(json.dumps(diagnostic, sort_keys=True) for diagnostic in document.get("diagnostics", []))


def test_the_ci_helpers_preview_skips_checkpoints_and_decides_as_a_plain_preview(workspace: PulumiWorkspace,
                                                                               tmp_path: Path):
    """``examples/ci/gpu_fabric_pr.py preview`` runs the engine with ``PULUMI_SKIP_CHECKPOINTS=true`` (a preview persists
    nothing; the per-step snapshots cost the square of the resources): the same steps and the same diagnostics as
    ``pulumi preview --json --policy-pack`` run as the engine runs it by default."""
    workspace.stack_init("seed-rdma")
    pack = str(workspace.project / "policy")
    assert "PULUMI_SKIP_CHECKPOINTS" not in workspace.env
    plain = workspace.pulumi("preview", "--stack", "seed-rdma", "--json", "--policy-pack", pack)
    helper = subprocess.run([sys.executable, str(ROOT / "examples" / "ci" / "gpu_fabric_pr.py"), "preview",
                             "--stack", "seed-rdma", "--project", str(workspace.project), "--out", str(tmp_path),
                             "--policy-pack", pack], capture_output=True, text=True, env=workspace.env, timeout=600)
    assert plain.returncode == 0 and helper.returncode == 0, output_of(plain) + output_of(helper)
    decided = _decided((tmp_path / "seed-rdma.preview.json").read_text())
    assert decided == _decided(plain.stdout), output_of(helper)
    steps, diagnostics = decided
    created = {urn.rsplit("::", 1)[0].rsplit("$", 1)[-1] for op, urn in steps if op == "create"}
    assert {"kubernetes:apps/v1:DaemonSet", "gpu-fabric:index:KueuePool", "gpu-fabric:index:ModelDeployment"} <= created, steps
    assert not diagnostics, diagnostics
    assert "pulumi preview exit 0" in helper.stdout, output_of(helper)
