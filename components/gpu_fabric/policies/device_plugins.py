"""Policy ``device-plugin-coverage``: every fabric pool has a device plugin that actually schedules on its nodes.

A plugin DaemonSet whose selector or tolerations miss the pool shows ``DESIRED=0`` and nothing
fails loudly: pods never get ``vpc.amazonaws.com/efa`` / ``device.gpustack.ai/rdma`` and NCCL falls
back to sockets. The rule is :data:`gpu_fabric.kube.coverage.DEVICE_PLUGIN_COVERAGE`, decided by
:mod:`gpu_fabric.kube.coverage` (the one the components use):

* EFA pools need a DaemonSet advertising ``vpc.amazonaws.com/efa`` that schedules on their labels
  and taints; an EFA plugin must not schedule on pools without EFA (it crash-loops there);
* RDMA pools need GPUStack's Device Manager -- or the GPUStack operator chart deploys it. The
  stack says so with ``devicePlugins.deviceManager.deployedBy: operator-chart`` on the GpuFabric
  component's inputs; without that input, when the operator owns its queues (``queueOwner:
  gpustack``: the operator and its chart are installed), or when the stack installs the
  ``gpustack-operator`` Helm chart. Policy config
  ``operatorChartDeploysDeviceManagers`` overrides that inference; ``manufacturersServed`` lists the
  chart's ``global.manufacturers``.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from pulumi_policy import EnforcementLevel, PolicyConfigSchema, Severity, StackValidationArgs, StackValidationPolicy

from gpu_fabric.findings import Finding
from gpu_fabric.kube.coverage import DEVICE_PLUGIN_COVERAGE
from gpu_fabric.policies.reporting import report_finding
from gpu_fabric.config.shapes import as_mapping, known_str, unknown_paths
from gpu_fabric.policies.engine_wire import stack_resources
from gpu_fabric.plan.resource_view import GPU_FABRIC_TYPE, pool_facts, PoolFacts, queue_owner, Resource

OPERATOR_CHART = "gpustack-operator"
HELM_TYPES = ("kubernetes:helm.sh/v3:Release", "kubernetes:helm.sh/v3:Chart", "kubernetes:helm.sh/v4:Chart")


def installs_operator_chart(resources: Sequence[Resource]) -> bool:
    """The stack installs the GPUStack operator chart with its Device Managers enabled."""
    for resource in resources:
        if resource.type in HELM_TYPES and OPERATOR_CHART in (known_str(resource.props.get("chart")) or ""):
            values = as_mapping(resource.props.get("values"))
            if as_mapping(values.get("deviceManager")).get("enabled") is False:
                continue
            return True
    return False


def operator_chart_deploys_device_managers(resources: Sequence[Resource], config: dict) -> bool:
    """Whether RDMA pools are served by the operator chart's own Device Managers."""
    if "operatorChartDeploysDeviceManagers" in config:
        return bool(config["operatorChartDeploysDeviceManagers"])
    declared = declared_device_manager_source(resources)
    if declared is not None:
        return declared == "operator-chart"
    return queue_owner(resources) == "gpustack" or installs_operator_chart(resources)


def declared_device_manager_source(resources: Sequence[Resource]) -> Optional[str]:
    """``devicePlugins.deviceManager.deployedBy`` (``operator-chart`` or ``stack``) when the GpuFabric states it."""
    for resource in resources:
        if resource.type == GPU_FABRIC_TYPE:
            settings = as_mapping(as_mapping(resource.props.get("devicePlugins")).get("deviceManager"))
            source = known_str(settings.get("deployedBy"))
            if source:
                return source
    return None


def _undecided(pool: PoolFacts) -> bool:
    """Where the pool's nodes are rests on a value unknown at preview (its fabric, a taint)."""
    return pool.fabric_unknown or bool(unknown_paths(list(pool.taints)))


def _placement(pool: PoolFacts, problems: list[tuple[str, Finding]]) -> Optional[Any]:
    from gpu_fabric.kube.coverage import PoolPlacement

    try:
        return PoolPlacement(pool.name, pool.fabric, dict(pool.labels), tuple(pool.taints), pool.manufacturer)
    except ValueError as error:
        problems.append((pool.urn, Finding.of(DEVICE_PLUGIN_COVERAGE, "", f"pool {pool.name}: {error}", pool=pool.name,
                                              rests_on_unknown=_undecided(pool))))
        return None


