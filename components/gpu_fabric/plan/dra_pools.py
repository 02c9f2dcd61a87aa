"""``deviceAllocation: dra`` pools: what the cluster must support, the claims planned for them (pure).

Rules, each one function the ``dra-pools`` policy, ``load_config`` (so ``render``, ``check`` and
``lint --stack``) call on the same :class:`DraPool` view:

* ``dra-kubernetes-version``: the cluster (and the node group's nodes) run Kubernetes 1.34 or later, where
  ``resource.k8s.io/v1`` is served (KEP-4381 ``kep.yaml``: ``stable: "v1.34"``); stated, since a ``dra`` pool's
  objects mean nothing to an older API server.
* ``dra-pool-provisioner``: whoever launches the nodes supports pods with claims. Karpenter before 1.15 never
  provisions for them ("pod has Dynamic Resource Allocation requirements that are not yet supported by Karpenter",
  kubernetes-sigs/karpenter ``pkg/controllers/provisioning/scheduling/scheduler.go``; DRA is alpha in 1.15 behind
  ``settings.enableDRA``: https://karpenter.sh/docs/tasks/dra/). EKS Auto Mode runs NVIDIA's and the EFA DRA
  drivers only on Kubernetes 1.36 or later (EKS user guide, "Manage hardware devices").
* ``dra-pool-topology``: the instance type's PCIe layout is known (:mod:`gpu_fabric.aws.pcie_topology`), the pool's
  counts are that layout's, each claim fits the 32 devices a claim can hold, and each claim size tiles the node's
  PCIe roots (whole roots, a divisor of the node's GPUs: :func:`tiling_claim_sizes`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Optional

from gpu_fabric.aws.pcie_topology import PcieTopology, shared_topology
from gpu_fabric.config.cluster import DRA_KUBERNETES_VERSION, kubernetes_minor
from gpu_fabric.config.constants import EFA_RESOURCE, INSTANCE_TYPE_LABEL, NVIDIA_GPU_RESOURCE
from gpu_fabric.config.fabric import FabricConfig
from gpu_fabric.config.node_group import karpenter_version
from gpu_fabric.config.shapes import as_list, as_mapping, known_str
from gpu_fabric.findings import Finding, ObjectRef, Rule
from gpu_fabric.gpustack.transfer_legs import MemberGrant
from gpu_fabric.kube.claim_templates import (
    ALLOCATION_RESULTS_MAX,
    EFA_DEVICE_CLASS,
    GPU_DEVICE_CLASS,
    REQUESTS_MAX,
    claim_devices,
    claim_templates,
    root_groups,
)
from gpu_fabric.kube.dra_exclusive import DRA_POLICY, plugin_key_findings
from gpu_fabric.kube.dra_rules import DraContext
from gpu_fabric.kube.pool_view import PoolView

KARPENTER_DRA_VERSION = (1, 15)
"""The first Karpenter release that provisions nodes for pods with ResourceClaims (alpha, ``settings.enableDRA``)."""
AUTO_MODE_DRA_VERSION = (1, 36)
"""EKS Auto Mode ships NVIDIA's DRA driver and DRANET from Kubernetes 1.36."""

DRA_KUBERNETES_VERSION_RULE = Rule(
    "dra-kubernetes-version", "a deviceAllocation: dra pool runs on Kubernetes 1.34 or later (resource.k8s.io/v1), stated",
    "https://github.com/kubernetes/enhancements/blob/master/keps/sig-node/4381-dra-structured-parameters/kep.yaml",
    policy=DRA_POLICY)
DRA_POOL_PROVISIONER = Rule(
    "dra-pool-provisioner", "a deviceAllocation: dra pool is launched by a provisioner that schedules pods with claims "
    "(Karpenter 1.15 or later, EKS Auto Mode on 1.36 or later, managed node groups)",
    "https://karpenter.sh/docs/tasks/dra/", policy=DRA_POLICY)
DRA_POOL_TOPOLOGY = Rule(
    "dra-pool-topology", "a deviceAllocation: dra pool's instance type has a known PCIe layout its counts and claims fit",
    "components/gpu_fabric/aws/pcie_topology.py", policy=DRA_POLICY)

DRA_POOL_QUEUE_OWNER = Rule(
    "dra-pool-queue-owner", "a deviceAllocation: dra pool's queues are the stack's own (queueOwner: standalone), which "
    "meter claimed devices by DeviceClass",
    "docs/dra.md (When to choose DRA); gpustack/gpustack-operator docs/modules/devices/scheduling.md (InstanceType naming)",
    policy=DRA_POLICY)

