"""Messages that state the problem and the fix (issue 36)."""

from __future__ import annotations

import copy

import pytest

from gpu_fabric.config.base import ConfigError
from gpu_fabric.validation.configuration import load_config
from support.stack_configs import stack_values


def test_an_unquoted_kubernetes_version_shows_the_value_and_says_to_quote_it() -> None:
    config = copy.deepcopy(stack_values("dra-efa"))
    config["cluster"]["kubernetesVersion"] = 1.30  # what YAML makes of kubernetesVersion: 1.30
    with pytest.raises(ConfigError) as raised:
        load_config(config, aws_region="us-east-1")
    message = dict(raised.value.pairs)["cluster.kubernetesVersion"]
    assert "got the number 1.3" in message and 'quote it, for example "1.30"' in message
    assert raised.value.exit_code == 2


def test_interfaces_per_node_on_a_karpenter_pool_speaks_of_its_ec2_node_class() -> None:
    from gpu_fabric.program.render import render_stack
    from gpu_fabric.resources.fabric import GpuFabric
    from support.stack_configs import as_args

    values = copy.deepcopy(stack_values("karpenter-efa"))
    values["pools"][0]["interfacesPerNode"] = 8
    for role in values["modelDeployments"][0]["roles"]:
        role["resources"]["interface"] = "8"
    with pytest.raises(ConfigError) as caught:
        render_stack("x", config={}, program=lambda: GpuFabric("fabric", as_args(values)))
    assert "the EC2NodeClass's plan attaches 16 EFA interfaces per node" in str(caught.value)
    assert "set interfacesPerNode: 16" in str(caught.value) and "node group" not in str(caught.value)
