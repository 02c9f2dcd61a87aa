"""What a validated stack promises about a live cluster (pure).

Everything here is derived from the same sources ``pulumi up`` uses: the validated
:class:`~gpu_fabric.config.fabric.FabricConfig` for pools, and the manifests the stack program
registers (``gpu_fabric.program.render``) for objects. So when a builder starts registering another object,
or a pool gains a setting, ``verify`` expects it without a second list to maintain.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Optional

from gpu_fabric.config.fabric import FabricConfig
from gpu_fabric.config.pool import EFA_PRESENT_LABEL, PoolSpec
from gpu_fabric.kube.topology import kubelet_config_fields
from gpu_fabric.gpustack.transfer_legs import EFA_KEY, RDMA_EXCLUSIVE_KEY, RDMA_PARTITIONED_KEY

# What a kubelet runs when its configuration leaves a topology key out: kubernetes/kubernetes
# pkg/kubelet/apis/config/v1beta1/defaults.go, SetDefaults_KubeletConfiguration (TopologyManagerPolicy
# "none", TopologyManagerScope "container", CPUManagerPolicy "none"); configz shows the defaulted
# configuration, so these only matter for a hand-made or partial answer. The same defaults
# ``KubeletTopology.from_kubelet_config`` assumes.
KUBELET_TOPOLOGY_DEFAULTS: dict[str, Any] = {
    "topologyManagerPolicy": "none",
    "topologyManagerScope": "container",
    "cpuManagerPolicy": "none",
    "topologyManagerPolicyOptions": {},
    "cpuManagerPolicyOptions": {},
    "reservedSystemCPUs": "",
}


@dataclass(frozen=True)
class PoolExpectation:
    """One pool: which nodes are its own, how many, and what each must offer and run."""

    name: str
    fabric: str
    selector: dict[str, str]
    """Labels every node of the pool carries (see :func:`pool_selector`)."""
    min_nodes: int
    allocatable: dict[str, int]
    """Extended resource -> exact allocatable count on each node."""
    kubelet: dict[str, Any]
    """KubeletConfiguration keys (as ``configz`` reports them) -> the value the pool declares."""
    taints: list[dict[str, str]] = field(default_factory=list)
    """Taints every node of the pool carries (``PoolSpec.taint_dicts``: the pool's and its node group's)."""


@dataclass(frozen=True, order=True)
class ObjectRef:
    """A Kubernetes object by API version, kind, namespace (``""`` when cluster-scoped) and name."""

    api_version: str
    kind: str
    namespace: str
    name: str

    @property
    def group_version(self) -> tuple[str, str]:
        """``("", "v1")`` for the core group, ``("apps", "v1")`` otherwise."""
        group, _, version = self.api_version.rpartition("/")
        return group, version

    def label(self) -> str:
        """``LocalQueue team-a/gpustack-fnv64-...`` or ``KVCacheBackend mooncake-dram``."""
        return f"{self.kind} {self.namespace + '/' if self.namespace else ''}{self.name}"

    @classmethod
    def of(cls, manifest: Mapping[str, Any]) -> "ObjectRef":
        """The reference of a manifest (``apiVersion``, ``kind``, ``metadata.namespace/name``)."""
        metadata = manifest.get("metadata") or {}
        return cls(manifest["apiVersion"], manifest["kind"], metadata.get("namespace") or "", metadata.get("name") or "")


@dataclass(frozen=True)
class ObjectExpectation:
    """An object the stack registers; DaemonSets must also have every scheduled pod ready."""

    ref: ObjectRef
    rollout: bool = False
    """Compare ``status.numberReady`` with ``status.desiredNumberScheduled`` (DaemonSets)."""
    placement: dict[str, Any] = field(default_factory=dict)
    """Pod-template fields that decide where a DaemonSet runs (``nodeSelector``, ``affinity``,
    ``tolerations``), as rendered: a live DaemonSet edited away from them no longer serves the pools."""


@dataclass(frozen=True)
class StackExpectations:
    """Everything ``verify`` compares a cluster with."""

    stack: str
    pools: list[PoolExpectation] = field(default_factory=list)
    objects: list[ObjectExpectation] = field(default_factory=list)
    claim_namespaces: list[str] = field(default_factory=list)
    """Namespaces the stack renders ResourceClaimTemplates in: their allocated ResourceClaims are the stack's
    pods' DRA claims, checked for GPU/NIC PCIe-root alignment (:mod:`gpu_fabric.verify.dra`)."""

    def pool(self, name: str) -> Optional[PoolExpectation]:
        """The expectation of the pool named ``name``."""
        return next((pool for pool in self.pools if pool.name == name), None)


