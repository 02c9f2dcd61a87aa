"""An EFA node group lives in one subnet, in a cluster placement group unless it targets reserved capacity.

EFA's OS-bypass traffic does not cross subnets or AZs, and EFA's latency depends on the nodes sharing
a ``cluster`` placement group (EC2 User Guide, "Get started with EFA"). A group that launches into an
On-Demand Capacity Reservation or a Capacity Block must not get a new placement group: its reserved
instances would not launch in it (EC2 User Guide, "Capacity Blocks" and "Placement groups").

:func:`placement_findings` is the rule. The ``efa-node-group-placement`` policy describes each EFA node
group of a stack from its resources' inputs (:class:`NodeGroupPlacement`); ``load_config`` describes the
node group ``EfaNodeGroup`` would build from a pool's typed ``aws`` spec (:func:`spec_placement`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from gpu_fabric.config.aws_rules import subnet_count_problem
from gpu_fabric.config.node_group import AwsNodeGroupSpec
from gpu_fabric.findings import Finding, Rule

EFA_NODE_GROUP_PLACEMENT = Rule(
    "efa-node-group-placement",
    "an EFA node group uses one subnet and a cluster placement group, and no new group when it targets reserved "
    "capacity", "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-start.html", policy="efa-node-group-placement")

CLUSTER_STRATEGY = "cluster"


@dataclass(frozen=True)
class NodeGroupPlacement:
    """Where one EFA node group's instances land, as far as the rule cares."""

    node_group: str
    """The node group's name (as its messages name it)."""
    subnet_count: Optional[int]
    """How many subnets it uses (``None``: not known at preview)."""
    launch_template: Optional[str] = None
    """The name of its launch template (``None``: none found; the placement rules then do not apply)."""
    placement_group: Optional[str] = None
    """The placement group the template launches into (``None``: none)."""
    reserved: bool = False
    """It launches into a capacity reservation or a Capacity Block."""
    created_groups: tuple[tuple[str, Optional[str]], ...] = ()
    """``(name, strategy)`` of the placement groups created for it (strategy ``None``: not known)."""


def placement_findings(placement: NodeGroupPlacement) -> list[Finding]:
    """Every placement problem of one EFA node group."""
    name = placement.node_group
    problems: list[str] = []
    subnet_problem = None if placement.subnet_count is None else subnet_count_problem(placement.subnet_count)
    if subnet_problem:
        problems.append(f"EFA node group {name}: subnetIds: {subnet_problem}")
    if placement.launch_template is not None:
        if not placement.reserved and not placement.placement_group:
            problems.append(
                f"EFA node group {name}: launch template {placement.launch_template} sets no placement group; EFA nodes "
                "need a cluster placement group unless they launch into a capacity reservation or Capacity Block")
        if placement.reserved and placement.created_groups:
            problems.append(
                f"EFA node group {name} targets a capacity reservation or Capacity Block but a new placement group "
                f"({', '.join(group for group, _ in placement.created_groups)}) is created for it; reserved instances "
                "would not launch in it")
        for group, strategy in placement.created_groups:
            if strategy is not None and strategy != CLUSTER_STRATEGY:
                problems.append(f"placement group {group} of EFA node group {name} uses strategy {strategy!r}, not 'cluster'")
    return [Finding.of(EFA_NODE_GROUP_PLACEMENT, "", problem) for problem in problems]


def spec_placement(pool: str, spec: AwsNodeGroupSpec) -> NodeGroupPlacement:
    """The placement of the node group ``EfaNodeGroup`` builds for pool ``pool`` from its typed ``aws`` spec.

    Named as the pool's node group and launch template are named in messages (``<pool>-ng``, ``<pool>-lt``);
    ``create`` and ``domain`` create a cluster group (the EFA domain's shared one, or the node group's own
    when it is alone), ``existing`` names one.
    """
    mode = spec.placement_group.mode
    created: tuple[tuple[str, Optional[str]], ...] = ()
    group: Optional[str] = None
    if mode in ("create", "domain"):
        group = f"{pool}-placement"
        created = ((group, CLUSTER_STRATEGY),)
    elif mode == "existing":
        group = spec.placement_group.name
    reserved = spec.capacity_type == "CAPACITY_BLOCK" or bool(spec.capacity_reservation_id)
    if spec.is_karpenter:  # the same rule: the EC2NodeClass stands where the launch template does
        return NodeGroupPlacement(node_group=f"{pool} (Karpenter NodePool)", subnet_count=1,
                                  launch_template=f"{pool} (EC2NodeClass placementGroupSelector)",
                                  placement_group=group, reserved=reserved, created_groups=created)
    return NodeGroupPlacement(node_group=f"{pool}-ng", subnet_count=1, launch_template=f"{pool}-lt",
                              placement_group=group, reserved=reserved, created_groups=created)
