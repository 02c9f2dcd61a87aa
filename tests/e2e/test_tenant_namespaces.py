"""``pulumi up`` of a stack whose tenant namespaces are absent, on a bare control plane, succeeds whole; destroy
leaves a namespace someone else made as it was (docs/stacks.md#tenant-namespaces, issue 38).

The walkthrough's stack with two tenant namespaces: ``team-a`` (its ModelDeployment's) absent, as on a new
cluster, and ``inference-prod`` made beforehand by the platform team with a label of its own. Before the
stack owned its namespaces, ``up`` created the cluster-scoped objects and failed every object in a missing
namespace with ``namespaces "..." not found``.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from e2e.engine import PulumiWorkspace, gpu_fabric, output_of, rendered_objects

STACK = "seed-rdma"
ABSENT = "team-a"
PRE_EXISTING = "inference-prod"
PLATFORM_LABEL = {"owner": "platform-team"}


def _with_namespaces(workspace: PulumiWorkspace, namespaces: list[str]) -> None:
    path = workspace.project / "stacks" / f"Pulumi.{STACK}.yaml"
    document = yaml.safe_load(path.read_text())
    document["config"]["gpu-fabric:namespaces"] = namespaces
    path.write_text(yaml.safe_dump(document, sort_keys=False))


def _namespace(cluster, name: str):
    return cluster.get({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})


def _name(obj: dict) -> str:
    return f"{obj['kind']} {obj['metadata'].get('namespace', '')}/{obj['metadata']['name']}"


def test_up_creates_absent_namespaces_first_and_destroy_keeps_every_namespace(workspace: PulumiWorkspace, cluster,
                                                                            tmp_path: Path):
    _with_namespaces(workspace, [ABSENT, PRE_EXISTING])
    out = tmp_path / "render"
    done = gpu_fabric("render", "--stack", STACK, "--project", str(workspace.project), "--out", str(out), "--quiet")
    assert done.returncode == 0, output_of(done)
    objects = rendered_objects(out)
    in_tenant_namespaces = [o for o in objects if o["metadata"].get("namespace") in (ABSENT, PRE_EXISTING)]
    assert {o["metadata"]["namespace"] for o in in_tenant_namespaces} == {ABSENT, PRE_EXISTING}

    assert _namespace(cluster, ABSENT) is None
    cluster.resource("v1", "Namespace").create(body={
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": PRE_EXISTING, "labels": PLATFORM_LABEL}})
    before = _namespace(cluster, PRE_EXISTING)

    workspace.stack_init(STACK)
    policy = ("--policy-pack", str(workspace.project / "policy"))
    preview = workspace.pulumi("preview", "--stack", STACK, *policy)
    assert preview.returncode == 0, output_of(preview)
    up = workspace.pulumi("up", "--stack", STACK, "--yes", "--skip-preview", *policy)
    assert up.returncode == 0, output_of(up)
    assert re.search(r'namespaces? "[^"]+" not found', up.stdout + up.stderr) is None, output_of(up)
    absent = [_name(o) for o in objects if cluster.get(o) is None]
    assert absent == [], output_of(up)
    adopted = _namespace(cluster, PRE_EXISTING)
    assert adopted["metadata"]["uid"] == before["metadata"]["uid"]
    assert PLATFORM_LABEL.items() <= (adopted["metadata"].get("labels") or {}).items()

    again = workspace.pulumi("preview", "--stack", STACK, "--expect-no-changes")
    assert again.returncode == 0, output_of(again)

    destroy = workspace.pulumi("destroy", "--stack", STACK, "--yes")
    assert destroy.returncode == 0, output_of(destroy)
    # Both namespaces stay: the one the stack created and the one it found. The found one is the same object
    # with its own label; nothing the stack put inside is left (only what the GPUStack operator shares, the
    # server-side apply patches, which are not the stack's to delete).
    created = _namespace(cluster, ABSENT)
    assert created is not None and created["status"]["phase"] == "Active", created
    kept = _namespace(cluster, PRE_EXISTING)
    assert kept is not None and kept["metadata"]["uid"] == before["metadata"]["uid"]
    assert kept["status"]["phase"] == "Active" and "deletionTimestamp" not in kept["metadata"]
    assert PLATFORM_LABEL.items() <= (kept["metadata"].get("labels") or {}).items()
    patches = _patches(out)
    left = [_name(o) for o in objects
            if o["kind"] != "Namespace" and _key(o) not in patches and cluster.get(o) is not None]
    assert left == []


def _key(obj: dict) -> tuple:
    return obj["kind"], obj["metadata"].get("namespace"), obj["metadata"]["name"]


def _patches(render: Path) -> set:
    import json

    resources = json.loads((render / "resources.json").read_text())
    return {(r["inputs"]["kind"], r["inputs"]["metadata"].get("namespace"), r["inputs"]["metadata"]["name"])
            for r in resources if r["type"].startswith("kubernetes:") and r["type"].endswith("Patch")}
