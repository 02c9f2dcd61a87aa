"""A fabric domain in people's words: its legs as paths from role to pool to node group and back."""

from __future__ import annotations

from typing import Optional

from gpu_fabric.plan.efa_domains.derivation import DomainPlan, DomainPool


def _pool_hop(pool: DomainPool) -> str:
    if pool.node_group is None:
        return f"pool {pool.name} -> nodes outside this stack"
    efa = f", {pool.efa_per_node} EFA" if pool.efa_per_node is not None else ""
    return (f"pool {pool.name} -> {pool.provided_by} {pool.node_group} "
            f"({pool.availability_zone or 'AZ unknown'}, {pool.subnet_id or 'subnet unknown'}{efa})")


def describe_domain(domain: DomainPlan, carried_by: Optional[str]) -> list[str]:
    """The domain as paths: ``role -> pool -> node group (AZ, subnet, EFA) <-> members -> pool -> node group``.

    ``carried_by`` says which security group carries the domain's traffic (``None``: not known).
    """
    pools = {pool.name: pool for pool in domain.pools}
    lines = [f"{domain.fabric.upper()} domain {domain.name}: {len(domain.pools)} pool(s), "
             f"{domain.availability_zone or 'AZ not known'}, {carried_by or 'security group not known'}"]
    for leg in domain.legs:
        lines.append(f"  {leg.kind:<6} {leg.source.who} -> {_pool_hop(pools[leg.source.pool])}")
        lines.append(f"     <-> {leg.target.who} -> {_pool_hop(pools[leg.target.pool])}")
    return lines
