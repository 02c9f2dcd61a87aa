"""What the one stack deploys for its pools, decided from the configuration alone (pure).

``GpuFabric`` registers exactly these component arguments, and ``load_config`` checks their
coverage before anything is registered, so the two can never disagree.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

from gpu_fabric.kube.device_plugins import device_managers_for_pools, efa_plugin_for_pools
from gpu_fabric.kube.coverage import CoverageGap, PoolPlacement, uncovered_pools
from gpu_fabric.config.fabric import FabricConfig
from gpu_fabric.findings import Finding, Rule

TOPOLOGY_AGENT_SCOPE = Rule(
    "topology-agent-scope", "a pool's kubelet topology agent runs on exactly that pool's nodes",
    "components/gpu_fabric/kube/topology_agent.py")
"""The agent restarts the kubelet of every node it lands on, so it must select its pool's nodes alone."""


def pool_placement_args(config: FabricConfig) -> list[dict[str, Any]]:
    """Each pool as the device-plugin components take it: name, fabric, node labels, taints, manufacturer."""
    return [
        {"name": pool.name, "fabric": pool.fabric, "labels": pool.effective_node_labels(),
         "taints": pool.taint_dicts(), "manufacturer": pool.resolved_manufacturer}
        for pool in config.pools
    ]


def efa_plugin_args(config: FabricConfig) -> Optional[dict[str, Any]]:
    """``EfaDevicePlugin`` arguments, or ``None`` when the stack has no EFA pool or does not deploy it."""
    settings = config.device_plugins.efa
    # A dra pool's EFA devices are DRANET's: the plugin neither serves nor tolerates it, and keeps off its nodes.
    dra_pools = {pool.name for pool in config.pools if pool.uses_dra}
    pools = [pool for pool in pool_placement_args(config) if pool["fabric"] == "efa" and pool["name"] not in dra_pools]
    if not pools or not settings.deploy:
        return None
    args: dict[str, Any] = {"namespace": settings.namespace, "pools": pools}
    if dra_pools:
        args["exclude_dra_nodes"] = True
    if settings.image_repository:
        args["image_repository"] = settings.image_repository
    if settings.image_tag:
        args["image_tag"] = settings.image_tag
    return args


def device_manager_args(config: FabricConfig) -> Optional[dict[str, Any]]:
    """``GpuStackDeviceManager`` arguments, or ``None`` when the operator chart runs its own."""
    settings = config.device_plugins.device_manager
    pools = [pool for pool in pool_placement_args(config) if pool["fabric"] == "rdma"]
    if not pools or settings.deployed_by != "stack":
        return None
    args: dict[str, Any] = {"namespace": settings.namespace, "release_name": settings.release_name, "pools": pools}
    if settings.image:
        args["image"] = settings.image
    if settings.image_tag:
        args["image_tag"] = settings.image_tag
    return args


EXTERNAL_EFA_PLUGIN_NAME = "external-efa-device-plugin"


def external_efa_plugin(provided_by: Mapping[str, Any]) -> dict[str, Any]:
    """The EFA plugin installed outside the stack, as the DaemonSet shape the coverage check reads.

    ``provided_by`` is ``devicePlugins.efa.providedBy`` (camelCase, as the GpuFabric component's
    inputs carry it, so the policy pack builds the very same object).
    """
    from gpu_fabric.kube.device_plugins import EFA_RESOURCE
    from gpu_fabric.kube.coverage import ADVERTISES_ANNOTATION

    pod_spec: dict[str, Any] = {"containers": [{"name": "efa-device-plugin"}]}
    if provided_by.get("nodeSelector"):
        pod_spec["nodeSelector"] = dict(provided_by["nodeSelector"])
    if provided_by.get("tolerations"):
        pod_spec["tolerations"] = [dict(t) for t in provided_by["tolerations"]]
    return {
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": EXTERNAL_EFA_PLUGIN_NAME,
                     "annotations": {ADVERTISES_ANNOTATION: EFA_RESOURCE,
                                     "gpu-fabric.io/provided-by": str(provided_by.get("source", ""))}},
        "spec": {"template": {"spec": pod_spec}},
    }


