"""Kueue ``v1beta2`` ResourceFlavor, ClusterQueue and LocalQueue manifests for the pools.

Two owners are possible (``queueOwner``):

* ``gpustack``: the GPUStack operator reconciles one ClusterQueue per InstanceType and its
  entrance LocalQueue in every non-system namespace. The stack declares only the tenant
  LocalQueues, with exactly the operator's name and spec, so workloads can name them before the
  operator runs and the two writers agree field for field.
* ``standalone``: the stack owns flavors, ClusterQueues and LocalQueues (plain Kueue pools).
  Only here can Kueue meter the fabric: the operator's queues advertise accelerator credits
  only, and its classifier ignores the ``device.gpustack.ai/`` keys, so RDMA endpoints are
  over-admitted (gpustack/gpustack-operator ``docs/modules/rdma/operations.md``, "Kueue does not meter
  the RDMA keys").
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from gpu_fabric.kube.claim_templates import DRA_DEVICE_CLASSES, EFA_DEVICE_CLASS, GPU_DEVICE_CLASS
from gpu_fabric.kube.device_plugins import tolerations_for_taints
from gpu_fabric.kube.kueue_rules import QUEUE_NAME_LABEL, declared_local_queues
from gpu_fabric.gpustack.naming import local_queue_name
from gpu_fabric.config.quantity import parse_quantity
from gpu_fabric.config.fabric import FabricConfig
from gpu_fabric.config.pool import PoolSpec
from gpu_fabric.gpustack.transfer_legs import EFA_KEY, RDMA_EXCLUSIVE_KEY, RDMA_PARTITIONED_KEY, RDMA_SHARED_KEY

KUEUE_API_VERSION = "kueue.x-k8s.io/v1beta2"
QUEUE_ANNOTATION = "schedule.gpustack.ai/queue"
"""The operator records the full ClusterQueue name on each entrance LocalQueue."""
RDMA_SHARED_TOKENS_PER_ENDPOINT = 64
"""Device Manager advertises 64 shared tokens per RDMA endpoint."""
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


def pool_quotas(pool: PoolSpec) -> list[tuple[str, Any]]:
    """Covered resources of a pool's ClusterQueue and their nominal quotas, in a fixed order.

    The accelerator and every fabric key a workload of the pool may request are covered, each
    sized from the pool (per-node capacity x node count), so Kueue cannot admit more endpoints
    than the nodes have. For a Karpenter pool the node count is the very number its NodePool holds
    (``limits.nodes``, and ``replicas`` when static: ``gpu_fabric.aws.karpenter.node_pool``), so the
    queue never admits more than Karpenter may launch.
    """
    nodes = pool.node_count
    quotas: list[tuple[str, Any]] = []
    if pool.uses_dra:
        # Claimed devices are metered under the logical names the Kueue Configuration maps their DeviceClasses to
        # (kube.kueue.device_class_mappings); the device-plugin keys are requested by nothing on this pool.
        quotas.append((GPU_DEVICE_CLASS, pool.accelerators_per_node * nodes))
        quotas.append((EFA_DEVICE_CLASS, pool.interfaces_per_node * nodes))
    elif pool.accelerators_per_node and pool.resolved_accelerator_resource:
        quotas.append((pool.resolved_accelerator_resource, pool.accelerators_per_node * nodes))
    if pool.uses_dra:
        pass
    elif pool.fabric == "efa":
        quotas.append((EFA_KEY, pool.interfaces_per_node * nodes))
    elif pool.fabric == "rdma":
        quotas.append((RDMA_EXCLUSIVE_KEY, pool.interfaces_per_node * nodes))
        quotas.append((RDMA_SHARED_KEY, pool.interfaces_per_node * RDMA_SHARED_TOKENS_PER_ENDPOINT * nodes))
        quotas.append((RDMA_PARTITIONED_KEY, pool.partitioned_interfaces_per_node * nodes))
    if pool.cpu_per_node:
        quotas.append(("cpu", pool.cpu_per_node * nodes))
    if pool.memory_per_node:
        quotas.append(("memory", _scaled_memory(pool.memory_per_node, nodes)))
    return quotas


def _scaled_memory(per_node: str, nodes: int) -> str:
    total = parse_quantity(per_node) * nodes
    for suffix, size in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
        if total % size == 0:
            return f"{int(total // size)}{suffix}"
    return str(int(total))


def tolerations_for(pool: PoolSpec) -> list[dict[str, Any]]:
    """Tolerations matching every taint of the pool's nodes, in a stable order."""
    return tolerations_for_taints(pool.taint_dicts())


def resource_flavor(pool: PoolSpec) -> dict[str, Any]:
    """The pool's ResourceFlavor: its nodes' labels, and tolerations for their taints."""
    spec: dict[str, Any] = {"nodeLabels": dict(sorted(pool.node_labels.items()))}
    tolerations = tolerations_for(pool)
    if tolerations:
        spec["tolerations"] = tolerations
    return {"apiVersion": KUEUE_API_VERSION, "kind": "ResourceFlavor", "metadata": {"name": pool.name}, "spec": spec}


