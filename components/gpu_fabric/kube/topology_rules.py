"""A fabric pool's kubelet topology aligns accelerators and NICs on NUMA nodes, and says so consistently.

The kubelet's TopologyManager admits a pod only where its devices share a NUMA node under
``restricted`` and ``single-numa-node``; ``best-effort`` admits misaligned pods and ``none`` does not
align at all (Kubernetes docs, "Control Topology Management Policies on a node"). The CPU manager's
``static`` policy needs reserved system CPUs and its options exist only with ``static`` (Kubernetes
docs, "Control CPU Management Policies on the Node").

* :func:`topology_findings` (``fabric-pool-topology``, mandatory): a typed setting
  (:class:`~gpu_fabric.config.topology.KubeletTopology`, what ``load_config`` holds) whose policy is ``none``;
  :func:`topology_input_findings` reads the setting as a component's input carries it (camelCase,
  perhaps inconsistent, perhaps unknown at preview) through the same model.
* :func:`alignment_findings` (``fabric-pool-topology-alignment``, advisory): ``best-effort``.
"""

from __future__ import annotations

from typing import Any, Mapping

from gpu_fabric.config.shapes import unknown_paths
from gpu_fabric.config.topology import KubeletTopology
from gpu_fabric.findings import Enforcement, Finding, Rule, Severity

TOPOLOGY_MANAGER_DOCS = "https://kubernetes.io/docs/tasks/administer-cluster/topology-manager/"
CPU_MANAGER_DOCS = "https://kubernetes.io/docs/tasks/administer-cluster/cpu-management-policies/"

FABRIC_POOL_TOPOLOGY = Rule(
    "fabric-pool-topology",
    "a fabric pool's TopologyManager policy is not 'none' and its CPU manager settings are consistent",
    TOPOLOGY_MANAGER_DOCS, policy="fabric-pool-topology")
FABRIC_POOL_TOPOLOGY_ALIGNMENT = Rule(
    "fabric-pool-topology-alignment", "a fabric pool's TopologyManager policy is not the merely preferring 'best-effort'",
    TOPOLOGY_MANAGER_DOCS, policy="fabric-pool-topology-alignment", enforcement=Enforcement.ADVISORY)
FABRIC_POOL_TOPOLOGY_DELIVERED = Rule(
    "fabric-pool-topology-delivered",
    "a fabric pool's kubelet topology reaches its nodes (node group user data or a KubeletTopologyAgent)",
    "components/gpu_fabric/kube/topology_agent.py", policy="fabric-pool-topology-delivered",
    enforcement=Enforcement.ADVISORY)


def _policy_findings(policy: Any) -> list[Finding]:
    if policy == "none":
        return [Finding.of(FABRIC_POOL_TOPOLOGY, "policy", "TopologyManager policy 'none' does not align accelerators "
                                                           "and NICs; use 'restricted' or 'single-numa-node'")]
    return []


def topology_findings(topology: KubeletTopology) -> list[Finding]:
    """What makes a fabric pool's (validated) topology wrong, not merely weak; paths relative to ``topology``."""
    return _policy_findings(topology.policy)


def topology_input_findings(topology: Mapping[str, Any]) -> list[Finding]:
    """:func:`topology_findings` of a topology as a component input carries it (camelCase), its inconsistencies too.

    A setting that holds a value unknown at preview is decided once the value is known: every rule
    reads the whole setting.
    """
    from pydantic import ValidationError

    if unknown_paths(topology):
        return []
    found = _policy_findings(topology.get("policy"))
    try:
        KubeletTopology.model_validate(dict(topology))
    except ValidationError as error:
        for item in error.errors():
            location = ".".join(str(part) for part in item["loc"]) or "topology"
            found.append(Finding.of(FABRIC_POOL_TOPOLOGY, "", f"{location}: {item['msg'].removeprefix('Value error, ')}"))
    return found


def alignment_findings(topology: Mapping[str, Any]) -> list[Finding]:
    """``best-effort`` admits pods whose accelerators and NICs sit on different NUMA nodes (advisory)."""
    if topology.get("policy", "restricted") == "best-effort":
        return [Finding.of(FABRIC_POOL_TOPOLOGY_ALIGNMENT, "policy", (
            "TopologyManager policy 'best-effort' admits pods whose accelerators and NICs sit on different NUMA nodes; "
            "use 'restricted' or 'single-numa-node'"), severity=Severity.WARNING)]
    return []


def delivery_findings(pool: str, *, provisioned: bool, agent: bool) -> list[Finding]:
    """A fabric pool's topology reaches its nodes through the stack's node group user data (``provisioned``) or a
    kubelet topology agent (``agent``); otherwise it is computed and never applied (advisory)."""
    if provisioned or agent:
        return []
    return [Finding.of(FABRIC_POOL_TOPOLOGY_DELIVERED, "topologyAgent", (
        f"pool {pool}: its kubelet topology reaches no node: the stack does not provision its nodes and runs no "
        "kubelet topology agent for it, so its kubelets keep their own TopologyManager policy; set topologyAgent: "
        "true on the pool (docs/kubelet-topology-agent.md)"),
        severity=Severity.WARNING, pool=pool)]
