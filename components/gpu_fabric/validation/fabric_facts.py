"""The stack's pools against the hardware and the advertisers around them, at configuration paths.

``load_config`` refuses what the ``pool-instance-facts`` and ``fabric-advertisers`` policies refuse, by
calling their functions (:func:`gpu_fabric.aws.instance_facts.pool_instance_findings`,
:func:`gpu_fabric.kube.advertisers.advertiser_findings`) on the shapes the policies read, and
``gpu-fabric lint --stack`` judges manifests beside the very DaemonSets the stack deploys
(:func:`gpu_fabric.plan.fabric_plan.stack_device_plugin_daemonsets`).
"""

from __future__ import annotations

from typing import Iterable

from gpu_fabric.aws.instance_facts import known_items, pool_instance_findings, pool_instance_types
from gpu_fabric.config.fabric import FabricConfig
from gpu_fabric.findings import Finding
from gpu_fabric.kube.advertisers import EFA_PLUGIN_VERSION, advertiser_findings
from gpu_fabric.kube.workload_rules import FabricPool
from gpu_fabric.kube.workloads import fabric_pool_of
from gpu_fabric.plan.fabric_plan import stack_device_plugin_daemonsets


def instance_fact_problems(config: FabricConfig) -> Iterable[Finding]:
    """Pool names and counts the instance facts of their node groups (or pinned instance type) contradict."""
    for i, pool in enumerate(config.pools):
        spec = pool.model_dump(by_alias=True, exclude_none=True)
        types = pool_instance_types(spec)
        if not types:
            continue
        for finding in pool_instance_findings(spec, known_items(types)):
            yield finding.at(f"pools[{i}]")


def stack_fabric_pools(config: FabricConfig) -> list[FabricPool]:
    """Every pool of the stack as the workload and advertiser rules see it."""
    return [fabric_pool_of(pool) for pool in config.pools]


def advertiser_problems(config: FabricConfig) -> Iterable[Finding]:
    """The stack's own device plugins against its pools: the EFA plugin's version floor, one advertiser per pool."""
    position = {pool.name: i for i, pool in enumerate(config.pools)}
    for finding in advertiser_findings(stack_fabric_pools(config), stack_device_plugin_daemonsets(config)):
        if not finding.is_error:
            continue
        path = "devicePlugins.efa.imageTag" if finding.rule is EFA_PLUGIN_VERSION else f"pools[{position[finding.pool or '']}]"
        yield finding.moved(path).about(None)
