"""Policies b, c, d and the launch-template parts of i, with fixtures from gpu_fabric.aws builders."""

from __future__ import annotations

import pytest
from pulumi_policy import EnforcementLevel

from gpu_fabric.aws.node_group import (
    efa_security_group_inputs,
    efa_self_egress_rule_inputs,
    efa_self_ingress_rule_inputs,
    launch_template_inputs,
    node_group_inputs,
    placement_group_inputs,
)
from gpu_fabric.aws.catalog.bundled import BundledInstanceCatalog
from gpu_fabric.aws.efa import PlannedInterface, plan_interfaces
from gpu_fabric.policies import (
    efa_launch_template_interfaces,
    efa_node_group_placement,
    efa_security_group_self_rules,
    launch_template_ebs_encrypted,
    launch_template_imdsv2,
)

from policy_helpers import (
    assert_metadata,
    assert_no_violations,
    assert_violation,
    component,
    of_type,
    rendered,
    replace_props,
    resource,
)

LT = "aws:ec2/launchTemplate:LaunchTemplate"
SG = "aws:ec2/securityGroup:SecurityGroup"
INGRESS = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
EGRESS = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"
LEGACY_RULE = "aws:ec2/securityGroupRule:SecurityGroupRule"
NG = "aws:eks/nodeGroup:NodeGroup"
PG = "aws:ec2/placementGroup:PlacementGroup"
UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"  # engine's unknown-string sentinel


def plan(instance_type: str):
    return plan_interfaces(BundledInstanceCatalog().describe([instance_type])[instance_type])


def template(instance_type="p5.48xlarge", interfaces=None, security_groups=(UNKNOWN,), **kwargs) -> dict:
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


@pytest.fixture(scope="module")
def aws_efa():
    return rendered("aws-efa")


@pytest.mark.parametrize("policy", [efa_launch_template_interfaces, efa_security_group_self_rules,
                                    efa_node_group_placement, launch_template_imdsv2, launch_template_ebs_encrypted])
def test_metadata_and_the_aws_example_stack_passes(policy, aws_efa):
    assert_metadata(policy)
    assert_no_violations(policy, aws_efa)


# -- b. interfaces -------------------------------------------------------------------------------


@pytest.mark.parametrize("instance_type", ["p5.48xlarge", "p6-b300.48xlarge", "c6in.32xlarge"])
def test_planned_launch_templates_pass(instance_type):
    assert_no_violations(efa_launch_template_interfaces, [resource(LT, template(instance_type))])


def test_efa_on_card_zero_of_p6_b300_is_refused():
    interfaces = [PlannedInterface(0, 0, "efa"), *plan("p6-b300.48xlarge")[1:]]
    lt = resource(LT, template("p6-b300.48xlarge", interfaces))
    violation = assert_violation(efa_launch_template_interfaces, [lt], "network card 0 of p6-b300.48xlarge does not support EFA")
    assert violation.enforcement == EnforcementLevel.MANDATORY
    assert_violation(efa_launch_template_interfaces, [lt], "needs 16")


def test_efa_count_from_network_cards_is_refused():
    # One EFA per card on all 32 cards of p5 is right; dropping one is not.
    lt = resource(LT, template("p5.48xlarge", plan("p5.48xlarge")[:-1]))
    assert_violation(efa_launch_template_interfaces, [lt], "needs 32")
    assert_no_violations(efa_launch_template_interfaces, [lt], config={"allowFewerEfaInterfaces": True})


def test_addresses_on_efa_only_and_missing_security_groups_are_refused():
    props = template("p5.48xlarge")
    props["networkInterfaces"][1]["ipv4AddressCount"] = 1
    props["networkInterfaces"][2]["securityGroups"] = []
    props["vpcSecurityGroupIds"] = ["sg-1"]
    lt = [resource(LT, props)]
    assert_violation(efa_launch_template_interfaces, lt, "an efa-only interface has no IP address")
    assert_violation(efa_launch_template_interfaces, lt, "has no securityGroups")
    assert_violation(efa_launch_template_interfaces, lt, "vpcSecurityGroupIds is set")


def test_launch_templates_without_efa_are_ignored():
    assert_no_violations(efa_launch_template_interfaces, [resource(LT, {"instanceType": "m5.large"})])


# -- c. security groups ----------------------------------------------------------------------------


def test_self_rule_resources_and_inline_self_rules_pass():
    assert_no_violations(efa_security_group_self_rules, node_group_stack())
    assert_no_violations(efa_security_group_self_rules, node_group_stack(inline=True))


