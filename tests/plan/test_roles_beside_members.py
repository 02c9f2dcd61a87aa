"""``role-interfaces-beside-members``: a role's Pod and the Mooncake members on the same nodes share a node's EFA.

Issue 36: prefill takes all of a node's EFA interfaces while a Mooncake member group takes 2 on the same nodes; the
prefill Pod can never fit. Both are counted against one node of the pool.
"""

from __future__ import annotations

import copy

import pytest

from gpu_fabric.config.base import ConfigError
from gpu_fabric.validation.configuration import load_config
from support.stack_configs import stack_values


def members_on_the_role_pool() -> dict:
    config = copy.deepcopy(stack_values("aws-efa"))
    member = config["kvCacheBackends"][0]["connection"]["managed"]["members"][0]
    member["nodeSelector"] = {"node.kubernetes.io/instance-type": "p5.48xlarge"}
    return config


def test_a_role_taking_every_interface_beside_a_member_group_is_refused() -> None:
    with pytest.raises(ConfigError) as raised:
        load_config(members_on_the_role_pool(), aws_region="us-east-1")
    problems = dict(raised.value.pairs)
    message = problems["modelDeployments[0].roles[0].resources.interface"]
    assert "asks for 32 vpc.amazonaws.com/efa on pool gpustack--nvidia-h100-linux-amd64, whose nodes have 32" in message
    assert "KVCacheBackend mooncake-efa members[0] 2" in message and "ask for at most 30" in message


def test_members_on_another_pool_leave_the_roles_nodes_alone() -> None:
    load_config(copy.deepcopy(stack_values("aws-efa")), aws_region="us-east-1")


def test_the_pack_counts_them_together_too() -> None:
    from gpu_fabric.plan.transport_fabric import shared_node_findings
    from gpu_fabric.gpustack.transfer_legs import MemberGrant, RoleGrant
    from gpu_fabric.kube.pool_view import PoolView

    pool = PoolView("p", "efa", interfaces_per_node=16, labels={"gpu-fabric.io/pool": "p"})
    role = RoleGrant("team-a", "md", "prefill", 0, "p", 16, "efa", {"vpc.amazonaws.com/efa": 16}, None, "efa")
    member = MemberGrant(backend="b", group_index=0, protocol="efa", fabric_interface_count=2,
                         node_selector={"gpu-fabric.io/pool": "p"}, resources={"vpc.amazonaws.com/efa": 2})
    assert [f.rule_id for f in shared_node_findings(role, pool, [member])] == ["role-interfaces-beside-members"]
    elsewhere = MemberGrant(backend="b", group_index=0, protocol="efa", fabric_interface_count=2,
                            node_selector={"gpu-fabric.io/pool": "q"}, resources={"vpc.amazonaws.com/efa": 2})
    assert shared_node_findings(role, pool, [elsewhere]) == []
