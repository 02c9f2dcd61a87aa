"""The ``efa-launch-template-interfaces`` policy: launch templates against the interface plan of their instance type."""

from __future__ import annotations

import pytest
from pulumi_policy import EnforcementLevel

from gpu_fabric.aws.efa import PlannedInterface
from gpu_fabric.policies import efa_launch_template_interfaces

from support.aws_stacks import LT, plan, template
from support.policy_helpers import assert_metadata, assert_no_violations, assert_violation, resource


@pytest.mark.parametrize("policy", [efa_launch_template_interfaces])
def test_metadata_and_the_aws_example_stack_passes(policy, aws_efa):
    assert_metadata(policy)
    assert_no_violations(policy, aws_efa)


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
