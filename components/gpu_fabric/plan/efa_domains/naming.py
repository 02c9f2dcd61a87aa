"""The names ``GpuFabric`` gives a fabric domain's components, and whether a domain shares one security group."""

from __future__ import annotations

from typing import Optional

from gpu_fabric.plan.efa_domains.derivation import DomainPlan


def node_group_component_name(fabric_name: str, pool: str) -> str:
    """Name of the ``EfaNodeGroup`` that ``GpuFabric`` registers for a pool."""
    return f"{fabric_name}-{pool}-nodes"


def shares_security_group(domain: DomainPlan) -> bool:
    """Does ``GpuFabric`` give the domain one security group? EFA domains of two or more node groups.

    A domain of one node group keeps that group's own security group (nothing to join), so such
    stacks, and pools outside any domain, see no change.
    """
    return domain.fabric == "efa" and len(domain.node_group_pools) >= 2


def planned_security_group(fabric_name: str, domain: DomainPlan) -> Optional[str]:
    """The security group ``GpuFabric`` puts on the domain's EFA interfaces, as the summaries name it."""
    if domain.fabric != "efa" or not domain.node_group_pools:
        return None
    if shares_security_group(domain):
        return f"security group {domain_component_name(fabric_name, domain)}-sg"
    own = node_group_component_name(fabric_name, domain.node_group_pools[0].name)
    return f"security group {own}-efa-sg (the node group's own)"


def domain_component_name(fabric_name: str, domain: DomainPlan) -> str:
    """Name of the ``EfaDomain`` component ``GpuFabric`` registers for an EFA domain (its group: ``<name>-sg``)."""
    return f"{fabric_name}-efa-domain-{domain.name}"
