"""The fabric domains of a validated configuration: its pools as :class:`DomainPool`, findings at config paths."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from gpu_fabric.plan.efa_domains.derivation import DomainAnalysis, DomainPool, derive_domains
from gpu_fabric.plan.efa_domains.naming import node_group_component_name

if TYPE_CHECKING:  # the spec package imports this module lazily, never the other way at import time
    from gpu_fabric.config.fabric import FabricConfig


def config_pools(config: "FabricConfig", fabric_name: str = "fabric") -> list[DomainPool]:
    """Every pool of a validated configuration as a :class:`DomainPool` (config paths ``pools[i]``)."""
    from gpu_fabric.aws.node_group import node_group_resource_name
    from gpu_fabric.kube.coverage import PoolPlacement
    from gpu_fabric.plan.fabric_plan import pool_placement_args

    from gpu_fabric.config.markers import is_marker

    def known(value: Optional[str]) -> Optional[str]:
        # An Output given to GpuFabric (a marker while validating) is not compared with other pools.
        return None if is_marker(value) else value

    placements = {args["name"]: PoolPlacement.from_mapping(args) for args in pool_placement_args(config)}
    pools = []
    for i, pool in enumerate(config.pools):
        aws = pool.aws
        pools.append(DomainPool(
            name=pool.name, fabric=pool.fabric, path=f"pools[{i}]",
            labels=placements[pool.name].node_labels(),
            instance_types=tuple(aws.instance_types) if aws else (),
            availability_zone=known(aws.availability_zone) if aws else None,
            vpc_id=known(aws.vpc_id) if aws else None,
            subnet_id=known(aws.subnet_id) if aws else None,
            efa_per_node=pool.interfaces_per_node if pool.fabric == "efa" else None,
            # The EKS node group resource EfaNodeGroup registers (what `check` names from a render).
            # Karpenter pools: the NodePool, which GpuFabric names after the pool.
            node_group=(None if aws is None else pool.name if aws.is_karpenter
                        else node_group_resource_name(node_group_component_name(fabric_name, pool.name))),
            provided_by="NodePool" if aws is not None and aws.is_karpenter else "node group",
        ))
    return pools


def domains_from_config(config: "FabricConfig", fabric_name: str = "fabric") -> DomainAnalysis:
    """The domains of a validated configuration; findings name configuration paths."""
    from gpu_fabric.gpustack.objects import gpustack_manifests
    from gpu_fabric.gpustack.admission_pipeline import analyze

    report = analyze(gpustack_manifests(config),
                     manufacturers={pool.name: pool.resolved_manufacturer for pool in config.pools},
                     operator=config.gpustack_operator)
    deployments = {(d.namespace, d.name): i for i, d in enumerate(config.model_deployments)}
    backends = {b.name: i for i, b in enumerate(config.kv_cache_backends)}
    return derive_domains(
        config_pools(config, fabric_name), report,
        role_path=lambda g: f"modelDeployments[{deployments[(g.namespace, g.deployment)]}].roles[{g.role_index}]",
        member_path=lambda m: f"kvCacheBackends[{backends[m.backend]}].connection.managed.members[{m.group_index}]",
    )
