"""Verify a fake 512-node cluster end to end; print wall time and the requests it took.

The stack: 16 pools (RDMA and EFA alternating) of 32 nodes each, 8 tenant namespaces (128
LocalQueues) and the EFA device plugin. The cluster: a fake Kubernetes API server on 127.0.0.1
(``tests/fake_kube.py``) holding those 512 healthy nodes, whose ``/configz`` answers take
``--configz-delay`` seconds each (the API server proxies to every kubelet), plus the stack's objects.
``gpu-fabric verify`` runs in-process exactly as from the command line: render and validate the
stack, list nodes, read every kubelet's configz concurrently, look up every object, compare.

    python benchmarks/verify_fleet.py                      # 512 nodes, 20 ms per configz
    python benchmarks/verify_fleet.py --nodes-per-pool 64  # 1,024 nodes

Target (2-core machine, server and client sharing it): 512 nodes in under 15 s.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import yaml

PROJECT_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT_DIR / "tests"))

from support.fake_kube import FakeApiServer, FakeCluster, kubelet_config, node  # noqa: E402
from support.verify_clusters import apply  # noqa: E402

POOLS = 16
NAMESPACES = 8


def fleet_stack(nodes_per_pool: int) -> dict:
    """``config:`` of the benchmark stack file."""
    pools = []
    for i in range(POOLS):
        fabric = "rdma" if i % 2 == 0 else "efa"
        pools.append({"name": f"gpustack--nvidia-gpu{i:02d}-linux-amd64", "fabric": fabric, "acceleratorsPerNode": 8,
                      "interfacesPerNode": 8 if fabric == "rdma" else 32, "nodeCount": nodes_per_pool,
                      "nodeLabels": {"bench.gpu-fabric.dev/pool": f"gpu{i:02d}",
                                     **({"vpc.amazonaws.com/efa.present": "true"} if fabric == "efa" else {})}})
    return {"gpu-fabric:queueOwner": "gpustack", "gpu-fabric:namespaces": [f"tenant-{i}" for i in range(NAMESPACES)],
            "gpu-fabric:pools": pools}


def fleet_cluster(stack: dict, manifests: list[dict], configz_delay: float) -> FakeCluster:
    """A healthy cluster for ``stack``: every pool's nodes, kubelets and the stack's objects."""
    cluster = FakeCluster(configz_delay=configz_delay)
    for pool in stack["gpu-fabric:pools"]:
        fabric_key = "device.gpustack.ai/rdma" if pool["fabric"] == "rdma" else "vpc.amazonaws.com/efa"
        allocatable = {"cpu": "190", "memory": "1900Gi", "nvidia.com/gpu": str(pool["acceleratorsPerNode"]),
                       fabric_key: str(pool["interfacesPerNode"])}
        for j in range(pool["nodeCount"]):
            name = f"{pool['nodeLabels']['bench.gpu-fabric.dev/pool']}-node-{j:03d}"
            cluster.add_node(node(name, dict(pool["nodeLabels"]), allocatable), kubelet_config())
    apply(cluster, manifests, ready_pods=len(cluster.nodes))
    return cluster


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes-per-pool", type=int, default=32)
    parser.add_argument("--configz-delay", type=float, default=0.02, help="seconds per configz answer (default 0.02)")
    args = parser.parse_args()

    from gpu_fabric.cli import main as gpu_fabric
    from gpu_fabric.program.render import render_stack

    stack = fleet_stack(args.nodes_per_pool)
    manifests = render_stack("verify-fleet", PROJECT_DIR, config=stack).kubernetes_objects()
    cluster = fleet_cluster(stack, manifests, args.configz_delay)
    with tempfile.TemporaryDirectory() as folder, FakeApiServer(cluster) as server:
        project = Path(folder) / "project"
        shutil.copytree(PROJECT_DIR / "stacks", project / "stacks")
        (project / "stacks" / "Pulumi.verify-fleet.yaml").write_text(yaml.safe_dump({"config": stack}))
        kubeconfig = server.kubeconfig(Path(folder))
        output = io.StringIO()
        started = time.perf_counter()
        with contextlib.redirect_stdout(output):
            code = gpu_fabric(["verify", "--project", str(project), "--stack", "verify-fleet",
                               "--kubeconfig", str(kubeconfig), "--json"])
        elapsed = time.perf_counter() - started
    report = json.loads(output.getvalue()) if code in (0, 1) else {}
    nodes = sum(len(pool["nodes"]) for pool in report.get("pools", []))
    requests = cluster.requests
    print(f"nodes verified       {nodes} in {len(report.get('pools', []))} pools; objects {len(manifests)}")
    print(f"result               {report.get('result', 'error')} (exit {code})")
    print(f"wall time            {elapsed:.2f} s (configz answer delay {args.configz_delay * 1000:.0f} ms)")
    print(f"node list requests   {sum(1 for r in requests if r.startswith('/api/v1/nodes?'))} "
          "(one list, pages of 500)")
    print(f"configz requests     {sum(1 for r in requests if r.endswith('/proxy/configz'))}")
    print(f"all requests         {len(requests)}")
    print(f"target               < 15 s for 512 nodes: {'met' if elapsed < 15 and code == 0 else 'NOT met'}")
    return 0 if code == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
