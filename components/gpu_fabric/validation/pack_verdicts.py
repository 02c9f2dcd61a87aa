"""What the pack's mandatory policies refuse from the configuration alone, refused by the stack too.

The one stack must never register what its own pack would refuse at preview. The rules are not
repeated here: each check calls the very function the policy calls, on the same shapes the policy
reads (pool facts from the pool specs, launch template and node group inputs from the builders,
member grants from the operator's admission analysis), and reports at the configuration path.

* ``fabric-pool-topology``: :func:`gpu_fabric.policies.topology.mandatory_findings`
* ``kv-cache-transport-fabric``: :func:`gpu_fabric.policies.kv_cache.member_findings`
* ``efa-node-group-placement``: :func:`gpu_fabric.policies.node_groups.node_group_findings`
"""

from __future__ import annotations

import re
from typing import Iterable, Optional, Sequence

from gpu_fabric.config.base import ConfigError
from gpu_fabric.config.fabric import FabricConfig
from gpu_fabric.config.pool import PoolSpec


class PackRefusalError(ConfigError):
    """A well-formed configuration that mandatory policies of the pack refuse: every problem is
    tagged with the refusing policy (:func:`policy_message`).

    Still a :class:`ConfigError` (each problem at its configuration path, nothing registered), but
    a policy violation rather than unusable input: the command line exits 1 for it, as ``check``
    does for a violation found in the render.
    """

    @property
    def policies(self) -> list[str]:
        """The refusing policies' names, sorted."""
        return sorted({name for _, message in self.problems if (name := refusing_policy(message))})


_POLICY_TAG = re.compile(r" \(policy ([a-z0-9-]+)\)$")


def policy_message(message: str, policy: str) -> str:
    """``message`` tagged with the mandatory policy that refuses the same thing: ``... (policy NAME)``."""
    return f"{message} (policy {policy})"


def refusing_policy(message: str) -> Optional[str]:
    """The policy a :func:`policy_message` names, ``None`` for any other problem."""
    match = _POLICY_TAG.search(message)
    return match.group(1) if match else None


def refusal_error(problems: Sequence[tuple[str, str]]) -> ConfigError:
    """:class:`PackRefusalError` when a policy refuses every one of ``problems``, else a plain :class:`ConfigError`."""
    if problems and all(refusing_policy(message) for _, message in problems):
        return PackRefusalError(problems)
    return ConfigError(problems)


def pack_problems(config: FabricConfig) -> list[tuple[str, str]]:
    """``(config path, message)`` for every mandatory verdict the configuration already decides."""
    return [*_topology_problems(config), *_member_problems(config), *_placement_problems(config)]


def _topology_problems(config: FabricConfig) -> Iterable[tuple[str, str]]:
    from gpu_fabric.policies.topology import mandatory_findings

    for i, pool in enumerate(config.pools):
        if pool.fabric == "none":
            continue
        for problem in mandatory_findings(pool.topology.model_dump(by_alias=True, exclude_none=True)):
            field = ".policy" if problem.startswith("TopologyManager policy") else ""
            yield f"pools[{i}].topology{field}", policy_message(problem, "fabric-pool-topology")


def _pool_facts(config: FabricConfig):
    from gpu_fabric.policies._props import KUEUE_POOL_TYPE, Resource, pool_facts

    return pool_facts([Resource(KUEUE_POOL_TYPE, pool.name, f"pool::{pool.name}",
                                {"pool": pool.model_dump(by_alias=True, exclude_none=True)})
                       for pool in config.pools])


def _member_problems(config: FabricConfig) -> Iterable[tuple[str, str]]:
    if not config.kv_cache_backends:
        return
    from gpu_fabric.gpustack.objects import gpustack_manifests
    from gpu_fabric.policies.kv_cache import member_findings
    from gpu_fabric.gpustack.admission_pipeline import analyze

    report = analyze(gpustack_manifests(config),
                     manufacturers={pool.name: pool.resolved_manufacturer for pool in config.pools},
                     operator=config.gpustack_operator)
    position = {backend.name: i for i, backend in enumerate(config.kv_cache_backends)}
    pools = _pool_facts(config)
    for grant in report.member_grants:
        if not grant.uses_fabric or grant.backend not in position:
            continue
        path = f"kvCacheBackends[{position[grant.backend]}].connection.managed.members[{grant.group_index}]"
        for pool in pools:
            if pool.matches_selector(grant.node_selector):
                for problem in member_findings(grant.protocol, grant.fabric_interface_count, pool):
                    yield path, policy_message(problem, "kv-cache-transport-fabric")


def _placement_problems(config: FabricConfig) -> Iterable[tuple[str, str]]:
    from gpu_fabric.policies.node_groups import node_group_findings

    for i, pool in enumerate(config.pools):
        if pool.aws is None or pool.aws.is_karpenter:  # no node group; the Karpenter rules run in GpuFabric
            continue
        for problem in node_group_findings(*_node_group_resources(pool)):
            yield f"pools[{i}].aws.placementGroup", policy_message(problem, "efa-node-group-placement")


def _node_group_resources(pool: PoolSpec):
    """The node group and the resources registered beside it, as ``EfaNodeGroup`` builds their inputs.

    Ids that exist only after creation are placeholders; the placement policy reads names, labels,
    capacity settings and which resources share a parent.
    """
    from gpu_fabric.aws.node_group import (
        LAUNCH_TEMPLATE_TYPE,
        NODE_GROUP_TYPE,
        PLACEMENT_GROUP_TYPE,
        launch_template_inputs,
        node_group_inputs,
        node_labels,
        placement_group_inputs,
    )
    from gpu_fabric.policies._props import Resource

    spec = pool.aws
    assert spec is not None and spec.scaling is not None and spec.node_role_arn is not None
    parent = f"efa-node-group::{pool.name}"
    siblings = []
    placement_name = None
    # ``domain``: a cluster group too (the EFA domain's shared one, or the node group's own when alone).
    if spec.placement_group.mode in ("create", "domain"):
        siblings.append(Resource(PLACEMENT_GROUP_TYPE, f"{pool.name}-placement", f"{parent}-placement",
                                 placement_group_inputs(), parent))
        placement_name = f"{pool.name}-placement"
    elif spec.placement_group.mode == "existing":
        placement_name = spec.placement_group.name
    template = launch_template_inputs(
        pool.name, None, [], ["efa-security-group"], "", placement_group_name=placement_name,
        capacity_reservation_id=spec.capacity_reservation_id, capacity_block=spec.capacity_type == "CAPACITY_BLOCK",
        root_volume=spec.root_volume, ami_family=spec.ami_family)
    node_group = Resource(NODE_GROUP_TYPE, f"{pool.name}-ng", f"{parent}-ng", node_group_inputs(
        cluster_name=spec.cluster_name, node_role_arn=spec.node_role_arn, subnet_ids=[spec.subnet_id],
        ami_type=spec.ami_type, capacity_type=spec.capacity_type, launch_template_id="launch-template",
        launch_template_version="1", min_size=spec.scaling.min_size, max_size=spec.scaling.max_size,
        desired_size=spec.scaling.initial_size, labels=node_labels({**spec.labels, **pool.node_labels})), parent)
    resources = [node_group, Resource(LAUNCH_TEMPLATE_TYPE, f"{pool.name}-lt", f"{parent}-lt", template, parent), *siblings]
    return node_group, resources
