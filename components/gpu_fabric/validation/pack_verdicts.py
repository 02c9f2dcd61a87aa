"""What the pack's mandatory policies refuse from the configuration alone, refused by the stack too.

The one stack must never register what its own pack would refuse at preview. The rules are not
repeated here: each check calls the very rule the policy calls, on the configuration's own typed
models, and places its findings at the configuration path. Each finding's rule names the policy
(``... (policy NAME)`` in the message, exit 1 when only policies refuse: see
:class:`gpu_fabric.config.base.ConfigError`).

* ``fabric-pool-topology``: :func:`gpu_fabric.kube.topology_rules.topology_findings` on each fabric pool's topology;
* ``kv-cache-transport-fabric``: :func:`gpu_fabric.plan.transport_fabric.member_findings` on each fabric member
  group and every pool it selects (:func:`gpu_fabric.kube.pool_view.pool_view_of`);
* ``pool-accelerator-capacity``: :func:`gpu_fabric.plan.pool_capacity.capacity_findings` on the pools at their
  largest size and the ModelDeployments the stack registers, at ``modelDeployments[i].roles[j].replicas``;
* ``mooncake-members-unprivileged``: :func:`gpu_fabric.gpustack.privilege_rules.member_privilege_findings` on each
  KVCacheBackend the stack registers;
* ``efa-node-group-placement``: :func:`gpu_fabric.aws.node_group_placement.placement_findings` on the node
  group ``EfaNodeGroup`` builds for each managed pool, and on the NodeClass ``KarpenterEfaPool`` builds for each
  Karpenter pool (:func:`gpu_fabric.aws.node_group_placement.spec_placement`);
* ``dra-pools``: :func:`gpu_fabric.plan.dra_pools.dra_pool_findings` on each ``deviceAllocation: dra`` pool,
  :func:`gpu_fabric.kube.dra_exclusive.device_plugin_findings` on the stack's own EFA plugin and the one it is
  ``providedBy``, and the device-plugin keys the stack's ModelDeployments and Mooncake members would request there.
"""

from __future__ import annotations

from typing import Iterable

from gpu_fabric.aws.node_group_placement import placement_findings, spec_placement
from gpu_fabric.config.fabric import FabricConfig
from gpu_fabric.findings import Finding
from gpu_fabric.kube.pool_view import pool_view_of
from gpu_fabric.kube.topology_rules import topology_findings
from gpu_fabric.plan.pool_capacity import capacity_findings, pool_capacity_of
from gpu_fabric.plan.transport_fabric import member_findings, shared_node_findings


def pack_problems(config: FabricConfig) -> list[Finding]:
    """Every mandatory verdict the configuration already decides, at its configuration path."""
    return [*_topology_problems(config), *_member_problems(config), *_privilege_problems(config),
            *_capacity_problems(config), *_placement_problems(config), *dra_problems(config)]


def _privilege_problems(config: FabricConfig) -> Iterable[Finding]:
    """``mooncake-members-unprivileged`` on the KVCacheBackends the stack registers, at ``kvCacheBackends[i]``."""
    from gpu_fabric.gpustack.objects import gpustack_manifests
    from gpu_fabric.gpustack.privilege_rules import member_privilege_findings

    position = {backend.name: i for i, backend in enumerate(config.kv_cache_backends)}
    for manifest in gpustack_manifests(config):
        name = manifest["metadata"]["name"]
        if manifest["kind"] == "KVCacheBackend" and name in position:
            for finding in member_privilege_findings(manifest, None):
                yield finding.moved(f"kvCacheBackends[{position[name]}]" + str(finding.path)[len("spec"):])