RULES = (DRA_KUBERNETES_VERSION_RULE, DRA_POOL_PROVISIONER, DRA_POOL_TOPOLOGY, DRA_POOL_QUEUE_OWNER)


@dataclass(frozen=True)
class DraPool:
    """A ``dra`` pool as its rules read it, from the configuration or a ``KueuePool``'s ``pool`` input alike."""

    name: str
    instance_types: tuple[str, ...]
    provisioner: str
    """``managedNodeGroup``, ``karpenter``, or ``external`` (no ``aws``: nodes the stack does not launch)."""
    karpenter_version: Optional[str]
    node_kubernetes_version: Optional[str]
    accelerators_per_node: Optional[int]
    interfaces_per_node: Optional[int]
    gpu_counts: tuple[int, ...]

    @classmethod
    def of_input(cls, pool: Mapping[str, Any]) -> Optional["DraPool"]:
        """A pool as the configuration dumps it (camelCase): ``None`` unless it is a ``dra`` pool with a known name."""
        name = known_str(pool.get("name"))
        if not name or known_str(pool.get("deviceAllocation")) != "dra":
            return None
        aws = as_mapping(pool.get("aws"))
        if aws:
            types = tuple(str(t) for t in as_list(aws.get("instanceTypes")) if known_str(t))
            provisioner = known_str(aws.get("provisioner")) or "managedNodeGroup"
        else:
            pinned = known_str(as_mapping(pool.get("nodeLabels")).get(INSTANCE_TYPE_LABEL))
            types, provisioner = ((pinned,) if pinned else ()), "external"
        accelerators = _count(pool.get("acceleratorsPerNode"))
        counts = tuple(c for c in (_count(v) for v in as_list(pool.get("gpusPerClaim"))) if c) or (
            (accelerators,) if accelerators else ())
        return cls(name, types, provisioner, known_str(as_mapping(aws.get("karpenter")).get("version")),
                   known_str(aws.get("kubernetesVersion")), accelerators, _count(pool.get("interfacesPerNode")),
                   tuple(sorted(set(counts))))

    def topology(self) -> Optional[PcieTopology]:
        """The PCIe layout all of the pool's instance types share, if known."""
        return shared_topology(self.instance_types)[0] if self.instance_types else None


def _count(value: Any) -> Optional[int]:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or int(value) != value:
        return None
    return int(value)


def kubernetes_version_findings(pool: DraPool, cluster_version: Optional[str]) -> list[Finding]:
    """The cluster's version is stated and at least 1.34; so is the node group's, when it pins one (paths in the pool)."""
    floor = ".".join(map(str, DRA_KUBERNETES_VERSION))
    findings = []
    if cluster_version is None:
        findings.append(Finding.of(DRA_KUBERNETES_VERSION_RULE, "deviceAllocation", (
            f"pool {pool.name} allocates devices through DRA, which needs Kubernetes {floor} or later: state the cluster's "
            "version in cluster.kubernetesVersion"), pool=pool.name))
    elif kubernetes_minor(cluster_version) < DRA_KUBERNETES_VERSION:
        findings.append(Finding.of(DRA_KUBERNETES_VERSION_RULE, "deviceAllocation", (
            f"the cluster runs Kubernetes {cluster_version} (cluster.kubernetesVersion), which does not serve "
            f"resource.k8s.io/v1: DRA is GA from {floor} (KEP-4381); use deviceAllocation: plugin or upgrade"), pool=pool.name))
    if pool.node_kubernetes_version is not None and kubernetes_minor(pool.node_kubernetes_version) < DRA_KUBERNETES_VERSION:
        findings.append(Finding.of(DRA_KUBERNETES_VERSION_RULE, "aws.kubernetesVersion", (
            f"the nodes of dra pool {pool.name} run Kubernetes {pool.node_kubernetes_version}; their kubelets need {floor} "
            "or later to prepare DRA claims"), pool=pool.name))
    return findings


