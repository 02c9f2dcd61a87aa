"""The ``fabric-pool-topology-delivered`` policy: a fabric pool's kubelet topology reaches its nodes, through the topology agent or a component that delivers it."""

from __future__ import annotations

import pytest
from pulumi_policy import EnforcementLevel

from gpu_fabric.program.render import render_stack

from support.policy_helpers import assert_metadata, assert_no_violations, assert_violation, k8s, rendered
from support.stack_configs import as_args, seed_values
from support.topology_agent import objects, seed_agent, with_topology


A10G = "gpustack--nvidia-a10g-linux-amd64"


@pytest.fixture(scope="module")
def seed() -> dict[str, dict]:
    return seed_agent()


def stack_of(values: dict) -> list:
    from gpu_fabric.plan.resource_view import Resource
    from gpu_fabric.resources.fabric import GpuFabric

    result = render_stack("test", config={}, program=lambda: GpuFabric("fabric", as_args(values)))
    return [Resource(r.type, r.name, r.urn, r.inputs, r.parent) for r in result.resources]


def test_a_topology_that_reaches_no_node_is_said_so() -> None:
    from gpu_fabric.policies import fabric_pool_topology_delivered

    assert_metadata(fabric_pool_topology_delivered, EnforcementLevel.ADVISORY)
    values = seed_values()
    values["pools"][0].pop("topologyAgent")
    assert_violation(fabric_pool_topology_delivered, stack_of(values), f"pool {A10G}: its kubelet topology reaches no node")
    assert_no_violations(fabric_pool_topology_delivered, rendered("seed-rdma"))
    assert_no_violations(fabric_pool_topology_delivered, rendered("aws-efa"))


def test_a_hand_composed_agent_counts_as_delivery() -> None:
    from gpu_fabric.policies import fabric_pool_topology_delivered

    values = seed_values()
    values["pools"][0].pop("topologyAgent")
    agent = k8s(objects(with_topology(None))["DaemonSet"])
    assert_no_violations(fabric_pool_topology_delivered, [*stack_of(values), agent])
