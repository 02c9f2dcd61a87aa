"""The ``efa-node-group-placement`` policy: an EFA node group in one subnet, in a cluster placement group unless it runs on reserved capacity."""

from __future__ import annotations

import pytest

from gpu_fabric.policies import efa_node_group_placement

from support.aws_stacks import NG, node_group_stack
from support.policy_helpers import (
    assert_metadata,
    assert_no_violations,
    assert_violation,
    of_type,
    replace_props,
)


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