def stack_device_plugin_daemonsets(config: FabricConfig) -> list[dict[str, Any]]:
    """The device-plugin DaemonSets the stack itself registers (EFA plugin, Device Managers)."""
    daemonsets: list[dict[str, Any]] = []
    efa_args, manager_args = efa_plugin_args(config), device_manager_args(config)
    if efa_args:
        daemonsets.append(efa_plugin_for_pools(efa_args)[0])
    if manager_args:
        daemonsets.extend(device_managers_for_pools(manager_args)[0])
    return daemonsets


def coverage_gaps(config: FabricConfig) -> list[CoverageGap]:
    """Fabric pools that no device plugin of (or declared outside) the stack would serve."""
    # A dra pool needs no device plugin: DRANET publishes its EFA devices (the rule that none runs there is
    # kube.dra_exclusive.device_plugin_findings).
    dra_pools = {pool.name for pool in config.pools if pool.uses_dra}
    placements = [PoolPlacement.from_mapping(pool) for pool in pool_placement_args(config) if pool["name"] not in dra_pools]
    daemonsets = stack_device_plugin_daemonsets(config)
    external = config.device_plugins.efa.provided_by
    if external is not None:
        daemonsets.append(external_efa_plugin(external.model_dump(by_alias=True, exclude_none=True)))
    return uncovered_pools(placements, daemonsets,
                           external_rdma_plugin=config.device_plugins.device_manager.deployed_by == "operator-chart")


def topology_agent_args(config: FabricConfig) -> list[tuple[int, dict[str, Any]]]:
    """``(pool position, KubeletTopologyAgent arguments)`` for every pool with ``topologyAgent``.

    The agent selects the nodes by the very labels and taints device-plugin coverage checks
    (:meth:`PoolSpec.effective_node_labels`, :meth:`PoolSpec.taint_dicts`).
    """
    agents = []
    for position, pool in enumerate(config.pools):
        agent = pool.topology_agent
        if agent is None:
            continue
        agents.append((position, {
            "pool": {"name": pool.name, "labels": pool.effective_node_labels(), "taints": pool.taint_dicts(),
                     "topology": pool.topology.model_dump(exclude_none=True)},
            "namespace": agent.namespace,
            "image": agent.image,
            "host_paths": list(agent.host_paths),
            "kubelet_unit": agent.kubelet_unit,
        }))
    return agents


def topology_agent_problems(config: FabricConfig) -> list[Finding]:
    """Agents that would not run on exactly their pool's nodes, at the configuration path to fix."""
    from gpu_fabric.kube.topology_agent import topology_agent_daemonset
    from gpu_fabric.kube.coverage import daemonset_schedules_on
    from gpu_fabric.config.pool import labels_identify_pool

    problems: list[Finding] = []
    for position, args in topology_agent_args(config):
        pool = config.pools[position]
        if not labels_identify_pool(args["pool"]["labels"]):
            problems.append(Finding.of(TOPOLOGY_AGENT_SCOPE, f"pools[{position}].nodeLabels", (
                "topologyAgent needs a node label that only this pool's nodes carry: with "
                f"{', '.join(sorted(args['pool']['labels'])) or 'no labels'} its DaemonSet would restart the kubelet "
                "of every such node in the cluster")))
            continue
        daemonset = topology_agent_daemonset(args)
        for other in config.pools:
            if other.name == pool.name:
                continue
            schedules, _ = daemonset_schedules_on(daemonset, other.effective_node_labels(), other.taint_dicts())
            if schedules:
                problems.append(Finding.of(TOPOLOGY_AGENT_SCOPE, f"pools[{position}].topologyAgent", (
                    f"its DaemonSet would also run on the nodes of pool {other.name} (their labels include every label "
                    f"of this pool's: {', '.join(f'{k}={v}' for k, v in args['pool']['labels'].items())}) and apply this "
                    "pool's kubelet topology there; give the pools distinguishing nodeLabels")))
    return problems
