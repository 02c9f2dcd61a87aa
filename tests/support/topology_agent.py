"""The kubelet topology agent's Kubernetes objects, as the agent, host-access and topology tests read them."""

from __future__ import annotations

from gpu_fabric.program.render import render_stack

from support.stack_configs import PROJECT_DIR, as_args, seed_values

AGENT_COMPONENT = "kubelet-topology-agent"
"""The ``gpu-fabric.io/component`` annotation of every object the agent is made of."""


def _agent_objects(manifests) -> dict[str, dict]:
    found: dict[str, dict] = {}
    for manifest in manifests:
        annotations = manifest["metadata"].get("annotations") or {}
        if annotations.get("gpu-fabric.io/component") == AGENT_COMPONENT:
            assert manifest["kind"] not in found
            found[manifest["kind"]] = manifest
    return found


def objects(values: dict) -> dict[str, dict]:
    """The agent's Kubernetes objects of a rendered configuration, by kind."""
    from gpu_fabric.resources.fabric import GpuFabric

    result = render_stack("test", config={}, program=lambda: GpuFabric("fabric", as_args(values)))
    return _agent_objects(result.kubernetes_objects())


def seed_agent() -> dict[str, dict]:
    """The agent's objects in the ``seed-rdma`` example stack, by kind."""
    return _agent_objects(render_stack("seed-rdma", PROJECT_DIR).kubernetes_objects())


def with_topology(topology: dict | None) -> dict:
    """The seed's values with the agent on its pool and, unless ``None``, this ``topology``."""
    values = seed_values()
    values["pools"][0]["topologyAgent"] = True
    if topology is not None:
        values["pools"][0]["topology"] = topology
    return values
