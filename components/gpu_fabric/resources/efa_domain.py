"""``EfaDomain``: the security group that carries one EFA domain's traffic, on every node group of it.

Pools joined by transfer legs (:mod:`gpu_fabric.plan.efa_domains`) send EFA traffic to each other, so
their node groups need one security group that all their EFA interfaces share and that allows all
traffic to and from itself (EC2 "Get started with EFA", step 1:
https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-start.html#efa-start-security). A group per
node group admits only its own nodes. The group is not tagged ``kubernetes.io/cluster/*`` (the AWS
Load Balancer Controller wants one such group per interface); it carries
``gpu-fabric.io/efa-security-group: <domain>`` so the policy pack knows it for an EFA group.
"""

from typing import Any, Optional, TypedDict

import pulumi
import pulumi_aws as aws

from gpu_fabric.aws import to_pulumi_kwargs
from gpu_fabric.aws.node_group import (
    efa_security_group_inputs,
    efa_self_egress_rule_inputs,
    efa_self_ingress_rule_inputs,
    placement_group_inputs,
)
from gpu_fabric.config.base import ConfigError
from gpu_fabric.config.constants import EFA_SECURITY_GROUP_TAG
from gpu_fabric.resources.args import Required
from gpu_fabric.resources.inputs import validated

TYPE_TOKEN = "gpu-fabric:index:EfaDomain"


class EfaDomainArgs(TypedDict, total=False):
    """Inputs of ``EfaDomain``."""

    domain: Required[str]
    """Name of the domain (``gpu_fabric.plan.efa_domains.derivation.DomainPlan.name``)."""
    vpc_id: Required[pulumi.Input[str]]
    """The one VPC of the domain's node groups."""
    tags: dict[str, str]
    """AWS tags of the group and its rules (``kubernetes.io/cluster/*`` is refused)."""
    placement_group: bool
    """Also create one ``cluster`` placement group for the node groups of the domain that share it."""


class EfaDomain(pulumi.ComponentResource):
    """One EFA security group (all protocols to and from itself) for every node group of a domain."""

    security_group_id: pulumi.Output[str]
    """Id of the group, resolved once both self rules exist (so interfaces never use it earlier)."""
    placement_group_name: pulumi.Output[Optional[str]]
    """Name of the shared cluster placement group, or ``None`` when none was asked for."""

    def __init__(self, name: str, args: EfaDomainArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        domain, vpc_id = args.get("domain"), args.get("vpc_id") or args.get("vpcId")  # type: ignore[misc]

        def check() -> None:
            missing = [key for key, value in (("domain", domain), ("vpc_id", vpc_id)) if not value]
            if missing:
                raise ConfigError([(key, f"required: EfaDomain {name} names its domain and the VPC of its security group")
                                   for key in missing])

        validated("EfaDomain", check)
        tags = {**dict(args.get("tags") or {}), EFA_SECURITY_GROUP_TAG: str(domain)}
        group_inputs = efa_security_group_inputs(str(domain), vpc_id, tags, scope="EFA domain")
        registered_inputs = {"domain": domain, "vpcId": vpc_id}
        super().__init__(TYPE_TOKEN, name, registered_inputs, opts)
        child = pulumi.ResourceOptions(parent=self)
        group = aws.ec2.SecurityGroup(f"{name}-sg", **to_pulumi_kwargs(group_inputs), opts=child)
        ingress = aws.vpc.SecurityGroupIngressRule(
            f"{name}-sg-self-ingress", **to_pulumi_kwargs(efa_self_ingress_rule_inputs(group.id, tags)), opts=child)
        egress = aws.vpc.SecurityGroupEgressRule(
            f"{name}-sg-self-egress", **to_pulumi_kwargs(efa_self_egress_rule_inputs(group.id, tags)), opts=child)
        # The id carries the rules as dependencies: a launch template using it waits for both.
        self.security_group_id = pulumi.Output.all(group.id, ingress.id, egress.id).apply(lambda ids: ids[0])
        placement_name: Any = None
        if args.get("placement_group") or args.get("placementGroup"):  # type: ignore[misc]
            # One cluster group in the domain's one AZ (the group takes the zone of its first instance).
            placement = aws.ec2.PlacementGroup(
                f"{name}-placement", **to_pulumi_kwargs(placement_group_inputs(tags=tags)), opts=child)
            placement_name = placement.name
        self.placement_group_name = pulumi.Output.from_input(placement_name)
        # Inputs again first: a stack policy sees a component's registered outputs only (resources/outputs.py).
        self.register_outputs({**registered_inputs, "securityGroupId": self.security_group_id,
                               "placementGroupName": self.placement_group_name})