def dra_problems(config: FabricConfig) -> list[Finding]:
    """What the ``dra-pools`` policy refuses, at configuration paths (nothing for a stack without a ``dra`` pool)."""
    if not any(pool.uses_dra for pool in config.pools):
        return []
    from gpu_fabric.gpustack.admission_pipeline import analyze
    from gpu_fabric.gpustack.objects import model_deployment
    from gpu_fabric.kube.dra_exclusive import device_plugin_findings
    from gpu_fabric.plan.dra_pools import config_dra_findings, deployment_plugin_key_findings, member_plugin_key_findings
    from gpu_fabric.plan.fabric_plan import external_efa_plugin, stack_device_plugin_daemonsets

    problems = list(config_dra_findings(config))
    views = [pool_view_of(pool) for pool in config.pools]
    own = stack_device_plugin_daemonsets(config)
    problems += [finding.moved("devicePlugins.efa").about(None) for finding in device_plugin_findings(views, own)]
    external = config.device_plugins.efa.provided_by
    if external is not None:
        plugin = external_efa_plugin(external.model_dump(by_alias=True, exclude_none=True))
        problems += [finding.moved("devicePlugins.efa.providedBy").about(None)
                     for finding in device_plugin_findings(views, [plugin])]
    by_name = {view.name: view for view in views}
    for i, deployment in enumerate(config.model_deployments):
        for finding in deployment_plugin_key_findings(model_deployment(deployment, config.gpustack_api_version), by_name):
            problems.append(finding.moved(f"modelDeployments[{i}]" + str(finding.path)[len("spec"):]).about(None))
    if config.kv_cache_backends:
        from gpu_fabric.gpustack.objects import gpustack_manifests

        report = analyze(gpustack_manifests(config),
                         manufacturers={pool.name: pool.resolved_manufacturer for pool in config.pools},
                         operator=config.gpustack_operator)
        position = {backend.name: i for i, backend in enumerate(config.kv_cache_backends)}
        for grant in report.member_grants:
            if grant.backend in position:
                for finding in member_plugin_key_findings(grant, views):
                    problems.append(finding.moved(f"kvCacheBackends[{position[grant.backend]}]"
                                                  + str(finding.path)[len("spec"):]).about(None))
    return problems


def _topology_problems(config: FabricConfig) -> Iterable[Finding]:
    for i, pool in enumerate(config.pools):
        if pool.fabric == "none":
            continue
        for finding in topology_findings(pool.topology):
            yield finding.at(f"pools[{i}].topology")


def _member_problems(config: FabricConfig) -> Iterable[Finding]:
    if not config.kv_cache_backends:
        return
    from gpu_fabric.gpustack.admission_pipeline import analyze
    from gpu_fabric.gpustack.objects import gpustack_manifests

    report = analyze(gpustack_manifests(config),
                     manufacturers={pool.name: pool.resolved_manufacturer for pool in config.pools},
                     operator=config.gpustack_operator)
    position = {backend.name: i for i, backend in enumerate(config.kv_cache_backends)}
    pools = [pool_view_of(pool) for pool in config.pools]
    for grant in report.member_grants:
        if not grant.uses_fabric or grant.backend not in position:
            continue
        path = f"kvCacheBackends[{position[grant.backend]}].connection.managed.members[{grant.group_index}]"
        for pool in pools:
            if pool.matches_selector(grant.node_selector):
                for finding in member_findings(grant, pool):
                    yield finding.moved(path).about(None)
    # A role's Pod beside the member groups on its pool's nodes (the kv-cache-transport-fabric policy's rule).
    by_name = {pool.name: pool for pool in pools}
    deployments = {(d.namespace, d.name): i for i, d in enumerate(config.model_deployments)}
    for role in report.role_grants:
        view, index = by_name.get(role.instance_type), deployments.get((role.namespace, role.deployment))
        if view is None or index is None:
            continue
        for finding in shared_node_findings(role, view, report.member_grants):
            # spec.roles[j].resources.interface of the manifest is roles[j].resources.interface of the item.
            yield finding.moved(f"modelDeployments[{index}].{str(finding.path).removeprefix('spec.')}").about(None)


def _capacity_problems(config: FabricConfig) -> Iterable[Finding]:
    from gpu_fabric.gpustack.objects import model_deployment

    position: dict[tuple[str | None, str], int] = {(d.namespace, d.name): i for i, d in enumerate(config.model_deployments)}
    manifests = [model_deployment(d) for d in config.model_deployments]
    for finding in capacity_findings([pool_capacity_of(pool) for pool in config.pools], manifests):
        subject = finding.subject
        item = f"modelDeployments[{position[(subject.namespace, subject.name)]}]" if subject else "modelDeployments"
        # spec.roles[j].replicas of the manifest is roles[j].replicas of the configuration item.
        yield finding.moved(f"{item}.{str(finding.path).removeprefix('spec.')}").about(None)


def _placement_problems(config: FabricConfig) -> Iterable[Finding]:
    for i, pool in enumerate(config.pools):
        if pool.aws is None:
            continue
        # One rule for both provisioners: a Karpenter pool launches through an EC2NodeClass that selects
        # the same placement group (or none) the node group's launch template would name.
        for finding in placement_findings(spec_placement(pool.name, pool.aws)):
            yield finding.moved(f"pools[{i}].aws.placementGroup")
