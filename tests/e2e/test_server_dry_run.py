"""Every Kubernetes object of every example stack, as a real API server would store it.

The offline checks validate against gpu-fabric's own reading of the schemas; here the server itself
decides: its OpenAPI validation, the CRDs' structural schemas and CEL rules (Karpenter's, Kueue's,
GPUStack's), admission defaults and pruning. A field the server drops is a field the user believes is
set but is not: the test names each one.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from e2e.engine import ROOT, gpu_fabric, missing_fields, output_of, rendered_objects

STACKS = sorted(path.name.removeprefix("Pulumi.").removesuffix(".yaml")
                for path in (ROOT / "stacks").glob("Pulumi.*.yaml"))


@pytest.mark.parametrize("stack", STACKS)
def test_every_object_passes_server_side_dry_run_unpruned(stack, cluster, tmp_path: Path):
    out = tmp_path / "out"
    done = gpu_fabric("render", "--stack", stack, "--out", str(out), "--quiet")
    assert done.returncode == 0, output_of(done)
    objects = rendered_objects(out)
    assert objects, f"render of {stack} wrote no Kubernetes object"
    for namespace in sorted({obj["metadata"]["namespace"] for obj in objects if obj["metadata"].get("namespace")}):
        cluster.ensure_namespace(namespace)

    problems = []
    for obj in objects:
        ref = f"{obj['kind']} {obj['metadata'].get('namespace', '')}/{obj['metadata']['name']}"
        if obj["kind"] == "Namespace":
            # A tenant namespace (a server-side apply the stack adopts, docs/stacks.md#tenant-namespaces) was
            # made above for the objects inside it: a dry-run create of it would only say AlreadyExists.
            if cluster.get(obj) is None:
                problems.append(f"{ref}: not created")
            continue
        try:
            stored = cluster.dry_run_create(obj)
        except Exception as refused:  # the server's refusal, with its message
            problems.append(f"{ref}: refused: {getattr(refused, 'body', refused)}")
            continue
        problems += [f"{ref}: {problem}" for problem in missing_fields(obj, stored)]
    assert problems == []
