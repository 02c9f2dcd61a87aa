"""Every component refuses through one prelude: a ``pulumi.InputPropertiesError`` naming the property, before it
registers anything; and no runtime check of the package is an ``assert`` (gone under ``python -O``)."""

from __future__ import annotations

import ast
from pathlib import Path

import pulumi
import pytest

import gpu_fabric
from gpu_fabric.resources.inputs import InvalidInputError
from support.source_trees import parse_file

PACKAGE_DIR = Path(gpu_fabric.__file__).parent


def _refusal(build) -> InvalidInputError:
    from gpu_fabric.program.render import render_stack

    with pytest.raises(InvalidInputError) as caught:
        render_stack("x", config={}, program=build)
    error = caught.value
    assert isinstance(error, pulumi.InputPropertiesError)
    return error


def _karpenter_pool():
    from gpu_fabric.aws.catalog.bundled import BundledInstanceCatalog
    from gpu_fabric.resources.karpenter_pool import KarpenterEfaPool

    KarpenterEfaPool("p", {"cluster_name": "ml", "vpc_id": "vpc-1", "subnet_id": "subnet-1", "availability_zone": "us-east-1a",
                           "instance_types": ["p5.48xlarge"], "karpenter": {"node_role": "nodes"}, "node_count": 0},
                     catalog=BundledInstanceCatalog())


def _efa_domain():
    from gpu_fabric.resources.efa_domain import EfaDomain

    EfaDomain("d", {"domain": "gpus"})  # type: ignore[typeddict-item]


def _topology_agent():
    from gpu_fabric.resources.kubelet_topology_agent import KubeletTopologyAgent

    KubeletTopologyAgent("a", {"pool": {"name": "p", "labels": {"kubernetes.io/os": "linux"}}})


def _device_manager():
    from gpu_fabric.resources.device_plugins import GpuStackDeviceManager

    GpuStackDeviceManager("dm", {"manufacturers": ["intel"], "pools": []})


@pytest.mark.parametrize("build, component, path", [
    (_karpenter_pool, "KarpenterEfaPool", "node_count"),
    (_efa_domain, "EfaDomain", "vpc_id"),
    (_topology_agent, "KubeletTopologyAgent", "pool.labels"),
    (_device_manager, "GpuStackDeviceManager", "manufacturers"),
], ids=["KarpenterEfaPool", "EfaDomain", "KubeletTopologyAgent", "GpuStackDeviceManager"])
def test_a_component_refuses_naming_itself_and_the_property(build, component, path):
    error = _refusal(build)
    assert f"invalid arguments of {component}" in str(error)
    assert [problem["property_path"] for problem in error.errors] == [path]


# The node agent's source ships verbatim in the topology agent's ConfigMap (its digest names the ConfigMap), so
# editing it changes every render of a stack with a topology agent; its two asserts wait for a change that
# touches the agent anyway.
NODE_AGENT_ASSERTS = {"kubelet_agent/host_files.py", "kubelet_agent/kubelet_config.py"}


def test_no_runtime_check_of_the_package_is_an_assert():
    found = [str(path.relative_to(PACKAGE_DIR)) for path in sorted(PACKAGE_DIR.rglob("*.py"))
             for node in ast.walk(parse_file(path)) if isinstance(node, ast.Assert)]
    assert set(found) <= NODE_AGENT_ASSERTS, found
