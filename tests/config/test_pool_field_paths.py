"""A pool's model-wide checks name the field they are about, not the pool."""

import pytest

from gpu_fabric.config.base import ConfigError
from gpu_fabric.validation.configuration import load_config

from support.stack_configs import stack_values

BOTTLEROCKET_TOPOLOGY = {"policy": "restricted", "scope": "container", "cpuManagerPolicy": "static",
                         "reservedSystemCPUs": "0-1", "cpuManagerPolicyOptions": {"distribute-cpus-across-cores": "true"}}


def _refusal(change) -> dict[str, str]:
    values = stack_values("aws-efa")
    change(values["pools"])
    with pytest.raises(ConfigError) as raised:
        load_config(values)
    return dict(raised.value.pairs)


@pytest.mark.parametrize("change, path, fragment", [
    (lambda pools: pools[0].update(nodeCount=5), "pools[0].nodeCount", "is above aws.scaling.maxSize 4"),
    (lambda pools: pools[1].update(topology=BOTTLEROCKET_TOPOLOGY), "pools[1].topology.cpuManagerPolicyOptions",
     "no Bottlerocket setting"),
    (lambda pools: pools[0].update(interfacesPerNode=0), "pools[0].interfacesPerNode", "at least 1"),
    (lambda pools: pools[0].update(taints=[{"key": "eks.amazonaws.com/bad key", "value": "x", "effect": "NoSchedule"}]),
     "pools[0].taints[0].key", "taint key"),
])
def test_the_refusal_names_the_field(change, path, fragment):
    problems = _refusal(change)
    assert path in problems, problems
    assert fragment in problems[path]


def test_a_message_with_braces_is_kept_as_written():
    problems = _refusal(lambda pools: pools[0].update(taints=[{"key": "a{0}b", "value": "x", "effect": "NoSchedule"}]))
    assert "'a{0}b'" in problems["pools[0].taints[0].key"]