def pool_selector(pool: PoolSpec) -> dict[str, str]:
    """Labels that mark a node as one of ``pool``'s.

    The pool's effective labels (``nodeLabels``, its node group's labels and instance type, the
    OS/architecture its InstanceType name carries: ``PoolSpec.effective_node_labels``, the same
    labels device-plugin coverage is checked against), and for every EFA pool
    ``vpc.amazonaws.com/efa.present`` (our node groups set it; eksctl's do too). A Karpenter pool's
    nodes are found by ``karpenter.sh/nodepool: <pool name>`` too, which Karpenter puts on every node of
    the NodePool (GpuFabric names the NodePool after the pool).
    """
    labels = pool.effective_node_labels()
    if pool.fabric == "efa":
        labels[EFA_PRESENT_LABEL] = "true"
    return dict(sorted(labels.items()))


def pool_allocatable(pool: PoolSpec) -> dict[str, int]:
    """The accelerator and fabric-endpoint counts each node of ``pool`` must advertise exactly.

    The keys are the operator's (``gpu_fabric.gpustack.transfer_legs``): ``vpc.amazonaws.com/efa`` for EFA
    pools, ``device.gpustack.ai/rdma`` (exclusive NICs) and, when declared,
    ``device.gpustack.ai/rdma.partitioned`` for RDMA pools; none of the device-plugin keys (0) on a
    ``deviceAllocation: dra`` pool.
    """
    expected: dict[str, int] = {}
    if pool.uses_dra:
        # A deviceAllocation: dra pool's GPUs and EFA devices are published in ResourceSlices and allocated to
        # claims (verify checks the allocations per PCIe root, gpu_fabric.verify.dra), never advertised as extended
        # resources: a node that advertises them runs a device plugin beside the DRA drivers, which hands out the
        # same devices twice (EKS user guide, "Manage EFA devices"). Expected: none (0 or absent).
        accelerator = pool.resolved_accelerator_resource
        return {**({accelerator: 0} if accelerator else {}), EFA_KEY: 0}
    accelerator = pool.resolved_accelerator_resource
    if pool.accelerators_per_node and accelerator:
        expected[accelerator] = pool.accelerators_per_node
    if pool.fabric == "efa":
        expected[EFA_KEY] = pool.interfaces_per_node
    elif pool.fabric == "rdma":
        expected[RDMA_EXCLUSIVE_KEY] = pool.interfaces_per_node
        if pool.partitioned_interfaces_per_node:
            expected[RDMA_PARTITIONED_KEY] = pool.partitioned_interfaces_per_node
    return expected


def pool_kubelet(pool: PoolSpec) -> dict[str, Any]:
    """The kubelet settings the pool declares, keyed as the KubeletConfiguration (and configz) has them.

    The same :func:`gpu_fabric.kube.topology.kubelet_config_fields` that renders the node configuration;
    the three core keys are always compared, options only when the pool sets them.
    """
    return kubelet_config_fields(pool.topology)


def pool_expectation(pool: PoolSpec) -> PoolExpectation:
    """Everything a node of ``pool`` is checked against."""
    return PoolExpectation(
        name=pool.name, fabric=pool.fabric, selector=pool_selector(pool), min_nodes=pool.node_count,
        allocatable=pool_allocatable(pool), kubelet=pool_kubelet(pool), taints=pool.taint_dicts(),
    )


PLACEMENT_FIELDS = ("nodeSelector", "affinity", "tolerations")


def pod_placement(workload: Mapping[str, Any]) -> dict[str, Any]:
    """The :data:`PLACEMENT_FIELDS` a workload's pod template sets (empty values count as unset)."""
    pod_spec = ((workload.get("spec") or {}).get("template") or {}).get("spec") or {}
    return {key: pod_spec[key] for key in PLACEMENT_FIELDS if pod_spec.get(key)}


def object_expectations(manifests: Iterable[Mapping[str, Any]]) -> list[ObjectExpectation]:
    """One expectation per registered manifest (duplicates collapse), sorted by reference."""
    expectations = {}
    for manifest in manifests:
        ref = ObjectRef.of(manifest)
        daemonset = ref.kind == "DaemonSet" and ref.group_version == ("apps", "v1")
        expectations[ref] = ObjectExpectation(ref, rollout=daemonset, placement=pod_placement(manifest) if daemonset else {})
    return [expectations[ref] for ref in sorted(expectations)]


def claim_namespaces(manifests: Iterable[Mapping[str, Any]]) -> list[str]:
    """The namespaces of the ``resource.k8s.io`` ResourceClaimTemplates among ``manifests``, sorted."""
    return sorted({(manifest.get("metadata") or {}).get("namespace") or "default" for manifest in manifests
                   if manifest.get("kind") == "ResourceClaimTemplate"
                   and str(manifest.get("apiVersion", "")).rpartition("/")[0] == "resource.k8s.io"})


def stack_expectations(stack: str, config: FabricConfig, manifests: Iterable[Mapping[str, Any]]) -> StackExpectations:
    """The expectations of a validated stack and the Kubernetes manifests its program registers."""
    manifests = list(manifests)
    return StackExpectations(stack, [pool_expectation(pool) for pool in config.pools], object_expectations(manifests),
                             claim_namespaces(manifests))