def declared_external_efa_plugins(resources: Sequence[Resource]) -> list[dict[str, Any]]:
    """The EFA plugin a GpuFabric says is installed outside the stack (``devicePlugins.efa.providedBy``)."""
    from gpu_fabric.plan.fabric_plan import external_efa_plugin

    found = []
    for resource in resources:
        if resource.type == GPU_FABRIC_TYPE:
            efa = as_mapping(as_mapping(resource.props.get("devicePlugins")).get("efa"))
            provided_by = as_mapping(efa.get("providedBy"))
            if efa.get("deploy") is False and provided_by:
                found.append(external_efa_plugin(provided_by))
    return found


def coverage_findings(resources: Sequence[Resource], config: dict) -> list[tuple[str, Finding]]:
    """``(urn, finding)`` for every pool without a working device plugin, and every stray EFA plugin."""
    from gpu_fabric.kube.coverage import efa_plugins_on_pools_without_efa, uncovered_pools

    problems: list[tuple[str, Finding]] = []
    pools = pool_facts(resources)
    pools_undecided = {pool.name for pool in pools if _undecided(pool)}
    placements = {pool.name: p for pool in pools if (p := _placement(pool, problems)) is not None}
    urns = {pool.name: pool.urn for pool in pools}
    candidates = [r for r in resources if r.type.endswith(":DaemonSet") or (r.is_kubernetes_object and r.kind == "DaemonSet")]
    # A DaemonSet with a value unknown at preview (its selector, tolerations, image ...) may serve any
    # pool or none: the pools it could serve wait for it, and it is no stray plugin either, yet.
    undecided = any(unknown_paths(dict(r.props)) for r in candidates)
    daemonsets = [dict(r.props) for r in candidates if not unknown_paths(dict(r.props))]
    daemonsets.extend(declared_external_efa_plugins(resources))
    served = config.get("manufacturersServed")
    # A dra pool needs no device plugin (DRANET publishes its EFA devices); the dra-pools policy keeps plugins off it.
    dra = {pool.name for pool in pools if pool.uses_dra}
    gaps = [] if undecided else uncovered_pools(
        [placement for name, placement in placements.items() if name not in dra], daemonsets,
        external_rdma_plugin=operator_chart_deploys_device_managers(resources, config),
        manufacturers_served=served if isinstance(served, list) else None,
    )
    for gap in [*gaps, *efa_plugins_on_pools_without_efa(list(placements.values()), daemonsets)]:
        problems.append((urns[gap.pool], Finding.of(DEVICE_PLUGIN_COVERAGE, "", f"pool {gap.pool} ({gap.fabric}): {gap.reason}",
                                                    pool=gap.pool, rests_on_unknown=gap.pool in pools_undecided)))
    return problems


def _validate(args: StackValidationArgs, report_violation: Any) -> None:
    for urn, finding in coverage_findings(stack_resources(args), dict(args.get_config() or {})):
        report_finding(report_violation, finding, finding.message, urn)


device_plugin_coverage = StackValidationPolicy(
    name="device-plugin-coverage",
    display_name="Fabric pools have a device plugin that schedules on them",
    description=(
        "Every EFA pool has an EFA device plugin DaemonSet whose nodeSelector, node affinity and tolerations "
        "match the pool's nodes (and the plugin does not land on pools without EFA); every RDMA pool has a "
        "GPUStack Device Manager that schedules on it, or the GPUStack operator chart deploys one."
    ),
    validate=_validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    tags=["kubernetes", "device-plugin", "efa", "rdma"],
    config_schema=PolicyConfigSchema(properties={
        "operatorChartDeploysDeviceManagers": {
            "type": "boolean",
            "description": "Whether the GPUStack operator chart deploys Device Managers for RDMA pools "
                           "(default: inferred from queueOwner gpustack or a gpustack-operator Helm chart in the stack).",
        },
        "manufacturersServed": {
            "type": "array", "items": {"type": "string"},
            "description": "The operator chart's global.manufacturers (default: all).",
        },
    }),
    remediation_steps=(
        "Deploy gpu_fabric.resources.device_plugins.EfaDevicePlugin / GpuStackDeviceManager with the pools they "
        "serve: they select on vpc.amazonaws.com/efa.present (EFA) or the NFD PCI vendor label (RDMA) and "
        "tolerate every taint of the pools. For hand-written DaemonSets add the pools' taints as tolerations and "
        "select on labels every pool node carries, never on a static instance-type list."
    ),
)
