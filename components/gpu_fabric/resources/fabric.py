"""``GpuFabric``: the whole fabric from one validated configuration -- the one stack."""

from __future__ import annotations

from typing import Any, Optional, TypedDict

import pulumi

from gpu_fabric.aws.node_group import NodeGroupInputError, plan_node_group
from gpu_fabric.builders.gpustack import gpustack_manifests
from gpu_fabric.catalog import InstanceCatalog, active_catalog
from gpu_fabric.fabric_plan import device_manager_args, efa_plugin_args, topology_agent_args
from gpu_fabric.resources.device_plugins import EfaDevicePlugin, GpuStackDeviceManager
from gpu_fabric.resources.efa_node_group import EfaNodeGroup
from gpu_fabric.resources.kubelet_topology_agent import KubeletTopologyAgent
from gpu_fabric.resources.kubernetes_objects import child_options
from gpu_fabric.resources.kueue_pool import KueuePool
from gpu_fabric.resources.kv_cache import KVCache
from gpu_fabric.resources.model_deployment import ModelDeployment
from gpu_fabric.spec.base import ConfigError
from gpu_fabric.spec.fabric import FabricConfig, config_keys, load_config
from gpu_fabric.taints import eks_effect


class GpuFabricArgs(TypedDict, total=False):
    """The stack configuration: the same camelCase keys as ``gpu-fabric:*`` in ``Pulumi.<stack>.yaml``."""

    queueOwner: str
    """``gpustack`` (default: the operator owns ClusterQueues) or ``standalone`` (this stack owns them)."""
    gpustackApiVersion: str
    """``v1alpha1`` (default: the version the operator's CRDs serve) or ``v1`` (its aggregated API)."""
    namespaces: list[str]
    """Tenant namespaces."""
    pools: list[dict[str, Any]]
    """Pools (ClusterQueues / InstanceTypes) and their nodes."""
    kvCacheBackends: list[dict[str, Any]]
    """Mooncake KVCacheBackends."""
    kvCachePools: list[dict[str, Any]]
    """KVCachePools."""
    kvCachePoolBindings: list[dict[str, Any]]
    """KVCachePoolBindings."""
    modelDeployments: list[dict[str, Any]]
    """ModelDeployments."""
    devicePlugins: dict[str, Any]
    """Which device plugins the stack deploys (``efa``, ``deviceManager``)."""
    kubernetes: dict[str, Any]
    """Where the Kubernetes objects go (read by the stack program, which builds the provider)."""


