"""Policies over the fabric pools' kubelet topology: the rules of :mod:`gpu_fabric.kube.topology_rules`.

Three policies, since enforcement is per policy:

* ``fabric-pool-topology`` (mandatory): :func:`~gpu_fabric.kube.topology_rules.topology_input_findings`
  over each fabric pool's ``topology`` input;
* ``fabric-pool-topology-alignment`` (advisory): :func:`~gpu_fabric.kube.topology_rules.alignment_findings`;
* ``fabric-pool-topology-delivered`` (advisory): the settings reach the pool's nodes, through the
  stack's EKS node group user data or a ``KubeletTopologyAgent``; otherwise they are computed and
  never applied, and the nodes run the kubelet default (``none``).

A pool without a ``topology`` block gets the fabric default (``restricted``/``container``).
"""

from __future__ import annotations

from typing import Any

from pulumi_policy import EnforcementLevel, Severity, StackValidationArgs, StackValidationPolicy

from gpu_fabric.config.shapes import as_mapping, known_str
from gpu_fabric.findings import Finding
from gpu_fabric.kube.topology_rules import alignment_findings, delivery_findings, topology_input_findings
from gpu_fabric.policies.engine_wire import stack_resources
from gpu_fabric.plan.resource_view import KUEUE_POOL_TYPE, pool_facts, Resource
from gpu_fabric.policies.reporting import report_finding


def _fabric_pools(args: StackValidationArgs):
    return [p for p in pool_facts(stack_resources(args)) if p.fabric != "none" and p.topology is not None]


def _validate_mandatory(args: StackValidationArgs, report_violation: Any) -> None:
    for pool in _fabric_pools(args):
        for finding in topology_input_findings(pool.topology or {}):
            report_finding(report_violation, finding, f"{pool.fabric} pool {pool.name}: topology: {finding.message}", pool.urn)


def _validate_advisory(args: StackValidationArgs, report_violation: Any) -> None:
    for pool in _fabric_pools(args):
        for finding in alignment_findings(pool.topology or {}):
            report_finding(report_violation, finding, f"{pool.fabric} pool {pool.name}: topology.{finding.path}: {finding.message}",
                           pool.urn)


def undelivered_topologies(resources: list[Resource]) -> list[tuple[str, Finding]]:
    """``(urn, finding)`` for every fabric pool whose kubelet topology no part of the stack delivers.

    Delivered means: the pool's nodes come from the stack's node group (``aws``: user data), the
    pool sets ``topologyAgent``, or a topology agent DaemonSet of the stack names the pool.
    """
    from gpu_fabric.kube.topology_agent import POOL_ANNOTATION
    from gpu_fabric.kube.host_access import is_topology_agent

    agents = {known_str(as_mapping(as_mapping(r.props.get("metadata")).get("annotations")).get(POOL_ANNOTATION))
              for r in resources if r.type.startswith("kubernetes:") and is_topology_agent({"kind": r.type.rsplit(":", 1)[-1], **r.props})}
    missing: list[tuple[str, Finding]] = []
    for resource in resources:
        if resource.type != KUEUE_POOL_TYPE:
            continue
        pool = as_mapping(resource.props.get("pool"))
        name = known_str(pool.get("name"))
        if not name or (known_str(pool.get("fabric")) or "none") == "none":
            continue
        agent = bool(pool.get("topologyAgent")) or name in agents
        missing.extend((resource.urn, finding) for finding in delivery_findings(name, provisioned=bool(pool.get("aws")),
                                                                              agent=agent))
    return missing


def _validate_delivered(args: StackValidationArgs, report_violation: Any) -> None:
    for urn, finding in undelivered_topologies(stack_resources(args)):
        report_finding(report_violation, finding, finding.message, urn)


fabric_pool_topology = StackValidationPolicy(
    name="fabric-pool-topology",
    display_name="Fabric pools run an aligning, consistent kubelet topology",
    description=(
        "A fabric (EFA/RDMA) pool's kubelet TopologyManager policy is not 'none', and its CPU manager "
        "settings are consistent: cpuManagerPolicy 'static' reserves system CPUs, CPU manager options only with 'static'."
    ),
    validate=_validate_mandatory,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.MEDIUM,
    tags=["kubelet", "numa", "topology"],
    remediation_steps=(
        "Set the pool's topology.policy to 'restricted' (the fabric default) or 'single-numa-node'. With "
        "cpuManagerPolicy 'static' set reservedSystemCPUs (for example '0-1'); drop cpuManagerPolicyOptions otherwise."
    ),
)

fabric_pool_topology_alignment = StackValidationPolicy(
    name="fabric-pool-topology-alignment",
    display_name="Fabric pools enforce NUMA alignment",
    description="A fabric pool's TopologyManager policy is 'restricted' or 'single-numa-node', not the merely preferring 'best-effort'.",
    validate=_validate_advisory,
    enforcement_level=EnforcementLevel.ADVISORY,
    severity=Severity.LOW,
    tags=["kubelet", "numa", "topology"],
    remediation_steps=(
        "Set topology.policy to 'restricted' (rejects pods whose devices cannot be aligned) or 'single-numa-node'; "
        "pair it with whole-node or NUMA-sized requests, since rejected pods are not rescheduled."
    ),
)

fabric_pool_topology_delivered = StackValidationPolicy(
    name="fabric-pool-topology-delivered",
    display_name="Fabric pools' kubelet topology reaches their nodes",
    description=(
        "A fabric pool's kubelet topology is delivered to its nodes: by the stack's EKS node group user data, or by a "
        "KubeletTopologyAgent (topologyAgent: true) for nodes the stack does not provision."
    ),
    validate=_validate_delivered,
    enforcement_level=EnforcementLevel.ADVISORY,
    severity=Severity.MEDIUM,
    tags=["kubelet", "numa", "topology"],
    remediation_steps=(
        "Set topologyAgent: true on the pool (see docs/kubelet-topology-agent.md), or configure each node's kubelet "
        "as the walkthrough's step 2 does and verify with /configz."
    ),
)
