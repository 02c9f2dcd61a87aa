"""The walkthrough's stack through its whole life under the real engine: up, no drift, verify, destroy."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from e2e.engine import PulumiWorkspace, gpu_fabric, output_of, rendered_objects

STACK = "seed-rdma"


def _stack_config(workspace: PulumiWorkspace) -> dict:
    return yaml.safe_load((workspace.project / "stacks" / f"Pulumi.{STACK}.yaml").read_text())["config"]


def _node(name: str, labels: dict, allocatable: dict) -> tuple[dict, dict]:
    """A Node as the walkthrough's nodes advertise themselves (a control plane without kubelets keeps
    whatever status it is given)."""
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}
    status = {"status": {
        "capacity": allocatable, "allocatable": allocatable,
        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                        "message": "kubelet is posting ready status",
                        "lastHeartbeatTime": "2026-01-01T00:00:00Z", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
    }}
    return node, status


def test_up_no_drift_verify_destroy(workspace: PulumiWorkspace, cluster, tmp_path: Path):
    out = tmp_path / "render"
    done = gpu_fabric("render", "--stack", STACK, "--out", str(out), "--quiet")
    assert done.returncode == 0, output_of(done)
    objects = rendered_objects(out)
    # The walkthrough creates the tenant namespace by hand: the stack adopts it (docs/stacks.md#tenant-namespaces;
    # tests/e2e/test_tenant_namespaces.py runs the same stack with its namespaces absent).
    for namespace in _stack_config(workspace)["gpu-fabric:namespaces"]:
        cluster.ensure_namespace(namespace)

    workspace.stack_init(STACK)
    up = workspace.pulumi("up", "--stack", STACK, "--yes", "--skip-preview",
                          "--policy-pack", str(workspace.project / "policy"))
    assert up.returncode == 0, output_of(up)
    absent = [f"{o['kind']} {o['metadata'].get('namespace', '')}/{o['metadata']['name']}"
              for o in objects if cluster.get(o) is None]
    assert absent == []

    again = workspace.pulumi("preview", "--stack", STACK, "--expect-no-changes")
    assert again.returncode == 0, output_of(again)

    kubeconfig = str(cluster.kubeconfig)
    verify = gpu_fabric("verify", "--stack", STACK, "--project", str(workspace.project),
                        "--kubeconfig", kubeconfig, "--timeout", "60")
    text = verify.stdout + verify.stderr
    assert verify.returncode == 1, output_of(verify)
    assert "Traceback" not in text
    pool = _stack_config(workspace)["gpu-fabric:pools"][0]
    assert pool["name"] in text and "node" in text, output_of(verify)

    nodes = cluster.resource("v1", "Node")
    labels = {"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", **pool["nodeLabels"]}
    interfaces = str(pool["interfacesPerNode"])
    for i in range(pool["nodeCount"]):
        node, status = _node(f"a10g-{i}", labels, {
            "cpu": "48", "memory": "192Gi", "pods": "110",
            "nvidia.com/gpu": str(pool["acceleratorsPerNode"]),
            "device.gpustack.ai/rdma": interfaces,
            "device.gpustack.ai/rdma.shared": interfaces,
        })
        nodes.create(body=node)
        nodes.status.patch(name=node["metadata"]["name"], body=status, content_type="application/merge-patch+json")
    verify = gpu_fabric("verify", "--stack", STACK, "--project", str(workspace.project),
                        "--kubeconfig", kubeconfig, "--timeout", "60", "--json")
    assert "Traceback" not in verify.stderr, output_of(verify)
    report = json.loads(verify.stdout)
    problems = {(p["subject"], p["check"]): p for p in report["problems"]}
    # What a control plane without kubelets can show passes: the node count, readiness, the fabric
    # endpoints each node advertises. What it cannot show is named: each node's kubelet configz (not
    # checked), and the DaemonSet whose pods no kubelet runs (truly not ready).
    for i in range(pool["nodeCount"]):
        configz = problems.pop((f"node a10g-{i}", "kubelet configz"))
        assert configz["status"] == "inconclusive" and "no kubelet" in configz["detail"], configz
    assert [p["check"] for p in problems.values()] == ["pods ready"], output_of(verify)
    assert verify.returncode == 1, output_of(verify)

    destroy = workspace.pulumi("destroy", "--stack", STACK, "--yes")
    assert destroy.returncode == 0, output_of(destroy)
    # Objects the stack adopts rather than owns (server-side apply patches: the LocalQueue the GPUStack
    # operator creates under queueOwner gpustack) stay, without gpu-fabric's fields; the rest are gone.
    adopted = _adopted(out)
    left = [f"{o['kind']} {o['metadata'].get('namespace', '')}/{o['metadata']['name']}: "
            f"finalizers {(cluster.get(o) or {}).get('metadata', {}).get('finalizers')}"
            for o in objects if _key(o) not in adopted and cluster.get(o) is not None]
    assert left == []
    for obj in objects:
        if _key(obj) in adopted:
            managers = [f["manager"] for f in (cluster.get(obj) or {}).get("metadata", {}).get("managedFields") or []]
            assert not any(m.startswith("pulumi-kubernetes") for m in managers), managers


def _key(obj: dict) -> tuple:
    return obj["kind"], obj["metadata"].get("namespace"), obj["metadata"]["name"]


def _adopted(render: Path) -> set:
    """The objects registered as server-side apply patches (``...Patch`` types in resources.json)."""
    resources = json.loads((render / "resources.json").read_text())
    return {(r["inputs"]["kind"], r["inputs"]["metadata"].get("namespace"), r["inputs"]["metadata"]["name"])
            for r in resources if r["type"].startswith("kubernetes:") and r["type"].endswith("Patch")}
