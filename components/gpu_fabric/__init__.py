"""gpu-fabric: typed Pulumi components for RDMA/EFA GPU fabrics.

Folders, bottom to top (imports only run downward; ``tests/project/test_layering.py`` keeps it so):

* ``gpu_fabric.findings``    -- the one shape of every verdict: ``Finding``, ``Rule``, field paths, severities.
* ``gpu_fabric.config``      -- what the user writes: stack-file reading, syntax, quantities, the models.
* ``gpu_fabric.gpustack``    -- the GPUStack operator's mirror: schemas, admission, transfer analysis, objects.
* ``gpu_fabric.kube``        -- node-side Kubernetes: topology rendering, device plugins, Kueue, coverage.
* ``gpu_fabric.aws``         -- EC2 instance facts, the EFA planner, node-group inputs, user data.
* ``gpu_fabric.plan``        -- what crosses domains: EFA domains, the fabric plan.
* ``gpu_fabric.validation``  -- ``load_config``: the whole configuration, the pack's verdicts included; the rule registry.
* ``gpu_fabric.policies``    -- CrossGuard policies: adapters from the engine's resources to the same rules.
* ``gpu_fabric.resources``   -- thin Pulumi ``ComponentResource`` classes that register plain dicts.
* ``gpu_fabric.program``     -- the stack program, the offline render under mocks, the provider.
* ``gpu_fabric.cli``, ``gpu_fabric.diff``, ``gpu_fabric.verify`` -- the commands.

Importing the package stays cheap: nothing here imports Pulumi or boto3.
"""

__version__ = "0.1.0"

import importlib
from typing import TYPE_CHECKING, Any

# The public API: ``from gpu_fabric import EfaNodeGroup, EfaNodeGroupArgs``. Resolved on first use
# (PEP 562), so ``import gpu_fabric`` and the CLI's offline commands never pay for Pulumi's import.
_PUBLIC = {
    "GpuFabric": "gpu_fabric.resources.fabric",
    "GpuFabricArgs": "gpu_fabric.resources.fabric",
    "EfaDomain": "gpu_fabric.resources.efa_domain",
    "EfaDomainArgs": "gpu_fabric.resources.efa_domain",
    "EfaNodeGroup": "gpu_fabric.resources.efa_node_group",
    "EfaNodeGroupArgs": "gpu_fabric.resources.efa_node_group",
    "KarpenterEfaPool": "gpu_fabric.resources.karpenter_pool",
    "KarpenterEfaPoolArgs": "gpu_fabric.resources.karpenter_pool",
    "KueuePool": "gpu_fabric.resources.kueue_pool",
    "KueuePoolArgs": "gpu_fabric.resources.kueue_pool",
    "KVCache": "gpu_fabric.resources.kv_cache",
    "KVCacheArgs": "gpu_fabric.resources.kv_cache",
    "ModelDeployment": "gpu_fabric.resources.model_deployment",
    "ModelDeploymentArgs": "gpu_fabric.resources.model_deployment",
    "EfaDevicePlugin": "gpu_fabric.resources.device_plugins",
    "EfaDevicePluginArgs": "gpu_fabric.resources.device_plugins",
    "GpuStackDeviceManager": "gpu_fabric.resources.device_plugins",
    "GpuStackDeviceManagerArgs": "gpu_fabric.resources.device_plugins",
    "KubeletTopologyAgent": "gpu_fabric.resources.kubelet_topology_agent",
    "KubeletTopologyAgentArgs": "gpu_fabric.resources.kubelet_topology_agent",
}

__all__ = ["__version__", *_PUBLIC]

if TYPE_CHECKING:  # what static type checkers and IDEs see; the same names __getattr__ returns
    from gpu_fabric.resources.device_plugins import (
        EfaDevicePlugin,
        EfaDevicePluginArgs,
        GpuStackDeviceManager,
        GpuStackDeviceManagerArgs,
    )
    from gpu_fabric.resources.efa_domain import EfaDomain, EfaDomainArgs
    from gpu_fabric.resources.efa_node_group import EfaNodeGroup, EfaNodeGroupArgs
    from gpu_fabric.resources.fabric import GpuFabric, GpuFabricArgs
    from gpu_fabric.resources.karpenter_pool import KarpenterEfaPool, KarpenterEfaPoolArgs
    from gpu_fabric.resources.kubelet_topology_agent import KubeletTopologyAgent, KubeletTopologyAgentArgs
    from gpu_fabric.resources.kueue_pool import KueuePool, KueuePoolArgs
    from gpu_fabric.resources.kv_cache import KVCache, KVCacheArgs
    from gpu_fabric.resources.model_deployment import ModelDeployment, ModelDeploymentArgs


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'gpu_fabric' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_PUBLIC})