def test_missing_self_rules_are_refused():
    resources = node_group_stack(self_rules=False)
    group = next(r for r in resources if r.type == SG)
    assert_violation(efa_security_group_self_rules, resources, "all protocols inbound from itself", urn=group.urn)
    assert_violation(efa_security_group_self_rules, resources, "all protocols outbound to itself", urn=group.urn)


def test_egress_to_anywhere_does_not_replace_the_self_egress_rule():
    resources = [r for r in node_group_stack() if r.type != EGRESS]
    parent = resources[0]
    resources.append(resource(EGRESS, {"securityGroupId": UNKNOWN, "cidrIpv4": "0.0.0.0/0", "ipProtocol": "-1"},
                              "gpu-egress-all", parent))
    assert_violation(efa_security_group_self_rules, resources, "outbound to itself")


def test_ingress_from_anywhere_is_refused_in_every_rule_form():
    resources = node_group_stack()
    parent = resources[0]
    open_rule = resource(INGRESS, {"securityGroupId": UNKNOWN, "cidrIpv4": "0.0.0.0/0", "ipProtocol": "tcp"}, "open", parent)
    assert_violation(efa_security_group_self_rules, [*resources, open_rule], "allows ingress from 0.0.0.0/0")
    legacy = resource(LEGACY_RULE, {"type": "ingress", "securityGroupId": UNKNOWN, "protocol": "tcp",
                                    "cidrBlocks": ["0.0.0.0/0"], "fromPort": 22, "toPort": 22}, "ssh", parent)
    assert_violation(efa_security_group_self_rules, [*resources, legacy], "allows ingress from 0.0.0.0/0")


def test_tagged_hand_written_group_with_legacy_self_rules():
    from gpu_fabric.policies.resource_view import Resource
    from gpu_fabric.policies.security_groups import group_findings

    group = Resource(SG, "efa", "urn:sg", {"vpcId": "vpc-1", "tags": {"gpu-fabric.io/efa-security-group": "true"}})
    # Outside a component, rules tie to the group through the engine's property dependencies.
    rules = [Resource(LEGACY_RULE, f"efa-{d}", f"urn:{d}", {"type": d, "securityGroupId": UNKNOWN, "protocol": "-1",
                                                            "self": True, "fromPort": 0, "toPort": 0},
                      "", {"securityGroupId": (group.urn,)})
             for d in ("ingress", "egress")]
    assert group_findings(group, [group, *rules], [group]) == []
    assert ["outbound" in f.message for f in group_findings(group, [group, rules[0]], [group])] == [True]


# -- d. node groups ----------------------------------------------------------------------------------


def test_node_group_in_one_subnet_with_cluster_placement_passes():
    assert_no_violations(efa_node_group_placement, node_group_stack())


def test_reserved_capacity_without_placement_group_passes():
    assert_no_violations(efa_node_group_placement, node_group_stack(placement=False, reservation="cr-1"))


def test_two_subnets_are_refused():
    resources = node_group_stack(subnets=("subnet-1", "subnet-2"))
    ng = next(r for r in resources if r.type == NG)
    assert_violation(efa_node_group_placement, resources, "needs exactly one subnet, got 2", urn=ng.urn)


def test_missing_placement_group_is_refused():
    assert_violation(efa_node_group_placement, node_group_stack(placement=False), "sets no placement group")


def test_new_placement_group_for_a_reservation_and_wrong_strategy_are_refused():
    resources = node_group_stack(reservation="cr-1")
    assert_violation(efa_node_group_placement, resources, "targets a capacity reservation")
    spread = replace_props(node_group_stack(), of_type("PlacementGroup"), lambda p: p.update(strategy="spread"))
    assert_violation(efa_node_group_placement, spread, "uses strategy 'spread'")


# -- i. launch template hardening ----------------------------------------------------------------------


def test_imdsv1_is_refused():
    props = template()
    props["metadataOptions"]["httpTokens"] = "optional"
    assert_violation(launch_template_imdsv2, [resource(LT, props)], "httpTokens is optional")
    assert_violation(launch_template_imdsv2, [resource(LT, {"instanceType": "m5.large"})], "httpTokens is unset")
    assert_no_violations(launch_template_imdsv2, [resource(LT, template())])


def test_unencrypted_volume_is_refused():
    props = template()
    props["blockDeviceMappings"][0]["ebs"]["encrypted"] = "false"
    assert_violation(launch_template_ebs_encrypted, [resource(LT, props)], "/dev/xvda: the EBS volume is not encrypted")
    assert_no_violations(launch_template_ebs_encrypted, [resource(LT, template())])
