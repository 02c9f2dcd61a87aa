"""The ``pool-instance-facts`` policy: a pool's name and accelerator count against its instances, from ``KueuePool`` inputs."""


from gpu_fabric.policies.instance_facts import pool_instance_facts

from support.policy_helpers import assert_metadata, assert_no_violations, assert_violation, component
from support.stack_configs import stack_values, efa_values


H100 = "gpustack--nvidia-h100-linux-amd64"


def _kueue_pool(pool: dict):
    return component("gpu-fabric:index:KueuePool", {"pool": pool}, pool["name"])


def test_the_pack_refuses_the_same_from_kueue_pool_inputs():
    assert_metadata(pool_instance_facts)
    wrong = efa_values(name="gpustack--nvidia-h200-linux-amd64")["pools"][0]
    assert_violation(pool_instance_facts, [_kueue_pool(wrong)], "p5.48xlarge has 8 x NVIDIA H100, amd64")
    assert_no_violations(pool_instance_facts, [_kueue_pool(stack_values("aws-efa")["pools"][0])])


def test_the_pack_reads_numbers_as_the_engine_sends_them():
    wrong = efa_values(acceleratorsPerNode=4.0)["pools"][0]  # the wire carries every number as a double
    assert_violation(pool_instance_facts, [_kueue_pool(wrong)], "acceleratorsPerNode: 4 per node")
