"""Fabric workloads enter Kueue through a LocalQueue of the stack, and their ClusterQueue meters the fabric.

* ``kueue-fabric-workload-queue`` (mandatory): a Pod or workload whose containers request a fabric key
  (``vpc.amazonaws.com/efa``, ``device.gpustack.ai/rdma*``) carries ``kueue.x-k8s.io/queue-name`` naming a
  LocalQueue the stack declares in its namespace. Without it Kueue never sees the workload and nothing
  meters the fabric (Kueue docs, "Run A Kubernetes Job": the queue-name label).
* ``kueue-fabric-keys-covered`` (advisory): a ClusterQueue that admits fabric workloads lists their keys in
  ``coveredResources``; a resource it does not cover is not limited (Kueue docs, "Cluster Queue").
"""

from __future__ import annotations

from typing import AbstractSet, Collection, Optional

from gpu_fabric.config import constants
from gpu_fabric.findings import Enforcement, Finding, ObjectRef, Rule, Severity

QUEUE_NAME_LABEL = constants.QUEUE_NAME_LABEL

KUEUE_FABRIC_WORKLOAD_QUEUE = Rule(
    "kueue-fabric-workload-queue", "a workload requesting fabric devices names a LocalQueue of the stack in its namespace",
    "https://kueue.sigs.k8s.io/docs/tasks/run/jobs/", policy="kueue-fabric-workload-queue")
KUEUE_FABRIC_KEYS_COVERED = Rule(
    "kueue-fabric-keys-covered", "a ClusterQueue that admits fabric workloads covers their fabric keys",
    "https://kueue.sigs.k8s.io/docs/concepts/cluster_queue/", policy="kueue-fabric-keys-covered",
    enforcement=Enforcement.ADVISORY)

RULES = (KUEUE_FABRIC_WORKLOAD_QUEUE, KUEUE_FABRIC_KEYS_COVERED)


def queue_label_findings(workload: ObjectRef, keys: AbstractSet[str], queue: Optional[str],
                         declared: Collection[str]) -> list[Finding]:
    """A fabric workload (requesting ``keys``) whose queue-name label is missing or names no LocalQueue among
    ``declared`` (the stack's LocalQueues in the workload's namespace)."""
    if not queue:
        return [Finding.of(KUEUE_FABRIC_WORKLOAD_QUEUE, f"metadata.labels[{QUEUE_NAME_LABEL}]",
                           f"{workload} requests {', '.join(sorted(keys))} but has no {QUEUE_NAME_LABEL} label",
                           subject=workload)]
    if queue not in declared:
        return [Finding.of(KUEUE_FABRIC_WORKLOAD_QUEUE, f"metadata.labels[{QUEUE_NAME_LABEL}]", (
            f"{workload}: {QUEUE_NAME_LABEL} {queue!r} names no LocalQueue of the stack in namespace "
            f"{workload.namespace} (declared: {', '.join(sorted(declared)) or 'none'})"), subject=workload)]
    return []


def covered_keys_findings(cluster_queue: str, wanted: AbstractSet[str], covered: AbstractSet[str]) -> list[Finding]:
    """A ClusterQueue admitting workloads that request ``wanted`` fabric keys but covering only ``covered``."""
    missing = sorted(wanted - covered)
    if not missing:
        return []
    return [Finding.of(KUEUE_FABRIC_KEYS_COVERED, "spec.resourceGroups", (
        f"ClusterQueue {cluster_queue} admits fabric workloads but does not cover {', '.join(missing)}; "
        "Kueue will admit more fabric endpoints than the nodes have"), severity=Severity.WARNING,
        subject=ObjectRef("ClusterQueue", cluster_queue))]
