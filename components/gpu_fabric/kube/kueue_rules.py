"""Fabric workloads enter Kueue through a LocalQueue of the stack, and their ClusterQueue meters the fabric.

* ``kueue-fabric-workload-queue`` (mandatory): a Pod or workload whose containers request a fabric key
  (``vpc.amazonaws.com/efa``, ``device.gpustack.ai/rdma*``) or whose ResourceClaimTemplates claim a fabric NIC
  (``efa.networking.k8s.aws``) carries ``kueue.x-k8s.io/queue-name`` naming a
  LocalQueue the stack declares in its namespace. Without it Kueue never sees the workload and nothing
  meters the fabric (Kueue docs, "Run A Kubernetes Job": the queue-name label). :func:`workload_queue_findings`
  judges one workload manifest; the policy pack (over the engine's resources) and ``gpu-fabric lint --stack``
  (over files, against the stack's LocalQueues) both call it.
* ``kueue-fabric-keys-covered`` (advisory): a ClusterQueue that admits fabric workloads lists their keys in
  ``coveredResources``; a resource it does not cover is not limited (Kueue docs, "Cluster Queue").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import AbstractSet, Any, Iterable, Mapping, Optional, Sequence

from gpu_fabric.config import constants
from gpu_fabric.config.shapes import as_mapping, known_str
from gpu_fabric.findings import Enforcement, Finding, ObjectRef, Rule, Severity
from gpu_fabric.gpustack.naming import LOCAL_QUEUE_PREFIX
from gpu_fabric.gpustack.transfer_legs import FABRIC_KEYS
from gpu_fabric.kube.dra_claims import CLAIM_TEMPLATE_KIND, ClaimSpec, DeviceKinds
from gpu_fabric.kube.pod_templates import POD_TEMPLATE_PATHS, pod_spec_of, requested_resource_names
from gpu_fabric.kube.workload_demand import ClaimKey, pod_claim_specs

QUEUE_NAME_LABEL = constants.QUEUE_NAME_LABEL
KUEUE_GROUP = "kueue.x-k8s.io"
QUEUED_KINDS = ("Pod", "Deployment", "StatefulSet", "ReplicaSet", "Job", "CronJob", "LeaderWorkerSet")
"""Workloads Kueue admits through a LocalQueue; DaemonSets (device plugins, Mooncake members) are node agents."""
ALL_FABRIC_KEYS = frozenset(key for keys in FABRIC_KEYS.values() for key in keys)
DEFAULT_NAMESPACE = "default"

KUEUE_FABRIC_WORKLOAD_QUEUE = Rule(
    "kueue-fabric-workload-queue", "a workload requesting fabric devices names a LocalQueue of the stack in its namespace",
    "https://kueue.sigs.k8s.io/docs/tasks/run/jobs/", policy="kueue-fabric-workload-queue")
KUEUE_FABRIC_KEYS_COVERED = Rule(
    "kueue-fabric-keys-covered", "a ClusterQueue that admits fabric workloads covers their fabric keys",
    "https://kueue.sigs.k8s.io/docs/concepts/cluster_queue/", policy="kueue-fabric-keys-covered",
    enforcement=Enforcement.ADVISORY)

RULES = (KUEUE_FABRIC_WORKLOAD_QUEUE, KUEUE_FABRIC_KEYS_COVERED)


@dataclass(frozen=True)
class DeclaredQueue:
    """A LocalQueue the stack declares: its namespace, name and the ClusterQueue (the pool) it feeds."""

    namespace: str
    name: str
    cluster_queue: str = ""

    def describe(self) -> str:
        """``gpustack-fnv64-... (pool P)``."""
        return f"{self.name} (pool {self.cluster_queue})" if self.cluster_queue else self.name


def declared_local_queues(manifests: Iterable[Mapping[str, Any]]) -> list[DeclaredQueue]:
    """Every ``kueue.x-k8s.io`` LocalQueue among ``manifests`` (owned, or adopted with a patch), sorted."""
    found = set()
    for manifest in manifests:
        api_version = known_str(manifest.get("apiVersion")) or ""
        if manifest.get("kind") != "LocalQueue" or api_version.split("/", 1)[0] != KUEUE_GROUP:
            continue
        metadata = as_mapping(manifest.get("metadata"))
        name = known_str(metadata.get("name"))
        if name:
            found.add(DeclaredQueue(known_str(metadata.get("namespace")) or DEFAULT_NAMESPACE, name,
                                    known_str(as_mapping(manifest.get("spec")).get("clusterQueue")) or ""))
    return sorted(found, key=lambda q: (q.namespace, q.cluster_queue, q.name))


def fabric_keys_of(manifest: Mapping[str, Any], claims: Optional[Mapping[ClaimKey, ClaimSpec]] = None) -> set[str]:
    """Fabric keys a queued workload's containers request, and the DeviceClasses of its claims that ask for a fabric
    NIC (empty for other kinds).

    ``claims``: the ResourceClaimTemplates known by ``(namespace, kind, name)``. A template claiming a NIC class
    (``efa.networking.k8s.aws``) counts with its GPU classes: on a ``dra`` pool those are what the stack's ClusterQueue
    meters (docs/dra.md), and a workload without the queue-name label bypasses it. A claim named directly
    (``resourceClaimName``) is not metered by Kueue at all (docs/dra.md), so the label would not change that.
    """
    if manifest.get("kind") not in QUEUED_KINDS:
        return set()
    pod_spec = pod_spec_of(manifest)
    if not pod_spec:
        return set()
    keys = requested_resource_names(pod_spec) & ALL_FABRIC_KEYS
    namespace = known_str(as_mapping(manifest.get("metadata")).get("namespace")) or DEFAULT_NAMESPACE
    kinds = DeviceKinds()
    for _, _, names, spec in pod_claim_specs(pod_spec, namespace, claims or {}):
        if names.startswith(CLAIM_TEMPLATE_KIND) and spec.device_classes & kinds.nics:
            keys |= spec.device_classes & (kinds.nics | kinds.gpus)
    return keys


def queue_label_of(manifest: Mapping[str, Any]) -> tuple[Optional[str], str]:
    """The queue-name label on the object, else on its (main) pod template, and the path it was read at.

    Kueue reads the label on the object it admits (a Job, a Pod, a Deployment's pods); the stack's own
    workloads may carry it on either, so both count. Without one, the path is the object's label.
    """
    own = f"metadata.labels[{QUEUE_NAME_LABEL}]"
    name = known_str(as_mapping(as_mapping(manifest.get("metadata")).get("labels")).get(QUEUE_NAME_LABEL))
    if name:
        return name, own
    kind = str(manifest.get("kind"))
    if kind == "Pod":
        return None, own
    node, path = as_mapping(manifest.get("spec")), "spec"
    for key in POD_TEMPLATE_PATHS.get(kind, (("template",),))[-1]:
        node, path = as_mapping(node.get(key)), f"{path}.{key}"
    name = known_str(as_mapping(as_mapping(node.get("metadata")).get("labels")).get(QUEUE_NAME_LABEL))
    return (name, f"{path}.metadata.labels[{QUEUE_NAME_LABEL}]") if name else (None, own)


def workload_queue_findings(manifest: Mapping[str, Any], declared: Sequence[DeclaredQueue],
                            name: Optional[str] = None,
                            claims: Optional[Mapping[ClaimKey, ClaimSpec]] = None) -> list[Finding]:
    """A queued workload requesting fabric keys, or claiming fabric devices through a template of ``claims``
    (:func:`fabric_keys_of`), whose queue-name label is missing or names no LocalQueue of ``declared`` in its
    namespace (``[]`` for any other object). ``name`` stands in for a name the manifest does not state (a policy's
    resource name)."""
    keys = fabric_keys_of(manifest, claims)
    if not keys:
        return []
    metadata = as_mapping(manifest.get("metadata"))
    namespace = known_str(metadata.get("namespace")) or DEFAULT_NAMESPACE
    subject = ObjectRef(str(manifest.get("kind")), known_str(metadata.get("name")) or name or "<unnamed>", namespace)
    queue, path = queue_label_of(manifest)
    return queue_label_findings(subject, keys, queue, declared, path=path)


def _placeholder(queue: str) -> bool:
    """A copied documentation placeholder (``gpustack-fnv64-<hash>``): never a label value Kubernetes accepts."""
    return "<" in queue or ">" in queue


def queue_label_findings(workload: ObjectRef, keys: AbstractSet[str], queue: Optional[str],
                         declared: Sequence[DeclaredQueue] | Iterable[str], *,
                         path: str = f"metadata.labels[{QUEUE_NAME_LABEL}]") -> list[Finding]:
    """A fabric workload (requesting ``keys``) whose queue-name label is missing or names no LocalQueue among
    ``declared`` in the workload's namespace (plain names count as declared there). The message names the
    LocalQueues to write instead, per pool."""
    namespace = workload.namespace or DEFAULT_NAMESPACE
    queues = [q if isinstance(q, DeclaredQueue) else DeclaredQueue(namespace, str(q)) for q in declared]
    here = [q for q in queues if q.namespace == namespace]
    if queue and any(q.name == queue for q in here):
        return []
    write = (f"; write {QUEUE_NAME_LABEL}: " + " or ".join(q.describe() for q in here)) if here else (
        f"; the stack declares no LocalQueue in namespace {namespace}" +
        (f" (LocalQueues in: {', '.join(sorted({q.namespace for q in queues}))}; add {namespace} to the stack's "
         "namespaces or run the workload there)" if queues else ""))
    if not queue:
        return [Finding.of(KUEUE_FABRIC_WORKLOAD_QUEUE, path,
                           f"requests {', '.join(sorted(keys))} but has no {QUEUE_NAME_LABEL} label{write}",
                           subject=workload)]
    if _placeholder(queue):
        why = (f"is the documentation's placeholder, not a LocalQueue name: the hash after {LOCAL_QUEUE_PREFIX} is the "
               "FNV-1a 64 of the pool's ClusterQueue name")
    else:
        elsewhere = sorted(q.namespace for q in queues if q.name == queue and q.namespace != namespace)
        why = (f"names no LocalQueue of the stack in namespace {namespace}" +
               (f" (it is declared in {', '.join(elsewhere)}; a LocalQueue admits workloads of its own namespace only)"
                if elsewhere else ""))
    return [Finding.of(KUEUE_FABRIC_WORKLOAD_QUEUE, path, f"{QUEUE_NAME_LABEL} {queue!r} {why}{write}",
                       subject=workload)]


def covered_keys_findings(cluster_queue: str, wanted: AbstractSet[str], covered: AbstractSet[str]) -> list[Finding]:
    """A ClusterQueue admitting workloads that request ``wanted`` fabric keys but covering only ``covered``."""
    missing = sorted(wanted - covered)
    if not missing:
        return []
    return [Finding.of(KUEUE_FABRIC_KEYS_COVERED, "spec.resourceGroups", (
        f"admits fabric workloads but does not cover {', '.join(missing)}; "
        "Kueue will admit more fabric endpoints than the nodes have"), severity=Severity.WARNING,
        subject=ObjectRef("ClusterQueue", cluster_queue))]
