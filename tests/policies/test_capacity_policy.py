"""The ``pool-accelerator-capacity`` policy: the roles of a stack's ModelDeployments fit their pools at their largest."""

from __future__ import annotations

from pulumi_policy import EnforcementLevel

from gpu_fabric.policies import pool_accelerator_capacity
from support.policy_helpers import assert_metadata, assert_no_violations, assert_violation, replace_props
from support.stack_configs import AWS_EFA_GPU_POOL


def test_metadata_and_example_stacks_pass(seed, aws_efa):
    assert_metadata(pool_accelerator_capacity, EnforcementLevel.MANDATORY)
    assert_no_violations(pool_accelerator_capacity, seed)
    assert_no_violations(pool_accelerator_capacity, aws_efa)


def test_prefill_5_replicas_of_8_gpus_on_at_most_4_nodes_is_refused(aws_efa):
    def five_prefill_replicas(props):
        props["spec"]["roles"][0]["replicas"] = 5

    # The stack refuses to render this itself (load_config); a hand-written program could still register it.
    overfilled = replace_props(aws_efa, lambda r: r.props.get("kind") == "ModelDeployment", five_prefill_replicas)
    deployment = next(r for r in overfilled if r.props.get("kind") == "ModelDeployment")
    violation = assert_violation(pool_accelerator_capacity, overfilled, "spec.roles[0].replicas: the roles on pool "
                                 f"{AWS_EFA_GPU_POOL} need 48 accelerators", urn=deployment.urn)
    assert "holds at most 32 (4 nodes, its aws.scaling.maxSize, x 8 accelerators per node)" in violation.message
