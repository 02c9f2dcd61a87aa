"""The components the multi-language provider (``provider/__main__.py``) hosts, and its schema."""

from typing import Any

import pulumi

from gpu_fabric import __version__
from gpu_fabric.resources.device_plugins import EfaDevicePlugin, GpuStackDeviceManager
from gpu_fabric.resources.efa_domain import EfaDomain
from gpu_fabric.resources.efa_node_group import EfaNodeGroup
from gpu_fabric.resources.fabric import GpuFabric
from gpu_fabric.resources.karpenter_pool import KarpenterEfaPool
from gpu_fabric.resources.kubelet_topology_agent import KubeletTopologyAgent
from gpu_fabric.resources.kueue_pool import KueuePool
from gpu_fabric.resources.kv_cache import KVCache
from gpu_fabric.resources.model_deployment import ModelDeployment

PACKAGE_NAME = "gpu-fabric"
"""The package name: type tokens are ``gpu-fabric:index:<Component>``."""

COMPONENTS: list[type[pulumi.ComponentResource]] = [
    GpuFabric, EfaNodeGroup, KueuePool, KVCache, ModelDeployment, EfaDevicePlugin, GpuStackDeviceManager,
    KubeletTopologyAgent, EfaDomain, KarpenterEfaPool,
]
"""Every component other languages can construct."""


def component_provider() -> Any:
    """The provider the host serves, for offline schema and construct calls (no engine needed)."""
    from pulumi.provider.experimental.component import ComponentProvider

    return ComponentProvider(COMPONENTS, PACKAGE_NAME, version=__version__)


def schema() -> dict[str, Any]:
    """The package schema exactly as ``GetSchema`` serves it."""
    import json

    result: dict[str, Any] = json.loads(component_provider().schema)
    return result