class GpuFabric(pulumi.ComponentResource):
    """Composes every part of the fabric; validates the whole configuration before registering anything."""

    local_queues: pulumi.Output[dict[str, dict[str, str]]]
    """Pool name -> namespace -> entrance LocalQueue name (what workloads put in ``kueue.x-k8s.io/queue-name``)."""

    def __init__(
        self,
        name: str,
        args: GpuFabricArgs,
        opts: Optional[pulumi.ResourceOptions] = None,
        *,
        catalog: Optional[InstanceCatalog] = None,
        validated: Optional[FabricConfig] = None,
    ) -> None:
        # ``validated``: the caller already ran load_config on these same args (the stack program
        # must, to build its provider first); validating again would only repeat the work.
        config = validated or load_config({key: args.get(key) for key in config_keys() if args.get(key) is not None})
        catalog = catalog or active_catalog()
        _check_node_groups(config, catalog)  # instance facts, before the first registration
        # Stack-wide facts ride on the component's inputs so that policies can read them at preview.
        super().__init__("gpu-fabric:index:GpuFabric", name, {
            "queueOwner": config.queue_owner,
            "devicePlugins": config.device_plugins.model_dump(by_alias=True, exclude_none=True),
        }, opts)
        self.config: FabricConfig = config
        """The validated configuration this fabric was built from."""

        for pool in config.pools:
            if pool.aws is not None:
                EfaNodeGroup(f"{name}-{pool.name}-nodes", {
                    **pool.aws.model_dump(by_alias=True, exclude_none=True),
                    # The pool's taints are the nodes' taints: the node group must set them.
                    "taints": _eks_taints(pool.taint_dicts()),
                    "topology": pool.topology.model_dump(by_alias=True, exclude_none=True),
                    "poolLabels": pool.node_labels,
                }, child_options(self), catalog=catalog)
        plugin_args = efa_plugin_args(config)
        if plugin_args:
            EfaDevicePlugin(f"{name}-efa-device-plugin", plugin_args, child_options(self))
        manager_args = device_manager_args(config)
        if manager_args:
            GpuStackDeviceManager(f"{name}-device-manager", manager_args, child_options(self))
        for _, agent_args in topology_agent_args(config):
            KubeletTopologyAgent(f"{name}-{agent_args['pool']['name']}-topology-agent", agent_args, child_options(self))

        pools = {
            pool.name: KueuePool(f"{name}-{pool.name}", {
                "pool": pool.model_dump(by_alias=True, exclude_none=True),
                "namespaces": list(config.namespaces),
                "queueOwner": config.queue_owner,
            }, child_options(self))
            for pool in config.pools
        }
        cache = self._kv_cache(name, config)
        cache_objects = [m for m in gpustack_manifests(config) if m["kind"] != "ModelDeployment"]
        manufacturers = {pool.name: pool.resolved_manufacturer for pool in config.pools if pool.resolved_manufacturer}
        for deployment in config.model_deployments:
            # Depend on the exact LocalQueues the roles enter (a component dependency would expand
            # to every queue of every namespace, which grows with the fleet squared).
            queues = {role.instance_type: pools[role.instance_type].local_queue_resources[deployment.namespace]
                      for role in deployment.roles}
            ModelDeployment(f"{name}-{deployment.namespace}-{deployment.name}", {
                "deployment": deployment.model_dump(by_alias=True, exclude_none=True),
                "apiVersion": config.gpustack_api_version,
                "cacheObjects": cache_objects,
                "manufacturers": manufacturers,
            }, child_options(self, [*queues.values(), *([cache] if cache else [])]))

        self.local_queues = pulumi.Output.all(*[p.local_queue_names for p in pools.values()]).apply(
            lambda names: {pool.name: queues for pool, queues in zip(config.pools, names)})
        self.register_outputs({"localQueues": self.local_queues})

    def _kv_cache(self, name: str, config: FabricConfig) -> Optional[KVCache]:
        if not (config.kv_cache_backends or config.kv_cache_pools or config.kv_cache_pool_bindings):
            return None
        dump = lambda items: [item.model_dump(by_alias=True, exclude_none=True) for item in items]  # noqa: E731
        return KVCache(f"{name}-kv-cache", {
            "backends": dump(config.kv_cache_backends),
            "pools": dump(config.kv_cache_pools),
            "bindings": dump(config.kv_cache_pool_bindings),
            "apiVersion": config.gpustack_api_version,
        }, child_options(self))


def _eks_taints(taints: list[dict[str, str]]) -> list[dict[str, str]]:
    return [{**taint, "effect": eks_effect(taint["effect"])} for taint in taints]


def _at_field(prefix: str, default: str, finding: str) -> tuple[str, str]:
    """``"amiType: ..."`` -> ``("<prefix>.amiType", "...")``; other findings go to ``default``."""
    field, colon, message = finding.partition(": ")
    if colon and field.isidentifier():
        return f"{prefix}.{field}", message
    return f"{prefix}.{default}", finding


def _check_node_groups(config: FabricConfig, catalog: InstanceCatalog) -> None:
    """Plan every EFA node group, and check that each pool's interface count is what the plan gives."""
    problems = []
    for i, pool in enumerate(config.pools):
        if pool.aws is None:
            continue
        try:
            plan = plan_node_group(pool.aws, catalog.describe(pool.aws.instance_types))
        except NodeGroupInputError as error:
            problems.extend(_at_field(f"pools[{i}].aws", "instanceTypes", finding) for finding in error.problems)
            continue
        except ValueError as error:
            problems.append((f"pools[{i}].aws.instanceTypes", str(error)))
            continue
        efa_interfaces = sum(1 for interface in plan if interface.interface_type != "interface")
        if pool.interfaces_per_node != efa_interfaces:
            problems.append((f"pools[{i}].interfacesPerNode",
                             f"the node group's plan attaches {efa_interfaces} EFA interfaces per node, "
                             f"not {pool.interfaces_per_node}"))
    if problems:
        raise ConfigError(problems)
