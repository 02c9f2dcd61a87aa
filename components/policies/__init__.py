"""CrossGuard policies of gpu-fabric: the policy objects, for any pack to compose.

``policy/__main__.py`` is the ready pack (the only place a ``PolicyPack`` is constructed: that call
starts a gRPC server and never returns). Another team composes its own pack from these objects::

    from pulumi_policy import PolicyPack
    from gpu_fabric.policies import ALL_POLICIES, transfer_path_consistency

    PolicyPack("platform", policies=[*ALL_POLICIES, *my_policies])

Every policy reads only values known at preview (names, labels, spec fields), one concern per
module; ``gpu-fabric check`` runs the same objects over an offline render of a stack.
"""

from __future__ import annotations

from pulumi_policy import Policy

from gpu_fabric.policies.transfer_paths import transfer_path_consistency
from gpu_fabric.policies.efa_interfaces import efa_launch_template_interfaces

ALL_POLICIES: list[Policy] = [
    transfer_path_consistency,
    efa_launch_template_interfaces,
]
"""Every policy, in the order the pack lists them."""

POLICIES_BY_NAME: dict[str, Policy] = {policy.name: policy for policy in ALL_POLICIES}

__all__ = [
    "ALL_POLICIES",
    "POLICIES_BY_NAME",
    "efa_launch_template_interfaces",
    "transfer_path_consistency",
]
