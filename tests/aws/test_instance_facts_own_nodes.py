"""``pool-instance-facts`` on pools the stack does not provision: the instance type their nodeLabels pin (issue 36).

The team's own p5en.48xlarge nodes (8 GPUs, 16 EFA interfaces) declared with 4 GPUs and 32 EFA were not judged,
although the DRA path reads the same label.
"""

from __future__ import annotations

import copy

import pytest

from gpu_fabric.config.base import ConfigError
from gpu_fabric.validation.configuration import load_config
from support.stack_configs import stack_values


def own_nodes(**pool) -> dict:
    config = copy.deepcopy(stack_values("seed-rdma"))
    config["pools"] = [{"name": "p5en-h200", "fabric": "efa", "manufacturer": "nvidia", "acceleratorsPerNode": 8,
                        "interfacesPerNode": 16, "nodeCount": 2,
                        "nodeLabels": {"node.kubernetes.io/instance-type": "p5en.48xlarge",
                                       "vpc.amazonaws.com/efa.present": "true"}, **pool}]
    config.pop("kvCacheBackends", None)
    config.pop("modelDeployments", None)
    return config


def test_an_own_nodes_pool_pinned_to_an_instance_type_is_judged_by_its_facts() -> None:
    with pytest.raises(ConfigError) as raised:
        load_config(own_nodes(acceleratorsPerNode=4, interfacesPerNode=32), aws_region="us-east-1")
    paths = dict(raised.value.pairs)
    assert "4 per node, but p5en.48xlarge has 8" in paths["pools[0].acceleratorsPerNode"]
    assert "32 EFA interfaces per node, but p5en.48xlarge" in paths["pools[0].interfacesPerNode"]


def test_the_pool_pinned_to_its_own_facts_passes_and_an_unpinned_one_is_not_judged() -> None:
    load_config(own_nodes(), aws_region="us-east-1")
    load_config(own_nodes(acceleratorsPerNode=4, nodeLabels={"vpc.amazonaws.com/efa.present": "true"}), aws_region="us-east-1")


def test_the_pack_reads_the_pinned_instance_type_from_the_kueue_pools_input() -> None:
    from gpu_fabric.policies.instance_facts import pool_findings

    pool = own_nodes(acceleratorsPerNode=4)["pools"][0]
    assert [str(f.path) for f in pool_findings(pool)] == ["acceleratorsPerNode"]


def test_a_pool_name_that_is_not_gpustacks_asks_for_the_manufacturer() -> None:
    """Issue 36: it said only ``acceleratorResource is required``; the fix a user needs is ``manufacturer: nvidia``."""
    config = own_nodes()
    del config["pools"][0]["manufacturer"]
    with pytest.raises(ConfigError) as raised:
        load_config(config, aws_region="us-east-1")
    message = dict(raised.value.pairs)["pools[0].manufacturer"]
    assert "set manufacturer: nvidia" in message and "not a GPUStack InstanceType name" in message
