"""EC2 resources as EfaNodeGroup registers them, for the AWS policy tests: launch templates planned from
the bundled instance table, and a whole node-group stack with its knobs."""

from __future__ import annotations

from gpu_fabric.aws.catalog.bundled import BundledInstanceCatalog
from gpu_fabric.aws.efa import plan_interfaces
from gpu_fabric.aws.node_group import (
    efa_security_group_inputs,
    efa_self_egress_rule_inputs,
    efa_self_ingress_rule_inputs,
    launch_template_inputs,
    node_group_inputs,
    placement_group_inputs,
)

from support.policy_helpers import component, resource

LT = "aws:ec2/launchTemplate:LaunchTemplate"
SG = "aws:ec2/securityGroup:SecurityGroup"
INGRESS = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
EGRESS = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"
LEGACY_RULE = "aws:ec2/securityGroupRule:SecurityGroupRule"
NG = "aws:eks/nodeGroup:NodeGroup"
PG = "aws:ec2/placementGroup:PlacementGroup"
UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"  # engine's unknown-string sentinel


def plan(instance_type: str):
    """The EFA interface plan of ``instance_type`` from the bundled table."""
    return plan_interfaces(BundledInstanceCatalog().describe([instance_type])[instance_type])


def template(instance_type="p5.48xlarge", interfaces=None, security_groups=(UNKNOWN,), **kwargs) -> dict:
    """Launch template inputs as EfaNodeGroup builds them (its plan unless ``interfaces`` is given)."""
    return launch_template_inputs("gpu", instance_type, interfaces or plan(instance_type), list(security_groups),
                                  "dXNlcg==", **kwargs)


def node_group_stack(*, placement=True, reservation=None, subnets=("subnet-1",), self_rules=True, inline=False):
    """An EfaNodeGroup-shaped stack: component, SG, self rules, placement group, launch template, node group."""
    parent = component("gpu-fabric:index:EfaNodeGroup", {}, "gpu")
    group_props = efa_security_group_inputs("gpu", "vpc-1")
    if inline:
        group_props["ingress"] = [{"protocol": "-1", "fromPort": 0, "toPort": 0, "self": True}]
        group_props["egress"] = [{"protocol": "-1", "fromPort": 0, "toPort": 0, "self": True}]
    resources = [parent, resource(SG, group_props, "gpu-efa-sg", parent)]
    if self_rules and not inline:
        resources += [resource(INGRESS, efa_self_ingress_rule_inputs(UNKNOWN), "gpu-efa-sg-self-ingress", parent),
                      resource(EGRESS, efa_self_egress_rule_inputs(UNKNOWN), "gpu-efa-sg-self-egress", parent)]
    if placement:
        resources.append(resource(PG, placement_group_inputs(), "gpu-placement", parent))
    resources.append(resource(LT, template(placement_group_name=UNKNOWN if placement else None,
                                           capacity_reservation_id=reservation), "gpu-lt", parent))
    ng = node_group_inputs(cluster_name="c", node_role_arn="arn:aws:iam::1:role/n", subnet_ids=["subnet-1"],
                           ami_type="AL2023_x86_64_NVIDIA", capacity_type="ON_DEMAND", launch_template_id=UNKNOWN,
                           launch_template_version=UNKNOWN, min_size=2, max_size=2, desired_size=2)
    ng["subnetIds"] = list(subnets)
    resources.append(resource(NG, ng, "gpu-ng", parent))
    return resources
