"""The ``gpustack-transfer-path-consistency`` policy over the seed's own objects."""

from __future__ import annotations

from gpu_fabric.policies import transfer_path_consistency
from gpu_fabric.gpustack.transfer_legs import MSG_BACKEND_UNRESOLVED, MSG_NO_FABRIC_LEG, msg_conflicting_groups

from support.policy_helpers import assert_metadata, assert_no_violations, assert_violation, of_type, replace_props, run


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
    # kvTransfer.backend arrives with the 0.11 line; the seed stack runs 0.10.0.
    resources = replace_props(seed, of_type("v1alpha1:ModelDeployment"), lambda p: p["spec"]["kvTransfer"].update(backend="nixl"))
    deployment = next(r for r in resources if r.type.endswith("v1alpha1:ModelDeployment"))
    violation = assert_violation(transfer_path_consistency, resources, "spec.kvTransfer.backend: unknown field",
                                 urn=deployment.urn)
    assert "arrives with the 0.11 line" in violation.message


def _on_operator(version):
    """Set the ``gpustackOperator`` input the stack's gpu-fabric components carry."""
    def change(props):
        props["gpustackOperator"] = version
    return change


def test_the_pack_judges_under_the_operator_the_stacks_components_name(seed):
    components = lambda r: r.type.startswith("gpu-fabric:index:") and "gpustackOperator" in r.props  # noqa: E731
    assert sum(1 for r in seed if components(r)) >= 3  # GpuFabric, KVCache, ModelDeployment
    assert_no_violations(transfer_path_consistency, seed)  # 0.10.0: the seed's engine.image is a field
    pinned = replace_props(seed, components, _on_operator("main@5cfac77b"))
    deployment = next(r for r in pinned if r.type.endswith("v1alpha1:ModelDeployment"))
    assert_violation(transfer_path_consistency, pinned, "spec.engine.image: unknown field", urn=deployment.urn)
    unknown = replace_props(seed, components, _on_operator("0.12.0"))
    assert_violation(transfer_path_consistency, unknown, "gpustackOperator: '0.12.0' is not a GPUStack operator version")
    one = next(r for r in seed if r.type == "gpu-fabric:index:ModelDeployment")
    split = replace_props(seed, lambda r: r is one, _on_operator("0.11.2"))
    assert_violation(transfer_path_consistency, split, "name different GPUStack operator versions (0.10.0, 0.11.2)")
