"""The ``efa-security-group-self-rules`` policy: an EFA security group allows all traffic to and from itself, and nothing from anywhere."""

from __future__ import annotations

import pytest

from gpu_fabric.policies import efa_security_group_self_rules

from support.aws_stacks import SG, INGRESS, EGRESS, LEGACY_RULE, UNKNOWN, node_group_stack
from support.policy_helpers import (
    assert_metadata,
    assert_no_violations,
    assert_violation,
    resource,
)


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
    from gpu_fabric.plan.resource_view import Resource
    from gpu_fabric.policies.security_groups import group_findings

    group = Resource(SG, "efa", "urn:sg", {"vpcId": "vpc-1", "tags": {"gpu-fabric.io/efa-security-group": "true"}})
    # Outside a component, rules tie to the group through the engine's property dependencies.
    rules = [Resource(LEGACY_RULE, f"efa-{d}", f"urn:{d}", {"type": d, "securityGroupId": UNKNOWN, "protocol": "-1",
                                                            "self": True, "fromPort": 0, "toPort": 0},
                      "", {"securityGroupId": (group.urn,)})
             for d in ("ingress", "egress")]
    assert group_findings(group, [group, *rules], [group]) == []
    assert ["outbound" in f.message for f in group_findings(group, [group, rules[0]], [group])] == [True]
