"""Policy d: an EFA node group lives in one subnet, in a cluster placement group unless it targets reserved capacity.

EFA's OS-bypass traffic does not cross subnets or AZs, and EFA's latency depends on the nodes
sharing a ``cluster`` placement group. A group that launches into an On-Demand Capacity
Reservation or a Capacity Block must not get a new placement group (its reserved instances would
not launch in it): AWS places such capacity.

A node group is EFA when it carries ``vpc.amazonaws.com/efa.present: "true"`` or its launch
template (referenced by a known name, or registered beside it) has EFA interfaces. Placement,
reservations and Capacity Blocks are read from that launch template and the node group's
``capacityType``; a placement group created by the same component counts as the template's group
when the template's ``placement`` refers to a value unknown at preview.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from pulumi_policy import EnforcementLevel, Severity, StackValidationArgs, StackValidationPolicy

from gpu_fabric.config.aws_rules import subnet_count_problem
from gpu_fabric.policies._props import (
    EFA_PRESENT_LABEL,
    NODE_GROUP_TYPE,
    PLACEMENT_GROUP_TYPE,
    Resource,
    as_list,
    as_mapping,
    efa_interfaces,
    is_unknown,
    known_str,
    node_group_launch_template,
    siblings,
    stack_resources,
)


def targets_reserved_capacity(node_group: Resource, template: Optional[Resource]) -> bool:
    """The group launches into a capacity reservation or a Capacity Block."""
    if known_str(node_group.props.get("capacityType")) == "CAPACITY_BLOCK":
        return True
    if template is None:
        return False
    reservation = as_mapping(template.props.get("capacityReservationSpecification"))
    if reservation.get("capacityReservationTarget") or known_str(reservation.get("capacityReservationPreference")) == "capacity-reservations-only":
        return True
    return known_str(as_mapping(template.props.get("instanceMarketOptions")).get("marketType")) == "capacity-block"


def node_group_findings(node_group: Resource, resources: Sequence[Resource]) -> list[str]:
    """Every placement problem of one EFA node group ([] for a non-EFA group)."""
    template = node_group_launch_template(node_group, resources)
    is_efa = (as_mapping(node_group.props.get("labels")).get(EFA_PRESENT_LABEL) == "true"
              or (template is not None and bool(efa_interfaces(template.props))))
    if not is_efa:
        return []
    problems = []
    subnets = node_group.props.get("subnetIds")
    subnet_problem = None if is_unknown(subnets) else subnet_count_problem(len(as_list(subnets)))
    if subnet_problem:
        problems.append(f"EFA node group {node_group.name}: {subnet_problem}")
    if template is None:
        return problems
    reserved = targets_reserved_capacity(node_group, template)
    placement = as_mapping(template.props.get("placement"))
    group_name = placement.get("groupName") or placement.get("groupId")
    created = siblings(template, resources, PLACEMENT_GROUP_TYPE)
    if not group_name and "placement" in template.props and created:
        # A group created beside the template has no name before it exists (auto-named): the
        # reference is unknown at preview and dropped by the offline render.
        group_name = created[0].name
    if not reserved and not group_name:
        problems.append(
            f"EFA node group {node_group.name}: launch template {template.name} sets no placement group; EFA nodes "
            "need a cluster placement group unless they launch into a capacity reservation or Capacity Block"
        )
    if reserved and created:
        problems.append(
            f"EFA node group {node_group.name} targets a capacity reservation or Capacity Block but a new "
            f"placement group ({', '.join(g.name for g in created)}) is created for it; reserved instances would not launch in it"
        )
    for group in created:
        strategy = known_str(group.props.get("strategy"))
        if strategy is not None and strategy != "cluster":
            problems.append(f"placement group {group.name} of EFA node group {node_group.name} uses strategy {strategy!r}, not 'cluster'")
    return problems


def _validate(args: StackValidationArgs, report_violation: Any) -> None:
    resources = stack_resources(args)
    for node_group in resources:
        if node_group.type == NODE_GROUP_TYPE:
            for problem in node_group_findings(node_group, resources):
                report_violation(problem, node_group.urn)


efa_node_group_placement = StackValidationPolicy(
    name="efa-node-group-placement",
    display_name="EFA node groups: one subnet, cluster placement",
    description=(
        "An EFA node group uses exactly one subnet, and a cluster placement group unless it targets a "
        "capacity reservation or a Capacity Block (which must not get a new placement group)."
    ),
    validate=_validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    tags=["aws", "efa", "eks", "placement"],
    remediation_steps=(
        "Give the node group a single subnetIds entry in the availability zone you chose, and set "
        "placement.groupName on its launch template to a placement group with strategy 'cluster' (EfaNodeGroup "
        "creates one with placementGroup.mode: create). For capacity reservations and Capacity Blocks use "
        "placementGroup.mode: none (or an existing group the reservation was made in)."
    ),
)
