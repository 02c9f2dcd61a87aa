"""The stack as policies read it -- kept at this path for the packs that import it from here.

The module is :mod:`gpu_fabric.plan.resource_view`: it lives below the policies so that ``gpu-fabric render``
reads the stack the way the pack does without importing the pack (or ``pulumi_policy``).
"""

from gpu_fabric.plan.resource_view import (
    EFA_INTERFACE_TYPES,
    GPU_FABRIC_TYPE,
    KUEUE_POOL_TYPE,
    LAUNCH_TEMPLATE_TYPE,
    NODE_GROUP_TYPE,
    PLACEMENT_GROUP_TYPE,
    SECURITY_GROUP_TYPE,
    PoolFacts,
    Resource,
    ancestors,
    efa_interfaces,
    is_efa_launch_template,
    kubernetes_objects,
    node_group_launch_template,
    pool_facts,
    pool_node_groups,
    queue_owner,
    siblings,
)

__all__ = [
    "EFA_INTERFACE_TYPES", "GPU_FABRIC_TYPE", "KUEUE_POOL_TYPE", "LAUNCH_TEMPLATE_TYPE", "NODE_GROUP_TYPE",
    "PLACEMENT_GROUP_TYPE", "SECURITY_GROUP_TYPE", "PoolFacts", "Resource", "ancestors", "efa_interfaces",
    "is_efa_launch_template", "kubernetes_objects", "node_group_launch_template", "pool_facts", "pool_node_groups",
    "queue_owner", "siblings",
]