def provisioner_findings(pool: DraPool, cluster_version: Optional[str], eks_auto_mode: bool) -> list[Finding]:
    """Karpenter without DRA support, or EKS Auto Mode below 1.36, launching a ``dra`` pool (paths in the pool)."""
    lowest = ".".join(map(str, KARPENTER_DRA_VERSION))
    if pool.provisioner == "karpenter":
        if pool.karpenter_version is None:
            return [Finding.of(DRA_POOL_PROVISIONER, "aws.karpenter.version", (
                f"Karpenter launches dra pool {pool.name} but its version is not stated: Karpenter provisions nodes for pods "
                f"with ResourceClaims only from {lowest} (alpha, settings.enableDRA: true; https://karpenter.sh/docs/tasks/dra/)"),
                pool=pool.name)]
        if karpenter_version(pool.karpenter_version)[:2] < KARPENTER_DRA_VERSION:
            return [Finding.of(DRA_POOL_PROVISIONER, "aws.karpenter.version", (
                f"Karpenter {pool.karpenter_version} never provisions a node for a pod with ResourceClaims (\"pod has Dynamic "
                "Resource Allocation requirements that are not yet supported by Karpenter\", kubernetes-sigs/karpenter "
                f"scheduler.go): dra pool {pool.name} needs Karpenter {lowest} or later with settings.enableDRA: true"),
                pool=pool.name)]
    auto_floor = ".".join(map(str, AUTO_MODE_DRA_VERSION))
    if pool.provisioner == "external" and eks_auto_mode and (
            cluster_version is None or kubernetes_minor(cluster_version) < AUTO_MODE_DRA_VERSION):
        return [Finding.of(DRA_POOL_PROVISIONER, "deviceAllocation", (
            f"EKS Auto Mode launches pool {pool.name} (no aws block, cluster.eksAutoMode), and Auto Mode runs the NVIDIA "
            f"and EFA DRA drivers only from Kubernetes {auto_floor} (EKS user guide, 'Manage hardware devices'); the cluster "
            f"runs {cluster_version or 'an unstated version'}"), pool=pool.name)]
    return []


def topology_findings(pool: DraPool) -> list[Finding]:
    """A known PCIe layout shared by the pool's instance types; the pool's counts and claims fit it (paths in the pool)."""
    if not pool.instance_types:
        return [Finding.of(DRA_POOL_TOPOLOGY, "deviceAllocation", (
            f"dra pool {pool.name} names no instance type (aws.instanceTypes, or nodeLabels {INSTANCE_TYPE_LABEL} for nodes "
            "the stack does not launch): its claims pair GPUs and EFA devices by the type's PCIe layout"), pool=pool.name)]
    layout, unknown = shared_topology(pool.instance_types)
    if layout is None:
        why = (f"the PCIe layout of {', '.join(unknown)} is not known to gpu-fabric (known: p4d, p4de, p5, p5e, p5en)"
               if unknown else f"{', '.join(pool.instance_types)} have different PCIe layouts, and a pool gets one set of claims")
        return [Finding.of(DRA_POOL_TOPOLOGY, "aws.instanceTypes" if pool.provisioner != "external" else "nodeLabels", (
            f"{why}; a claim planned on a guessed layout never schedules or pairs devices across PCIe roots: use "
            "deviceAllocation: plugin for it"), pool=pool.name)]
    findings = []
    if pool.accelerators_per_node is not None and pool.accelerators_per_node != layout.gpus:
        findings.append(Finding.of(DRA_POOL_TOPOLOGY, "acceleratorsPerNode", (
            f"{pool.instance_types[0]} has {layout.gpus} GPUs ({layout.describe()}), not {pool.accelerators_per_node}"),
            pool=pool.name))
    if pool.interfaces_per_node is not None and pool.interfaces_per_node != layout.efa_interfaces:
        findings.append(Finding.of(DRA_POOL_TOPOLOGY, "interfacesPerNode", (
            f"a dra pool pairs every PCIe root's EFA devices with its GPUs: {pool.instance_types[0]} has "
            f"{layout.efa_interfaces} ({layout.describe()}), not {pool.interfaces_per_node}"), pool=pool.name))
    tiling = tiling_claim_sizes(layout)
    sizes = ", ".join(map(str, tiling))
    for gpus in pool.gpu_counts:
        if gpus > layout.gpus:
            continue  # the pool's own field rule refuses a count above acceleratorsPerNode
        devices = claim_devices(gpus, layout.gpus_per_root, layout.efa_per_root)
        requests = 2 * len(root_groups(gpus, layout.gpus_per_root, layout.efa_per_root))
        if devices > ALLOCATION_RESULTS_MAX or requests > REQUESTS_MAX:
            largest = max(n for n in range(1, layout.gpus + 1)
                          if claim_devices(n, layout.gpus_per_root, layout.efa_per_root) <= ALLOCATION_RESULTS_MAX)
            findings.append(Finding.of(DRA_POOL_TOPOLOGY, "gpusPerClaim", (
                f"a claim of {gpus} GPUs on {pool.instance_types[0]} holds {devices} devices ({layout.describe()}), above the "
                f"{ALLOCATION_RESULTS_MAX} a ResourceClaim can allocate (AllocationResultsMaxSize, k8s.io/api resource/v1): "
                f"claim at most {largest} GPUs each (a pod may name several claims; sizes that tile the node: {sizes})"),
                pool=pool.name))
        elif gpus % layout.gpus_per_root:
            # A root's GPUs share its EFA devices (p4d: 2 GPUs + 1 EFA): a claim ending inside a root takes the EFA with
            # its GPU and leaves the root's other GPU without one, for every claim that later lands there.
            findings.append(Finding.of(DRA_POOL_TOPOLOGY, "gpusPerClaim", (
                f"a claim of {gpus} GPUs splits a PCIe root of {pool.instance_types[0]} ({layout.describe()}): the root's "
                f"other GPU is left without its EFA device; use claim sizes that tile the roots: {sizes}"), pool=pool.name))
        elif layout.gpus % gpus:
            findings.append(Finding.of(DRA_POOL_TOPOLOGY, "gpusPerClaim", (
                f"claims of {gpus} GPUs do not tile a node of {layout.gpus} ({pool.instance_types[0]}): "
                f"{layout.gpus % gpus} GPUs of a node filled with them are stranded; use claim sizes that tile the node: "
                f"{sizes}"), pool=pool.name))
    return findings


