"""The gpu-fabric CrossGuard policy pack: ``pulumi preview --policy-pack ./policy``.

The only place a ``PolicyPack`` is constructed (constructing it starts the analyzer's gRPC server,
prints its port and serves until the engine stops it). The policies live in ``gpu_fabric.policies``
so other packs can compose them.
"""

from pulumi_policy import EnforcementLevel, PolicyPack

from gpu_fabric import __version__
from gpu_fabric.policies import ALL_POLICIES

PolicyPack(
    name="gpu-fabric",
    policies=list(ALL_POLICIES),
    enforcement_level=EnforcementLevel.MANDATORY,
    description=(
        "Refuses, at preview, the GPU-fabric mistakes admission controllers catch too late or never: GPUStack "
        "transfer paths, EFA interface plans and security groups, placement, device-plugin coverage, kubelet "
        "topology, KV-cache transports, Kueue queue names and workload privileges."
    ),
    display_name=f"gpu-fabric {__version__}",
    provider="aws",
    tags=["gpu", "efa", "rdma", "kueue", "gpustack"],
)
