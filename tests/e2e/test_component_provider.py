"""The component provider (``provider/``) under the real engine, from a Pulumi YAML program.

Other teams use gpu-fabric's components from languages other than Python through this provider: the
engine starts ``provider/`` (``PulumiPlugin.yaml``, ``runtime: python``) through the Python language
host, asks it for its schema, and constructs the component it declares. Here the YAML language host
(github.com/pulumi/pulumi-yaml) plays the other team.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from e2e.engine import ROOT, PulumiWorkspace, output_of


def _seed_pool() -> dict:
    stack = yaml.safe_load((ROOT / "stacks" / "Pulumi.seed-rdma.yaml").read_text())
    pool = dict(stack["config"]["gpu-fabric:pools"][0])
    # The schema types topologyAgent as its settings object (TopologyAgentSettingsArgs); a stack file's
    # `true` is `{}` (every default) to a typed language.
    if pool.get("topologyAgent") is True:
        pool["topologyAgent"] = {}
    return pool


def test_a_yaml_program_declares_a_component_and_previews_and_applies(engine_bin, cluster, tmp_path: Path):
    program = {
        "resources": {
            "a10g-queues": {
                "type": "gpu-fabric:index:KueuePool",
                "properties": {"pool": _seed_pool(), "namespaces": ["team-a"], "queueOwner": "standalone"},
            },
        },
        "outputs": {"localQueues": "${a10g-queues.localQueueNames}"},
    }
    workspace = PulumiWorkspace.program(
        tmp_path / "yaml-team", engine_bin, cluster.kubeconfig, tmp_path, "yaml-team", "yaml",
        {}, extra={"plugins": {"providers": [{"name": "gpu-fabric", "path": str(ROOT / "provider")}]},
                   **program})
    cluster.ensure_namespace("team-a")
    workspace.stack_init("dev")
    preview = workspace.pulumi("preview", "--stack", "dev")
    assert preview.returncode == 0, output_of(preview)
    assert "gpu-fabric:index:KueuePool" in preview.stdout, output_of(preview)

    up = workspace.pulumi("up", "--stack", "dev", "--yes", "--skip-preview")
    assert up.returncode == 0, output_of(up)
    queues = cluster.resource("kueue.x-k8s.io/v1beta2", "LocalQueue").get(namespace="team-a").to_dict()["items"]
    assert [q["metadata"]["name"] for q in queues if q["metadata"]["name"].startswith("gpustack-fnv64-")], queues
    destroy = workspace.pulumi("destroy", "--stack", "dev", "--yes")
    assert destroy.returncode == 0, output_of(destroy)