def tiling_claim_sizes(layout: PcieTopology) -> list[int]:
    """The claim sizes that tile a node: whole PCIe roots, a divisor of the node's GPUs, within a claim's 32 devices."""
    return [n for n in range(layout.gpus_per_root, layout.gpus + 1, layout.gpus_per_root)
            if layout.gpus % n == 0 and claim_devices(n, layout.gpus_per_root, layout.efa_per_root) <= ALLOCATION_RESULTS_MAX]


def queue_owner_findings(pool: DraPool, queue_owner: Optional[str]) -> list[Finding]:
    """A ``dra`` pool whose queues GPUStack's operator owns (``queueOwner: gpustack``; ``None``: not known, undecided).

    The stack then renders the tenants' LocalQueues for a ClusterQueue the operator creates per InstanceType it
    discovers from device-plugin resources -- none for a pool whose devices are claimed, so the LocalQueue points at a
    ClusterQueue that never appears and the claims go unmetered (docs/dra.md, "When to choose DRA"). The stack's own
    queues (``standalone``) cover ``gpu.nvidia.com`` and ``efa.networking.k8s.aws``."""
    if queue_owner != "gpustack":
        return []
    return [Finding.of(DRA_POOL_QUEUE_OWNER, "deviceAllocation", (
        f"dra pool {pool.name} under queueOwner: gpustack: GPUStack's operator creates ClusterQueues for the device-plugin "
        "keys it discovers, none for claimed devices, so the pool's LocalQueues point at a ClusterQueue that never "
        "appears and claims go unmetered; set queueOwner: standalone (the stack's ClusterQueues meter gpu.nvidia.com and "
        "efa.networking.k8s.aws) or use deviceAllocation: plugin"), pool=pool.name)]


def dra_pool_findings(pool: DraPool, cluster_version: Optional[str], eks_auto_mode: bool,
                      queue_owner: Optional[str] = None) -> list[Finding]:
    """Every rule of this module over one ``dra`` pool."""
    return [*kubernetes_version_findings(pool, cluster_version), *provisioner_findings(pool, cluster_version, eks_auto_mode),
            *topology_findings(pool), *queue_owner_findings(pool, queue_owner)]


def config_dra_findings(config: FabricConfig) -> Iterable[Finding]:
    """:func:`dra_pool_findings` over the configuration's ``dra`` pools, at their configuration paths."""
    auto_mode = config.cluster.eks_auto_mode if config.cluster is not None else False
    for i, spec in enumerate(config.pools):
        pool = DraPool.of_input(spec.model_dump(by_alias=True, exclude_none=True))
        if pool is not None:
            for finding in dra_pool_findings(pool, config.kubernetes_version, auto_mode, config.queue_owner):
                if finding.rule is DRA_KUBERNETES_VERSION_RULE and str(finding.path) == "deviceAllocation":
                    # The cluster's version is missing or too old: the field to change is the cluster's.
                    yield finding.moved("cluster.kubernetesVersion")
                else:
                    yield finding.at(f"pools[{i}]")


def dra_manifests(config: FabricConfig) -> list[dict[str, Any]]:
    """Every ResourceClaimTemplate of the configuration's ``dra`` pools (a validated configuration: layouts known)."""
    manifests: list[dict[str, Any]] = []
    for spec in config.pools:
        pool = DraPool.of_input(spec.model_dump(by_alias=True, exclude_none=True))
        layout = pool.topology() if pool is not None else None
        if pool is None or layout is None:
            continue
        manifests += claim_templates(pool.name, config.namespaces, pool.gpu_counts, layout.gpus_per_root, layout.efa_per_root)
    return manifests


