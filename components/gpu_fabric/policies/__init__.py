"""CrossGuard policies of gpu-fabric: the policy objects, for any pack to compose.

``policy/__main__.py`` is the ready pack (the only place a ``PolicyPack`` is constructed: that call
starts a gRPC server and never returns). Another team composes its own pack from these objects::

    from pulumi_policy import PolicyPack
    from gpu_fabric.policies import ALL_POLICIES

    PolicyPack("platform", policies=[*ALL_POLICIES, *my_policies])

Every policy reads only values known at preview (names, labels, spec fields), one concern per
module; ``gpu-fabric check`` runs the same objects over an offline render of a stack
(:mod:`gpu_fabric.policies.runner`).
"""

from __future__ import annotations

from typing import Any

from pulumi_policy import EnforcementLevel

PACK_SETTINGS: dict[str, Any] = {
    "name": "gpu-fabric",
    "enforcement_level": EnforcementLevel.MANDATORY,
    "description": (
        "Refuses, at preview, the GPU-fabric mistakes admission controllers catch too late or never: GPUStack "
        "transfer paths, EFA interface plans and security groups, placement, device-plugin coverage, kubelet "
        "topology, KV-cache transports, Kueue queue names and workload privileges."
    ),
    "provider": "aws",
    "tags": ["gpu", "efa", "rdma", "kueue", "gpustack"],
}
"""The ready pack's ``PolicyPack`` arguments besides its policies and display name: what
``policy/__main__.py`` serves and ``gpu-fabric check --preview`` serves in process."""


def pack_display_name(version: str) -> str:
    """The pack's display name for the library's ``version`` (``gpu_fabric.__version__``, above this layer)."""
    return f"gpu-fabric {version}"


__all__ = [
    "ALL_POLICIES",
    "PACK_SETTINGS",
    "POLICIES_BY_NAME",
    "device_manager_least_privilege",
    "device_plugin_coverage",
    "efa_domain_placement",
    "dra_device_claims",
    "efa_domain_security_group",
    "efa_launch_template_interfaces",
    "efa_node_group_placement",
    "efa_security_group_self_rules",
    "fabric_advertisers",
    "fabric_pool_topology",
    "fabric_workloads",
    "fabric_workloads_advisory",
    "gpustack_operator_unverified",
    "fabric_pool_topology_alignment",
    "fabric_pool_topology_delivered",
    "finite_numbers",
    "karpenter_efa_pool",
    "kubelet_host_access",
    "kueue_fabric_keys_covered",
    "kueue_fabric_workload_queue",
    "kv_cache_transport_fabric",
    "kv_cache_unreferenced",
    "launch_template_ebs_encrypted",
    "launch_template_imdsv2",
    "model_deployment_unprivileged_roles",
    "mooncake_members_unprivileged",
    "pack_display_name",
    "pool_accelerator_capacity",
    "pool_instance_facts",
    "transfer_path_consistency",
]


_FROM_ALL_POLICIES = frozenset(__all__) - {"PACK_SETTINGS", "pack_display_name"}


def __getattr__(name: str) -> Any:
    """``ALL_POLICIES``, ``POLICIES_BY_NAME`` and each policy object, imported on first use (PEP 562).

    Importing every policy imports every rule module (about a quarter of a second); the ready pack's process
    answers the engine's handshake first (:mod:`gpu_fabric.policies.served_pack`)."""
    if name in _FROM_ALL_POLICIES:
        from gpu_fabric.policies import all_policies

        value = getattr(all_policies, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
