"""``pool-accelerator-capacity``: the roles on a pool fit its largest size, refused at ``roles[j].replicas``.

The case that matters: prefill ``replicas: 5`` of 8 GPUs on a pool of at most 4 p5.48xlarge (32 GPUs) needs
40 and is refused, naming both numbers, by ``load_config`` (so render and check, exit 1); the pack's policy is
tested in tests/policies/test_capacity_policy.py.
"""

from __future__ import annotations

import copy

import pytest

from gpu_fabric.config.base import ConfigError
from gpu_fabric.gpustack.objects import model_deployment
from gpu_fabric.plan.pool_capacity import (
    POOL_ACCELERATOR_CAPACITY,
    PoolCapacity,
    capacity_findings,
    pool_capacity_of,
    pool_capacity_of_input,
)
from gpu_fabric.validation.configuration import load_config
from support.stack_configs import AWS_EFA_GPU_POOL, stack_values


def aws_efa(prefill_replicas: int = 1, decode_replicas: int = 1) -> dict:
    values = copy.deepcopy(stack_values("aws-efa"))
    roles = values["modelDeployments"][0]["roles"]
    roles[0]["replicas"], roles[1]["replicas"] = prefill_replicas, decode_replicas
    return values


def refusal(values: dict) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        load_config(values)
    return caught.value


def test_the_example_pool_at_its_largest_size():
    pool = load_config(aws_efa()).pools[0]
    assert pool_capacity_of(pool) == PoolCapacity(AWS_EFA_GPU_POOL, 8, 4, "aws.scaling.maxSize")


def test_prefill_5_replicas_of_8_gpus_on_at_most_4_p5_is_refused_at_the_replicas():
    error = refusal(aws_efa(prefill_replicas=5, decode_replicas=1))
    finding, = [f for f in error.problems if f.rule is POOL_ACCELERATOR_CAPACITY]
    assert str(finding.path) == "modelDeployments[0].roles[0].replicas"
    assert "need 48 accelerators" in finding.message and "holds at most 32" in finding.message
    assert "role prefill: 5 replicas x 8" in finding.message and "4 nodes, its aws.scaling.maxSize" in finding.message
    assert error.exit_code == 1  # a mandatory policy's verdict


def test_the_role_that_takes_the_sum_past_capacity_is_blamed():
    error = refusal(aws_efa(prefill_replicas=2, decode_replicas=3))  # 16 + 24 > 32
    finding, = [f for f in error.problems if f.rule is POOL_ACCELERATOR_CAPACITY]
    assert str(finding.path) == "modelDeployments[0].roles[1].replicas"
    assert "need 40 accelerators" in finding.message


def test_exactly_full_passes():
    load_config(aws_efa(prefill_replicas=2, decode_replicas=2))  # 32 of 32


def test_a_karpenter_pool_is_bounded_by_its_node_count():
    values = copy.deepcopy(stack_values("karpenter-efa"))
    pool = load_config(values).pools[0]
    assert pool_capacity_of(pool).max_nodes == pool.node_count == 2
    values["modelDeployments"][0]["roles"][0]["replicas"] = 2  # 16 + 8 > 16
    finding, = [f for f in refusal(values).problems if f.rule is POOL_ACCELERATOR_CAPACITY]
    assert "nodeCount (the NodePool's limits.nodes)" in finding.message


def test_size_and_the_default_accelerator_count():
    values = aws_efa()
    values["modelDeployments"][0]["roles"][0]["size"] = 3
    del values["modelDeployments"][0]["roles"][0]["resources"]["accelerator"]  # the operator's default: 1 per Pod
    config = load_config(values)
    manifest = model_deployment(config.model_deployments[0])
    pool = pool_capacity_of(config.pools[0])
    tight = PoolCapacity(pool.name, 8, 1, "nodeCount")
    finding, = capacity_findings([tight], [manifest])
    assert "role prefill: 1 replicas x 3 Pods x 1" in finding.message and "need 11 accelerators" in finding.message


def test_unknown_numbers_are_passed_over():
    from gpu_fabric.config.shapes import UNKNOWN

    assert pool_capacity_of_input({"name": "p", "acceleratorsPerNode": UNKNOWN, "nodeCount": 2}) is None
    deployment = {"metadata": {"name": "d", "namespace": "a"}, "spec": {"roles": [
        {"name": "x", "instanceType": "p", "replicas": UNKNOWN, "resources": {"accelerator": "8"}},
        {"name": "y", "instanceType": "p", "replicas": 1, "resources": {"accelerator": UNKNOWN}}]}}
    assert capacity_findings([PoolCapacity("p", 8, 1, "nodeCount")], [deployment]) == []



def test_a_pool_carrying_many_roles_names_the_largest_shares_and_counts_the_rest():
    from gpu_fabric.plan.pool_capacity import SHARES_SHOWN

    values = aws_efa(prefill_replicas=1, decode_replicas=1)
    template = values["modelDeployments"][0]
    values["modelDeployments"] = [{**copy.deepcopy(template), "name": f"model-{i:02d}"} for i in range(10)]
    finding, = [f for f in refusal(values).problems if f.rule is POOL_ACCELERATOR_CAPACITY]
    assert finding.message.count(" replicas x ") == SHARES_SHOWN
    assert f"and {10 * 2 - SHARES_SHOWN} more roles" in finding.message and "need 160 accelerators" in finding.message