def _positive(value: Any) -> bool:
    from gpu_fabric.config.quantity import QuantityError, parse_quantity

    if value is None or isinstance(value, bool):
        return False
    try:
        return parse_quantity(value) > 0
    except (QuantityError, TypeError, ValueError):
        return False


def deployment_plugin_key_findings(deployment: Mapping[str, Any], pools: Mapping[str, PoolView]) -> list[Finding]:
    """A ModelDeployment's roles that request device-plugin keys on ``dra`` pools (at ``spec.roles[j].resources.*``).

    The operator turns ``resources.accelerator`` into the pool's accelerator key (``nvidia.com/gpu``) and
    ``resources.interface`` on an EFA pool into ``vpc.amazonaws.com/efa``; its CRD has no ``resourceClaims``.
    """
    metadata = as_mapping(deployment.get("metadata"))
    subject = ObjectRef("ModelDeployment", str(metadata.get("name", "")), known_str(metadata.get("namespace")) or "default")
    findings = []
    for j, role in enumerate(as_list(as_mapping(deployment.get("spec")).get("roles"))):
        role = as_mapping(role)
        pool = pools.get(known_str(role.get("instanceType")) or known_str(role.get("acceleratorType")) or "")
        if pool is None or not pool.uses_dra:
            continue
        resources = as_mapping(role.get("resources"))
        for field, key in (("accelerator", NVIDIA_GPU_RESOURCE), ("interface", EFA_RESOURCE)):
            if _positive(resources.get(field)):
                findings += plugin_key_findings(pool, [key], subject, f"spec.roles[{j}].resources.{field}")
    return findings


def member_plugin_key_findings(grant: MemberGrant, pools: Iterable[PoolView]) -> list[Finding]:
    """A Mooncake member group that requests EFA devices on the nodes of a ``dra`` pool (at the member group)."""
    if not grant.uses_fabric:
        return []
    subject = ObjectRef("KVCacheBackend", grant.backend)
    path = f"spec.connection.managed.members[{grant.group_index}].fabricInterfaceCount"
    return [finding for pool in pools if pool.matches_selector(grant.node_selector)
            for finding in plugin_key_findings(pool, list(grant.resources), subject, path)]


def per_root_device_counts(pools: Iterable[DraPool]) -> dict[str, int]:
    """DeviceClass -> devices one PCIe root holds, over the ``dra`` pools whose layout is known.

    Pools of different layouts give the largest count per class: a ``pcieRoot`` constraint asking for more than
    that fits no pool of the stack, whereas one that fits the largest may still be meant for it.
    """
    counts: dict[str, int] = {}
    for pool in pools:
        layout = pool.topology()
        if layout is None:
            continue
        for device_class, count in ((GPU_DEVICE_CLASS, layout.gpus_per_root), (EFA_DEVICE_CLASS, layout.efa_per_root)):
            counts[device_class] = max(counts.get(device_class, 0), count)
    return counts


def config_dra_context(config: FabricConfig) -> Callable[[str], DraContext]:
    """The :class:`~gpu_fabric.kube.dra_rules.DraContext` of each namespace, from what the configuration states.

    * PCIe-root capacities from the ``dra`` pools' layouts (:func:`per_root_device_counts`);
    * Kueue admits a namespace's workloads when the stack declares a LocalQueue there;
    * Kueue maps exactly the classes of :func:`gpu_fabric.kube.kueue.device_class_mappings` when the stack owns the
      ClusterQueues and exports that mapping; otherwise the mapping is not the stack's to know (undecided);
    * the templates the stack renders, when it has a ``dra`` pool (a claim naming another one is refused).
    """
    from gpu_fabric.kube.kueue import device_class_mappings, kueue_manifests

    pools = [pool for spec in config.pools
             if (pool := DraPool.of_input(spec.model_dump(by_alias=True, exclude_none=True))) is not None]
    queued = {str(m["metadata"]["namespace"]) for m in kueue_manifests(config) if m.get("kind") == "LocalQueue"}
    mappings = device_class_mappings(config)
    mapped = frozenset(name for mapping in mappings for name in mapping["deviceClassNames"]) if mappings else None
    templates = dra_manifests(config)
    rendered = frozenset((str(t["metadata"]["namespace"]), str(t["metadata"]["name"])) for t in templates) if pools else None
    counts = per_root_device_counts(pools)

    def context_of(namespace: str) -> DraContext:
        return DraContext(per_root_counts=counts, kueue_managed=namespace in queued,
                          mapped_device_classes=mapped if namespace in queued else None, rendered_templates=rendered)

    return context_of
