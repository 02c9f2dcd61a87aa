"""Policy ``efa-node-group-placement``: the rule of :mod:`gpu_fabric.aws.node_group_placement` over a stack's node groups.

A node group is EFA when it carries ``vpc.amazonaws.com/efa.present: "true"`` or its launch template
(referenced by a known name, or registered beside it) has EFA interfaces. Its placement is read from
that launch template and the node group's ``capacityType``; a placement group created by the same
component counts as the template's group when the template's ``placement`` refers to a value unknown
at preview.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from pulumi_policy import EnforcementLevel, Severity, StackValidationArgs, StackValidationPolicy

from gpu_fabric.aws.node_group_placement import NodeGroupPlacement, placement_findings
from gpu_fabric.findings import Finding
from gpu_fabric.config.shapes import as_list, as_mapping, is_unknown, known_str
from gpu_fabric.policies.engine_wire import stack_resources
from gpu_fabric.plan.resource_view import EFA_PRESENT_LABEL, NODE_GROUP_TYPE, PLACEMENT_GROUP_TYPE, efa_interfaces, node_group_launch_template, Resource, siblings
from gpu_fabric.policies.reporting import report_finding


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


def node_group_placement(node_group: Resource, resources: Sequence[Resource]) -> Optional[NodeGroupPlacement]:
    """The placement of one node group as its resources declare it (``None`` for a group without EFA)."""
    template = node_group_launch_template(node_group, resources)
    is_efa = (as_mapping(node_group.props.get("labels")).get(EFA_PRESENT_LABEL) == "true"
              or (template is not None and bool(efa_interfaces(template.props))))
    if not is_efa:
        return None
    subnets = node_group.props.get("subnetIds")
    subnet_count = None if is_unknown(subnets) else len(as_list(subnets))
    if template is None:
        return NodeGroupPlacement(node_group.name, subnet_count)
    placement = as_mapping(template.props.get("placement"))
    group_name = placement.get("groupName") or placement.get("groupId")
    created = siblings(template, resources, PLACEMENT_GROUP_TYPE)
    if not group_name and "placement" in template.props and created:
        # A group created beside the template has no name before it exists (auto-named): the
        # reference is unknown at preview and dropped by the offline render.
        group_name = created[0].name
    return NodeGroupPlacement(
        node_group.name, subnet_count, launch_template=template.name,
        placement_group=str(group_name) if group_name else None,
        reserved=targets_reserved_capacity(node_group, template),
        created_groups=tuple((group.name, known_str(group.props.get("strategy"))) for group in created))


def node_group_findings(node_group: Resource, resources: Sequence[Resource]) -> list[Finding]:
    """Every placement problem of one EFA node group ([] for a non-EFA group)."""
    placement = node_group_placement(node_group, resources)
    return placement_findings(placement) if placement is not None else []


def _validate(args: StackValidationArgs, report_violation: Any) -> None:
    resources = stack_resources(args)
    for node_group in resources:
        if node_group.type == NODE_GROUP_TYPE:
            for finding in node_group_findings(node_group, resources):
                report_finding(report_violation, finding, finding.message, node_group.urn)


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
