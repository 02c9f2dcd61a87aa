"""The ``efa-node-group-placement`` policy: an EFA node group in one subnet, in a cluster placement group unless it runs on reserved capacity."""

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
from gpu_fabric.policies import efa_node_group_placement

from support.policy_helpers import (
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


@pytest.mark.parametrize("policy", [efa_node_group_placement])
def test_metadata_and_the_aws_example_stack_passes(policy, aws_efa):
    assert_metadata(policy)
    assert_no_violations(policy, aws_efa)


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
