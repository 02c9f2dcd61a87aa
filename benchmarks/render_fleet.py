"""Render a synthetic fleet and the same fleet at 4x; print wall time, peak memory and the time ratio.

The fleet at scale 1: 16 RDMA/EFA pools x 120 tenant namespaces of LocalQueues (1,920) plus 64
ModelDeployments and their components -- over 2,000 resources. Scale 4 multiplies namespaces and
deployments by four. Each size renders in its own process (the stack program under Pulumi's mock
runtime, exactly as ``gpu-fabric render`` runs it) so peak RSS is that size's alone.

    python benchmarks/render_fleet.py            # both sizes and the ratio
    python benchmarks/render_fleet.py --scale 2  # one size

Targets (2-core machine): scale 4 in under 20 s, and time(4x) / time(1x) at most 4.5.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parent.parent
POOLS = 16
NAMESPACES = 120
DEPLOYMENTS = 64


def fleet(scale: int) -> dict:
    """Stack configuration values (``gpu-fabric:*`` keys) of the synthetic fleet."""
    namespaces = [f"tenant-{i:04d}" for i in range(NAMESPACES * scale)]
    pools = []
    for i in range(POOLS):
        fabric = "rdma" if i % 2 == 0 else "efa"
        pool = {"name": f"gpustack--nvidia-gpu{i:02d}-linux-amd64", "fabric": fabric, "acceleratorsPerNode": 8,
                "interfacesPerNode": 8, "nodeCount": 4}
        if fabric == "efa":
            pool["nodeLabels"] = {"vpc.amazonaws.com/efa.present": "true"}
        pools.append(pool)
    deployments = []
    for i in range(DEPLOYMENTS * scale):
        pool = pools[i % POOLS]
        roles = [{"name": kind.lower(), "kind": kind, "replicas": 1, "instanceType": pool["name"],
                  "resources": {"accelerator": "4", "interface": "4"}} for kind in ("Prefill", "Decode")]
        deployments.append({"name": f"model-{i:04d}", "namespace": namespaces[i % len(namespaces)],
                            "model": {"name": "Qwen/Qwen2.5-7B-Instruct"}, "engine": {"name": "vLLM", "image": "gpustack/runner:cuda13.0-vllm0.29.0"},
                            "router": {"name": "llm-d-router"}, "kvTransfer": {"protocol": pool["fabric"].upper()},
                            "roles": roles})
    return {"gpu-fabric:queueOwner": "standalone", "gpu-fabric:namespaces": namespaces,
            "gpu-fabric:pools": pools, "gpu-fabric:modelDeployments": deployments}


def measure(scale: int) -> dict:
    """Render the fleet once in this process; return its figures."""
    from gpu_fabric.program.render import render_stack

    config = fleet(scale)
    started = time.perf_counter()
    result = render_stack(f"fleet-x{scale}", PROJECT_DIR, config=config)
    seconds = time.perf_counter() - started
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"scale": scale, "resources": len(result.resources), "seconds": round(seconds, 2), "peak_mib": round(peak_mib, 1)}


def in_child(scale: int) -> dict:
    output = subprocess.run([sys.executable, __file__, "--scale", str(scale), "--json"],
                            check=True, capture_output=True, text=True).stdout
    return json.loads(output.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=int, help="render one size in this process")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    if args.scale:
        figures = measure(args.scale)
        print(json.dumps(figures) if args.json else figures)
        return
    small, large = in_child(1), in_child(4)
    for figures in (small, large):
        print(f"scale {figures['scale']}: {figures['resources']:>6} resources  "
              f"{figures['seconds']:>6.2f} s  peak {figures['peak_mib']:>7.1f} MiB")
    print(f"time ratio 4x/1x: {large['seconds'] / small['seconds']:.2f} (target <= 4.5); "
          f"4x under 20 s: {'yes' if large['seconds'] < 20 else 'NO'}")


if __name__ == "__main__":
    main()
