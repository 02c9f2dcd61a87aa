"""The ``kv-cache-transport-fabric`` policy: a KV cache's members and transport match the fabric of the pools they run on."""

from __future__ import annotations

import pytest
from pulumi_policy import EnforcementLevel

from gpu_fabric.policies import (
    fabric_pool_topology_alignment,
    kueue_fabric_keys_covered,
    kv_cache_transport_fabric,
    model_deployment_unprivileged_roles,
)

from support.policy_helpers import (
    assert_metadata,
    assert_no_violations,
    assert_violation,
    of_type,
    replace_props,
)

A10G = "gpustack--nvidia-a10g-linux-amd64"


ADVISORY = {fabric_pool_topology_alignment, kueue_fabric_keys_covered, model_deployment_unprivileged_roles}


def set_members(resources, **changes):
    def change(props):
        for member in props["spec"]["connection"]["managed"]["members"]:
            member.update(changes)
    return replace_props(resources, of_type("v1alpha1:KVCacheBackend"), change)


@pytest.mark.parametrize("policy", [kv_cache_transport_fabric], ids=lambda p: p.name)
def test_metadata_and_example_stacks_pass(policy, seed, aws_efa):
    assert_metadata(policy, EnforcementLevel.ADVISORY if policy in ADVISORY else EnforcementLevel.MANDATORY)
    assert_no_violations(policy, seed)
    assert_no_violations(policy, aws_efa)


def test_fabric_interface_count_above_the_pool_is_refused(aws_efa):
    resources = set_members(aws_efa, fabricInterfaceCount=4)
    backend = next(r for r in resources if r.type.endswith("v1alpha1:KVCacheBackend"))
    assert_violation(kv_cache_transport_fabric, resources, "fabricInterfaceCount 4 exceeds the 2 interfaces per node",
                     urn=backend.urn)


def test_rdma_transport_on_an_efa_pool_is_refused(aws_efa):
    resources = set_members(aws_efa, transport={"protocol": "RDMA"})
    assert_violation(kv_cache_transport_fabric, resources, "uses RDMA transport but selects EFA pool gpustack--generic-linux-amd64")


def test_efa_transport_on_an_rdma_pool_is_refused(seed):
    resources = set_members(seed, transport={"protocol": "EFA"})
    assert_violation(kv_cache_transport_fabric, resources, f"uses EFA transport but selects pool {A10G}, which has fabric rdma")


def test_transfer_leg_on_a_pool_of_another_fabric_is_refused(seed):
    resources = replace_props(seed, of_type("v1alpha1:ModelDeployment"), lambda p: p["spec"]["kvTransfer"].update(protocol="EFA"))
    assert_violation(kv_cache_transport_fabric, resources, f"the transfer leg uses EFA but pool {A10G} has fabric rdma")


def test_unreferenced_kv_cache_objects_are_advisory_warnings(seed, aws_efa):
    from gpu_fabric.policies import kv_cache_unreferenced

    assert_metadata(kv_cache_unreferenced, EnforcementLevel.ADVISORY)
    assert_no_violations(kv_cache_unreferenced, aws_efa)
    # The walkthrough's backend: no KVCachePool of the seed stack lists it, and its RDMA members still run.
    violation = assert_violation(kv_cache_unreferenced, seed, "KVCacheBackend mooncake-dram: metadata.name: no KVCachePool lists")
    assert "members[0] on pool gpustack--nvidia-a10g-linux-amd64 (RDMA)" in violation.message


def test_an_efa_kv_transfer_without_a_router_is_an_advisory_warning_naming_the_router(aws_efa):
    """Issue 36: the direct leg silently disappears without a router; the warning names spec.router."""
    from gpu_fabric.policies import kv_cache_unreferenced

    resources = replace_props(aws_efa, lambda r: r.is_kubernetes_object and r.kind == "ModelDeployment",
                              lambda p: [p["spec"].pop("router", None), None][1])
    violation = assert_violation(kv_cache_unreferenced, resources, "spec.kvTransfer.protocol: kvTransfer.protocol EFA without a router")
    assert "add spec.router" in violation.message and violation.urn


def test_a_role_beside_member_groups_on_its_nodes_is_refused_at_preview(aws_efa):
    """Issue 36: the members' EFA interfaces and the role's Pod's are counted against one node together."""
    def onto_the_role_pool(props):
        members = props["spec"]["connection"]["managed"]["members"]
        members[0]["nodeSelector"] = {"node.kubernetes.io/instance-type": "p5.48xlarge"}

    resources = replace_props(aws_efa, lambda r: r.is_kubernetes_object and r.kind == "KVCacheBackend", onto_the_role_pool)
    assert_violation(kv_cache_transport_fabric, resources, "but the Mooncake member groups on the same nodes hold 2")
