"""Policy a (transfer paths) over the seed's own objects."""

from __future__ import annotations

import pytest

from gpu_fabric.policies import transfer_path_consistency
from gpu_fabric.gpustack.transfer import MSG_BACKEND_UNRESOLVED, MSG_NO_FABRIC_LEG, msg_conflicting_groups

from policy_helpers import assert_metadata, assert_no_violations, assert_violation, of_type, rendered, replace_props, run


@pytest.fixture(scope="module")
def seed():
    return rendered("seed-rdma")


@pytest.fixture(scope="module")
def aws_efa():
    return rendered("aws-efa")


def test_metadata():
    assert_metadata(transfer_path_consistency)


def test_seed_and_aws_stacks_pass(seed, aws_efa):
    assert_no_violations(transfer_path_consistency, seed)
    assert_no_violations(transfer_path_consistency, aws_efa)


def test_deployment_without_router_and_kv_transfer_is_refused_on_its_urn(seed):
    def drop_legs(props):
        props["spec"].pop("router")
        props["spec"].pop("kvTransfer")

    resources = replace_props(seed, of_type("v1alpha1:ModelDeployment"), drop_legs)
    deployment = next(r for r in resources if r.type.endswith("v1alpha1:ModelDeployment"))
    found = run(transfer_path_consistency, resources)
    assert [v.urn for v in found] == [deployment.urn, deployment.urn]
    assert all(MSG_NO_FABRIC_LEG in v.message for v in found)
    assert "spec.roles[0].resources.interface" in found[0].message


def test_conflicting_member_protocols_are_refused(aws_efa):
    def add_tcp_member(props):
        members = props["spec"]["connection"]["managed"]["members"]
        members.append({**members[0], "transport": {"protocol": "TCP"}})

    resources = replace_props(aws_efa, of_type("v1alpha1:KVCacheBackend"), add_tcp_member)
    deployment = next(r for r in resources if r.type.endswith("v1alpha1:ModelDeployment"))
    assert_violation(transfer_path_consistency, resources, msg_conflicting_groups("efa", "tcp"), urn=deployment.urn)


def test_missing_backend_is_refused(aws_efa):
    resources = [r for r in aws_efa if not r.type.endswith("v1alpha1:KVCacheBackend")]
    assert_violation(transfer_path_consistency, resources, MSG_BACKEND_UNRESOLVED)


def test_numbers_as_doubles_are_read_as_the_engine_sends_them(seed):
    # The wire turns every number into a double; fabricInterfaceCount 2.0 must still be an integer.
    def as_double(props):
        for member in props["spec"]["connection"]["managed"]["members"]:
            member["fabricInterfaceCount"] = float(member["fabricInterfaceCount"])

    assert_no_violations(transfer_path_consistency, replace_props(seed, of_type("v1alpha1:KVCacheBackend"), as_double))


def test_a_field_the_api_server_would_prune_is_a_violation_on_its_urn(seed):
    resources = replace_props(seed, of_type("v1alpha1:ModelDeployment"),
                              lambda p: p["spec"]["engine"].update(image="gpustack/runner:cuda13.0-vllm0.29.0"))
    deployment = next(r for r in resources if r.type.endswith("v1alpha1:ModelDeployment"))
    assert_violation(transfer_path_consistency, resources, "spec.engine.image: unknown field", urn=deployment.urn)
