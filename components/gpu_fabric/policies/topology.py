"""Policy f: fabric pools align accelerators and NICs on NUMA nodes (kubelet TopologyManager).

Two policies, since enforcement is per policy:

* ``fabric-pool-topology`` (mandatory): a fabric pool's TopologyManager policy is not ``none``, and
  its CPU manager settings are consistent (``static`` needs reserved CPUs; policy options only with
  ``static``) -- read back through :class:`gpu_fabric.config.topology.KubeletTopology`, the model the node
  user data is rendered from;
* ``fabric-pool-topology-alignment`` (advisory): ``best-effort`` admits misaligned pods; use
  ``restricted`` or ``single-numa-node``;
* ``fabric-pool-topology-delivered`` (advisory): the settings reach the pool's nodes, through the
  stack's EKS node group user data or a ``KubeletTopologyAgent``; otherwise they are computed and
  never applied, and the nodes run the kubelet default (``none``).

A pool without a ``topology`` block gets the fabric default (``restricted``/``container``).
"""

from __future__ import annotations

from typing import Any, Mapping

from pulumi_policy import EnforcementLevel, Severity, StackValidationArgs, StackValidationPolicy

from gpu_fabric.policies._props import KUEUE_POOL_TYPE, Resource, as_mapping, known_str, pool_facts, stack_resources, unknown_paths

ALIGNED_POLICIES = ("restricted", "single-numa-node")


def mandatory_findings(topology: Mapping[str, Any]) -> list[str]:
    """Problems that make a fabric pool's topology wrong (not merely weak)."""
    from pydantic import ValidationError

    from gpu_fabric.config.topology import KubeletTopology

    if unknown_paths(topology):
        return []  # every rule reads the whole setting: it is decided once the unknown part is known
    problems = []
    if topology.get("policy") == "none":
        problems.append("TopologyManager policy 'none' does not align accelerators and NICs; use 'restricted' or 'single-numa-node'")
    try:
        KubeletTopology.model_validate(dict(topology))
    except ValidationError as error:
        for item in error.errors():
            location = ".".join(str(part) for part in item["loc"]) or "topology"
            problems.append(f"{location}: {item['msg'].removeprefix('Value error, ')}")
    return problems


def _fabric_pools(args: StackValidationArgs):
    return [p for p in pool_facts(stack_resources(args)) if p.fabric != "none" and p.topology is not None]


def _validate_mandatory(args: StackValidationArgs, report_violation: Any) -> None:
    for pool in _fabric_pools(args):
        for problem in mandatory_findings(pool.topology or {}):
            report_violation(f"{pool.fabric} pool {pool.name}: topology: {problem}", pool.urn)


def _validate_advisory(args: StackValidationArgs, report_violation: Any) -> None:
    for pool in _fabric_pools(args):
        policy = (pool.topology or {}).get("policy", "restricted")
        if policy == "best-effort":
            report_violation(
                f"{pool.fabric} pool {pool.name}: TopologyManager policy 'best-effort' admits pods whose accelerators "
                "and NICs sit on different NUMA nodes; use 'restricted' or 'single-numa-node'",
                pool.urn,
            )


def undelivered_topologies(resources: list[Resource]) -> list[tuple[str, str]]:
    """``(urn, pool name)`` of fabric pools whose kubelet topology no part of the stack delivers.

    Delivered means: the pool's nodes come from the stack's node group (``aws``: user data), the
    pool sets ``topologyAgent``, or a topology agent DaemonSet of the stack names the pool.
    """
    from gpu_fabric.kube.topology_agent import POOL_ANNOTATION
    from gpu_fabric.kube.host_access import is_topology_agent

    agents = {known_str(as_mapping(as_mapping(r.props.get("metadata")).get("annotations")).get(POOL_ANNOTATION))
              for r in resources if r.type.startswith("kubernetes:") and is_topology_agent({"kind": r.type.rsplit(":", 1)[-1], **r.props})}
    missing = []
    for resource in resources:
        if resource.type != KUEUE_POOL_TYPE:
            continue
        pool = as_mapping(resource.props.get("pool"))
        name = known_str(pool.get("name"))
        if not name or (known_str(pool.get("fabric")) or "none") == "none":
            continue
        if pool.get("aws") or pool.get("topologyAgent") or name in agents:
            continue
        missing.append((resource.urn, name))
    return missing


def _validate_delivered(args: StackValidationArgs, report_violation: Any) -> None:
    for urn, name in undelivered_topologies(stack_resources(args)):
        report_violation(
            f"pool {name}: its kubelet topology reaches no node: the stack does not provision its nodes and runs no "
            "kubelet topology agent for it, so its kubelets keep their own TopologyManager policy", urn)


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
