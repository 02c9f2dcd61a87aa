"""The ``efa-security-group-self-rules`` policy: an EFA security group allows all traffic to and from itself, and nothing from anywhere."""

from __future__ import annotations

import pytest

from gpu_fabric.aws.node_group import (
    efa_security_group_inputs,
    efa_self_egress_rule_inputs,
    efa_self_ingress_rule_inputs,
    launch_template_inputs,
    node_group_inputs,
    placement_group_inputs,
)
from gpu_fabric.aws.catalog.bundled import BundledInstanceCatalog
from gpu_fabric.aws.efa import plan_interfaces
from gpu_fabric.policies import efa_security_group_self_rules

from support.policy_helpers import (
    assert_metadata,
    assert_no_violations,
    assert_violation,
    component,
    rendered,
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


@pytest.mark.parametrize("policy", [efa_security_group_self_rules])
def test_metadata_and_the_aws_example_stack_passes(policy, aws_efa):
    assert_metadata(policy)
    assert_no_violations(policy, aws_efa)


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
