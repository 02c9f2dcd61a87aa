"""What an EFA node group and a Karpenter EFA pool register alike before their nodes: the EFA security
group with its self rules (unless a shared one is given) and the cluster placement group; and what both then
say alike: where their nodes are (registered for the policies) and the network outputs they declare.

Children keep the names ``<name>-efa-sg``, ``<name>-efa-sg-self-ingress``, ``<name>-efa-sg-self-egress``
and ``<name>-placement`` under the calling component, so moving this code changed no URN.
"""

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Sequence, TypedDict

import pulumi
import pulumi_aws as aws

from gpu_fabric.aws.node_group import (
    efa_security_group_inputs,
    efa_self_egress_rule_inputs,
    efa_self_ingress_rule_inputs,
    placement_group_inputs,
)
from gpu_fabric.aws.efa import PlannedInterface
from gpu_fabric.config.node_group import AwsNodeGroupSpec
from gpu_fabric.resources.inputs import InvalidInputError


class NetworkInterfacePlan(TypedDict):
    """One network interface of the launch template.

    One-word keys: the provider passes lists of output objects to other languages without renaming
    their keys (``ComponentProvider.get_state`` maps only direct object outputs), so a key reads the
    same in every language.
    """

    card: int
    """Network card index of the interface."""
    device: int
    """Device index on that card."""
    type: str
    """``interface``, ``efa`` or ``efa-only``."""


@dataclass
class EfaNetwork:
    """The registered EFA security group and placement group (or what is shared instead)."""

    security_group: Optional[aws.ec2.SecurityGroup]
    """The component's own group; ``None`` when it uses a shared one."""
    rules: list[pulumi.Resource]
    """The self rules of its own group: nodes must not boot before EFA traffic between them is allowed."""
    group_id: Any
    """Id of the group on the EFA interfaces (own or shared)."""
    placement: Optional[aws.ec2.PlacementGroup]
    """The placement group created here, or ``None``."""
    placement_name: Any
    """Name of the placement group the nodes launch into, or ``None``."""

    def publish(self, component: Any, restore: Callable[[Any], Any], interfaces: Sequence[PlannedInterface]) -> None:
        """Set the outputs an EFA pool component declares for its network: ``security_group``, ``placement_group``,
        ``security_group_id``, ``placement_group_name`` and ``interface_plan`` (the interfaces, in order)."""
        component.security_group = pulumi.Output.from_input(self.security_group)
        component.placement_group = pulumi.Output.from_input(self.placement)
        component.security_group_id = pulumi.Output.from_input(restore(self.group_id))
        component.placement_group_name = pulumi.Output.from_input(self.placement_name)
        component.interface_plan = pulumi.Output.from_input([
            NetworkInterfacePlan(card=i.network_card_index, device=i.device_index, type=i.interface_type)
            for i in interfaces
        ])


def node_placement_inputs(spec: AwsNodeGroupSpec, is_deferred: Callable[[Any], bool]) -> dict[str, Any]:
    """What an EFA pool component registers as its inputs: where its nodes are and their instance types.

    Policies read them at preview (efa-domain-placement compares domains' zones); values still Outputs are
    left out, so the component never waits for their validation.
    """
    where = {"availabilityZone": spec.availability_zone, "vpcId": spec.vpc_id, "subnetId": spec.subnet_id}
    return {
        **{key: value for key, value in where.items() if not is_deferred(value)},
        "instanceTypes": list(spec.instance_types)}


def refuse_domain_placement(spec: AwsNodeGroupSpec, component: str) -> None:
    """``placementGroup.mode: domain`` needs the EFA domain, which only ``GpuFabric`` knows."""
    if spec.placement_group.mode == "domain":
        raise InvalidInputError([("placement_group.mode", "'domain' shares an EFA domain's placement group, which only "
                                  "GpuFabric knows; pass mode 'existing' with the group's name "
                                  "(EfaDomain.placement_group_name)")], component)


def register_efa_network(
    name: str,
    spec: AwsNodeGroupSpec,
    shared_group: Any,
    child: pulumi.ResourceOptions,
    resource_inputs: Callable[[Mapping[str, Any]], dict[str, Any]],
    restore: Callable[[Any], Any],
    scope: str = "node group",
) -> EfaNetwork:
    """Register the EFA security group (unless ``shared_group``) and the placement group ``spec`` asks for.

    ``resource_inputs`` turns builder inputs into pulumi-aws keyword arguments with Outputs put back;
    ``restore`` does the latter for one value.
    """
    tags = dict(spec.tags)
    security_group: Optional[aws.ec2.SecurityGroup] = None
    rules: list[pulumi.Resource] = []
    if shared_group is None:
        security_group = aws.ec2.SecurityGroup(
            f"{name}-efa-sg", **resource_inputs(efa_security_group_inputs(name, spec.vpc_id, tags, scope)), opts=child)
        rules = [
            aws.vpc.SecurityGroupIngressRule(
                f"{name}-efa-sg-self-ingress", **resource_inputs(efa_self_ingress_rule_inputs(security_group.id, tags)),
                opts=child),
            aws.vpc.SecurityGroupEgressRule(
                f"{name}-efa-sg-self-egress", **resource_inputs(efa_self_egress_rule_inputs(security_group.id, tags)),
                opts=child),
        ]
    placement: Optional[aws.ec2.PlacementGroup] = None
    placement_name: Any = None
    if spec.placement_group.mode == "create":
        placement = aws.ec2.PlacementGroup(f"{name}-placement", **resource_inputs(placement_group_inputs(tags=tags)),
                                           opts=child)
        placement_name = placement.name
    elif spec.placement_group.mode == "existing":
        placement_name = restore(spec.placement_group.name)
    group_id: Any = security_group.id if security_group is not None else shared_group
    return EfaNetwork(security_group, rules, group_id, placement, placement_name)