def namespace_selector(namespaces: Iterable[str]) -> dict[str, Any]:
    """Select exactly the tenant namespaces (never null: a null selector admits nothing)."""
    return {"matchExpressions": [{"key": NAMESPACE_NAME_LABEL, "operator": "In", "values": sorted(set(namespaces))}]}


def cluster_queue(pool: PoolSpec, namespaces: Iterable[str]) -> dict[str, Any]:
    """The pool's ClusterQueue, metering the accelerator and the fabric keys."""
    quotas = pool_quotas(pool)
    if not quotas:
        raise ValueError(f"pool {pool.name} has nothing a ClusterQueue could meter: set acceleratorsPerNode, a fabric, or cpuPerNode")
    return {
        "apiVersion": KUEUE_API_VERSION,
        "kind": "ClusterQueue",
        "metadata": {"name": pool.name},
        "spec": {
            "namespaceSelector": namespace_selector(namespaces),
            "queueingStrategy": "BestEffortFIFO",
            "resourceGroups": [{
                "coveredResources": [name for name, _ in quotas],
                "flavors": [{
                    "name": pool.name,
                    # Written as the string Kueue stores: nominalQuota is a resource.Quantity
                    # (kubernetes-sigs/kueue apis/kueue/v1beta2/clusterqueue_types.go), which the
                    # ClusterQueue webhook writes back in canonical string form, so a number here
                    # would show as a change ("8" => 8) at the next preview.
                    "resources": [{"name": name, "nominalQuota": str(quota)} for name, quota in quotas],
                }],
            }],
        },
    }


def local_queue(cluster_queue_name: str, namespace: str) -> dict[str, Any]:
    """A tenant LocalQueue, named and annotated exactly as the operator names its entrance queue."""
    return {
        "apiVersion": KUEUE_API_VERSION,
        "kind": "LocalQueue",
        "metadata": {
            "name": local_queue_name(cluster_queue_name),
            "namespace": namespace,
            "annotations": {QUEUE_ANNOTATION: cluster_queue_name},
        },
        "spec": {"clusterQueue": cluster_queue_name},
    }


def pool_kueue_manifests(pool: PoolSpec, namespaces: Iterable[str], owner: str) -> list[dict[str, Any]]:
    """One pool's Kueue objects: all three kinds when standalone, LocalQueues only under GPUStack."""
    namespaces = sorted(set(namespaces))
    queues = [local_queue(pool.name, namespace) for namespace in namespaces]
    if owner == "gpustack":
        return queues
    return [resource_flavor(pool), cluster_queue(pool, namespaces), *queues]


def device_class_mappings(config: FabricConfig) -> list[dict[str, Any]]:
    """Kueue Configuration ``resources.deviceClassMappings`` for the DeviceClasses the stack's claims use.

    Kueue meters a ResourceClaimTemplate's requests only under a mapped logical name, and refuses a workload whose
    DeviceClass is not mapped ("DeviceClass %s is not mapped in DRA configuration", kubernetes-sigs/kueue
    ``pkg/dra/claims.go``; docs ``tasks/manage/setup_dra``). Each class maps to a logical name equal to its own,
    the name the standalone ClusterQueues cover. Empty unless the stack owns the ClusterQueues and has a ``dra``
    pool. The Configuration is Kueue's controller-manager file, not an API object: the stack exports this list
    (``kueueDeviceClassMappings``) for the Kueue installation to carry (docs/dra.md).
    """
    if config.queue_owner != "standalone" or not any(pool.uses_dra for pool in config.pools):
        return []
    return [{"name": device_class, "deviceClassNames": [device_class]} for device_class in DRA_DEVICE_CLASSES]


def kueue_manifests(config: FabricConfig) -> list[dict[str, Any]]:
    """Every Kueue object of a configuration."""
    return [m for pool in config.pools for m in pool_kueue_manifests(pool, config.namespaces, config.queue_owner)]


def local_queue_table(manifests: Iterable[Mapping[str, Any]]) -> list[str]:
    """The LocalQueues among ``manifests`` as a table a user copies the queue-name label from: one row per
    namespace and pool (its ClusterQueue), sorted; ``[]`` when there are none.

    Under GPUStack the names are hashes (:func:`gpu_fabric.gpustack.naming.local_queue_name`), which nobody can
    guess: this is where ``render`` and ``efa-info --stack`` show them.
    """
    queues = declared_local_queues(manifests)
    if not queues:
        return []
    rows = [("namespace", "pool", "local-queue"), *((q.namespace, q.cluster_queue or "-", q.name) for q in queues)]
    widths = [max(len(row[column]) for row in rows) for column in range(2)]
    lines = [f"local queues (label pods with {QUEUE_NAME_LABEL}: <local-queue>):"]
    lines.extend(f"  {row[0]:<{widths[0]}}  {row[1]:<{widths[1]}}  {row[2]}" for row in rows)
    return lines
