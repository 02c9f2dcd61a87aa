"""Every policy of the pack, imported: :data:`ALL_POLICIES` and :data:`POLICIES_BY_NAME`.

``gpu_fabric.policies`` resolves these names from here when they are first read (its module ``__getattr__``),
so that importing one policy module, the pack's settings or the analyzer's call scope does not import
every rule of every domain (issue 39: the ready pack answers the engine's handshake before this import and
runs it while the stack program starts, :mod:`gpu_fabric.policies.served_pack`).
"""

from __future__ import annotations

from pulumi_policy import Policy

from gpu_fabric.policies.advertisers import fabric_advertisers
from gpu_fabric.policies.device_manager import device_manager_least_privilege
from gpu_fabric.policies.device_plugins import device_plugin_coverage
from gpu_fabric.policies.dra import dra_device_claims
from gpu_fabric.policies.dra_pools import dra_pools
from gpu_fabric.policies.efa_domains import efa_domain_placement, efa_domain_security_group
from gpu_fabric.policies.efa_interfaces import efa_launch_template_interfaces
from gpu_fabric.policies.finite_numbers import finite_numbers
from gpu_fabric.policies.instance_facts import pool_instance_facts
from gpu_fabric.policies.karpenter import karpenter_efa_pool
from gpu_fabric.policies.kueue import kueue_fabric_keys_covered, kueue_fabric_workload_queue
from gpu_fabric.policies.capacity import pool_accelerator_capacity
from gpu_fabric.policies.kv_cache import kv_cache_transport_fabric, kv_cache_unreferenced
from gpu_fabric.policies.node_groups import efa_node_group_placement
from gpu_fabric.policies.security import (
    kubelet_host_access,
    launch_template_ebs_encrypted,
    launch_template_imdsv2,
    model_deployment_unprivileged_roles,
    mooncake_members_unprivileged,
)
from gpu_fabric.policies.security_groups import efa_security_group_self_rules
from gpu_fabric.policies.topology import (
    fabric_pool_topology,
    fabric_pool_topology_alignment,
    fabric_pool_topology_delivered,
)
from gpu_fabric.policies.transfer_paths import gpustack_operator_unverified, transfer_path_consistency
from gpu_fabric.policies.workloads import fabric_workloads, fabric_workloads_advisory

ALL_POLICIES: list[Policy] = [
    transfer_path_consistency,
    efa_launch_template_interfaces,
    pool_instance_facts,
    efa_security_group_self_rules,
    efa_node_group_placement,
    efa_domain_placement,
    efa_domain_security_group,
    karpenter_efa_pool,
    device_plugin_coverage,
    fabric_advertisers,
    dra_pools,
    device_manager_least_privilege,
    fabric_pool_topology,
    fabric_pool_topology_alignment,
    fabric_pool_topology_delivered,
    kv_cache_transport_fabric,
    kv_cache_unreferenced,
    pool_accelerator_capacity,
    kueue_fabric_workload_queue,
    kueue_fabric_keys_covered,
    mooncake_members_unprivileged,
    launch_template_imdsv2,
    launch_template_ebs_encrypted,
    model_deployment_unprivileged_roles,
    kubelet_host_access,
    fabric_workloads,
    fabric_workloads_advisory,
    dra_device_claims,
    finite_numbers,
    gpustack_operator_unverified,
]
"""Every policy, in the order the pack lists them. Each reports the findings of the rules it adapts; a
finding that rests on a value unknown at preview is withheld (:func:`gpu_fabric.policies.reporting.report_finding`)."""

POLICIES_BY_NAME: dict[str, Policy] = {policy.name: policy for policy in ALL_POLICIES}
