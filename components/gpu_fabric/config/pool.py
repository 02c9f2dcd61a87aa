"""A pool: one GPUStack InstanceType (= Kueue ClusterQueue) and the nodes behind it."""

from __future__ import annotations

import re
from typing import Annotated, Any, Iterable, Literal, Mapping, Optional, Sequence, Union

from pydantic import AfterValidator, Field, ValidationError, ValidationInfo, field_validator, model_validator

from gpu_fabric.config import constants
from gpu_fabric.config import syntax
from gpu_fabric.config.quantity import QuantityError, amount
from gpu_fabric.config.node_group import KARPENTER_NODEPOOL_LABEL, MAX_NODES, AwsNodeGroupSpec, cluster_security_group_problem
from gpu_fabric.config.base import SpecModel, field_problem
from gpu_fabric.config.topology_agent import TopologyAgentSpec, topology_agent_input
from gpu_fabric.config.taints import Taint, check_eks_taint_key
from gpu_fabric.config.topology import KubeletTopology, bottlerocket_problems
from gpu_fabric.config.instance_type_names import MANUFACTURERS, manufacturer_of

EFA_PRESENT_LABEL = constants.EFA_PRESENT_LABEL
DEVICE_ALLOCATION_LABEL = constants.DEVICE_ALLOCATION_LABEL
INSTANCE_TYPE_LABEL = constants.INSTANCE_TYPE_LABEL
OS_LABEL = constants.OS_LABEL
ARCH_LABEL = constants.ARCH_LABEL
# Re-exported for modules that check names (one regex each, in gpu_fabric.config.syntax).
DNS_LABEL = syntax.DNS_LABEL
DNS_SUBDOMAIN = syntax.DNS_SUBDOMAIN
# gpustack--nvidia-a10g-linux-amd64 -> (linux, amd64)
_GPUSTACK_OS_ARCH = re.compile(r"^gpustack--.*-(?P<os>linux|windows)-(?P<arch>amd64|arm64|ppc64le|s390x)\Z", re.ASCII)


def platform_node_labels(name: str, *, efa: bool, instance_types: Sequence[str] = (), dra: bool = False) -> dict[str, str]:
    """Labels the platform puts on a pool's nodes without the pool declaring them.

    ``kubernetes.io/os``/``arch`` as a ``gpustack--...-<os>-<arch>`` InstanceType name tells them,
    ``vpc.amazonaws.com/efa.present: "true"`` on EFA node groups (ours set it), ``gpu-fabric.io/device-allocation:
    dra`` on the node groups of ``dra`` pools (ours set it too), and ``node.kubernetes.io/instance-type`` when the
    group has a single instance type.
    """
    labels: dict[str, str] = {}
    match = _GPUSTACK_OS_ARCH.match(name)
    if match:
        labels.update({OS_LABEL: match.group("os"), ARCH_LABEL: match.group("arch")})
    if efa:
        labels[EFA_PRESENT_LABEL] = "true"
    if efa and dra:
        labels[DEVICE_ALLOCATION_LABEL] = constants.DEVICE_ALLOCATION_DRA
    if len(instance_types) == 1:
        labels[INSTANCE_TYPE_LABEL] = instance_types[0]
    return labels


def pool_node_labels(name: str, *, efa: bool, instance_types: Sequence[str] = (),
                     pool_labels: Optional[Mapping[str, str]] = None, node_group_labels: Optional[Mapping[str, str]] = None,
                     karpenter_node_pool: Optional[str] = None, node_group_wins: bool = False, dra: bool = False) -> dict[str, str]:
    """The labels every node of a pool carries: the one derivation every view of a pool calls.

    What the platform adds (:func:`platform_node_labels`), Karpenter's ``karpenter.sh/nodepool`` when a
    NodePool named ``karpenter_node_pool`` launches the nodes, then the node group's labels and the pool's
    own ``nodeLabels``: the pool's win, as the node group gpu-fabric builds gives them precedence
    (``EfaNodeGroup``'s labels are ``{**aws.labels, **nodeLabels}``). ``node_group_wins`` reads them the
    other way round, as the policy pack reads a ``KueuePool`` input whose ``aws.labels`` come last.
    """
    labels = platform_node_labels(name, efa=efa, instance_types=instance_types, dra=dra)
    if karpenter_node_pool is not None:
        labels[KARPENTER_NODEPOOL_LABEL] = karpenter_node_pool
    layers = (pool_labels, node_group_labels) if node_group_wins else (node_group_labels, pool_labels)
    for layer in layers:
        labels.update(layer or {})
    return labels


def labels_identify_pool(labels: Iterable[str]) -> bool:
    """True when ``labels`` name something beyond OS and architecture, which the kubelet puts on every
    node: only then can they tell a pool's nodes from the rest of the cluster."""
    return bool(set(labels) - {OS_LABEL, ARCH_LABEL})


# Sane upper bounds: far above any real fabric, low enough that a typo (an extra zero or three)
# is refused instead of planning quotas for a million nodes.
MAX_ACCELERATORS_PER_NODE = 64
MAX_INTERFACES_PER_NODE = 64
"""EC2 offers at most 32 EFA interfaces per instance today; RDMA servers carry a handful of NICs."""
MAX_PARTITIONED_INTERFACES_PER_NODE = 4096
"""SR-IOV: up to 256 virtual functions per NIC, a few NICs per node."""
MAX_CPUS_PER_NODE = 4096

# The extended resource a manufacturer's device plugin advertises for whole accelerators.
DEFAULT_ACCELERATOR_RESOURCE = {"nvidia": "nvidia.com/gpu", "amd": "amd.com/gpu", "ascend": "huawei.com/Ascend910"}


def claim_template_name_of(pool: str, gpus: int) -> str:
    """``<pool>-<gpus>gpu``, the name of a ``dra`` pool's ResourceClaimTemplate (``kube.claim_templates`` renders it)."""
    return f"{pool}-{gpus}gpu"


def check_object_name(value: str, what: str = "name") -> str:
    """Refuse a name Kubernetes would refuse (DNS-1123 subdomain, at most 253 characters)."""
    return syntax.dns_subdomain(value, what)


def check_namespace(value: str) -> str:
    """Refuse a namespace Kubernetes would refuse (DNS-1123 label, at most 63 characters)."""
    return syntax.dns_label(value, "namespace")


class PoolSpec(SpecModel):
    """One pool of identical nodes, named like its GPUStack InstanceType / Kueue ClusterQueue."""

    name: str
    """ClusterQueue / InstanceType name, e.g. ``gpustack--nvidia-a10g-linux-amd64``."""
    fabric: Literal["efa", "rdma", "none"]
    """The node fabric: AWS EFA, RDMA NICs served by GPUStack's Device Manager, or none."""
    manufacturer: Optional[str] = None
    """Accelerator manufacturer; derived from the name when omitted (``nvidia`` above)."""
    accelerator_resource: Optional[Annotated[str, AfterValidator(syntax.extended_resource_name)]] = None
    """Extended resource of one whole accelerator; ``nvidia.com/gpu`` for NVIDIA by default."""
    accelerators_per_node: int = Field(ge=0, le=MAX_ACCELERATORS_PER_NODE)
    """Whole accelerators (GPUs) per node, advertised as ``acceleratorResource``."""
    interfaces_per_node: int = Field(default=0, ge=0, le=MAX_INTERFACES_PER_NODE)
    """Fabric endpoints per node: EFA interfaces, or RDMA NICs (exclusive endpoints)."""
    partitioned_interfaces_per_node: int = Field(default=0, ge=0, le=MAX_PARTITIONED_INTERFACES_PER_NODE)
    """SR-IOV virtual functions per node advertised as ``device.gpustack.ai/rdma.partitioned``."""
    node_count: int = Field(ge=1, le=MAX_NODES)
    """Nodes in the pool; sizes the standalone ClusterQueues' quotas and what ``verify`` expects."""
    cpu_per_node: Optional[int] = Field(default=None, ge=1, le=MAX_CPUS_PER_NODE)
    """Allocatable CPUs per node; when set, standalone ClusterQueues also meter ``cpu``."""
    memory_per_node: Optional[str] = None
    """Allocatable memory per node (e.g. ``"512Gi"``); when set, standalone ClusterQueues also meter ``memory``."""
    node_labels: syntax.Labels = Field(default_factory=dict)
    """Labels every node of the pool carries; device plugins and ``verify`` select the pool's nodes by them."""
    taints: list[Taint] = Field(default_factory=list)
    """Taints every node of the pool carries; device plugins must tolerate them."""
    topology: KubeletTopology = Field(default_factory=KubeletTopology.fabric_default)
    """kubelet TopologyManager / CPU manager settings of the pool's nodes (seed step 2)."""
    aws: Optional[AwsNodeGroupSpec] = None
    """The EFA nodes the stack provisions (``fabric: efa`` only): an EKS managed node group, or with
    ``provisioner: karpenter`` an EC2NodeClass and NodePool named after the pool."""
    topology_agent: Optional[TopologyAgentSpec] = None
    """Deliver ``topology`` with the ``KubeletTopologyAgent`` DaemonSet, for nodes the stack does not provision."""
    device_allocation: Optional[Literal["plugin", "dra"]] = None
    """How pods get the pool's GPUs and EFA interfaces: ``plugin`` (the default: device plugins advertise
    ``nvidia.com/gpu`` and ``vpc.amazonaws.com/efa``) or ``dra`` (Dynamic Resource Allocation: ResourceClaimTemplates
    pair each GPU with the EFA interfaces on its PCIe root; an NVIDIA ``efa`` pool of an instance type whose PCIe
    layout gpu-fabric knows, on Kubernetes 1.34 or later; docs/dra.md). Absent stays absent in dumps, so a stack that never says it renders as before."""
    gpus_per_claim: Optional[list[Annotated[int, Field(ge=1, le=MAX_ACCELERATORS_PER_NODE)]]] = Field(
        default=None, min_length=1, max_length=MAX_ACCELERATORS_PER_NODE)
    """``deviceAllocation: dra`` only: the GPU counts workloads claim, one ResourceClaimTemplate per entry, named
    ``<pool>-<n>gpu`` (default: one template for a whole node, ``acceleratorsPerNode`` GPUs)."""

    # json_schema_input_type: the JSON Schema shows what this validator accepts (``true`` / ``false`` too).
    @field_validator("topology_agent", mode="before", json_schema_input_type=Union[bool, TopologyAgentSpec, None])
    @classmethod
    def _agent_switch(cls, value: object) -> object:
        return topology_agent_input(value)

    @field_validator("topology_agent")
    @classmethod
    def _agent_only_for_unprovisioned_nodes(cls, value: Optional[TopologyAgentSpec], info: ValidationInfo) -> Optional[TopologyAgentSpec]:
        # ``aws`` is declared above, so it is validated (and in info.data) by now.
        if value is not None and info.data.get("aws") is not None:
            raise ValueError("the pool's nodes come from the stack's EKS node group, whose user data already carries "
                             "the topology; remove topologyAgent (it is for nodes the stack does not provision)")
        return value

    @field_validator("name")
    @classmethod
    def _valid_name(cls, value: str) -> str:
        return check_object_name(value, "pool name")

    @field_validator("memory_per_node")
    @classmethod
    def _memory_quantity(cls, value: Optional[str]) -> Optional[str]:
        if value is not None:
            try:
                amount(value, "memoryPerNode", positive=True)
            except QuantityError as error:
                raise ValueError(str(error)) from None
        return value

    @field_validator("manufacturer")
    @classmethod
    def _known_manufacturer(cls, value: Optional[str]) -> Optional[str]:
        if value is not None and value not in MANUFACTURERS:
            raise ValueError(f"unknown manufacturer {value!r}; allowed: {', '.join(MANUFACTURERS)}")
        return value

    @model_validator(mode="after")
    def _fabric_needs_interfaces(self) -> "PoolSpec":
        # Each problem at the field it is about (pools[i].nodeCount), not at the pool.
        def at(path: str, message: str, value: Any = None) -> ValidationError:
            return field_problem(type(self).__name__, path, message, value)

        if self.fabric != "none" and self.interfaces_per_node == 0:
            raise at("interfacesPerNode", f"a {self.fabric} pool needs interfacesPerNode of at least 1", 0)
        if self.fabric != "rdma" and self.partitioned_interfaces_per_node:
            raise at("partitionedInterfacesPerNode", "partitionedInterfacesPerNode applies to rdma pools only",
                     self.partitioned_interfaces_per_node)
        if self.aws is not None and self.fabric != "efa":
            raise at("fabric", f"an aws node group provides EFA nodes; the pool's fabric is {self.fabric}", self.fabric)
        scaling = self.aws.scaling if self.aws is not None else None
        if scaling is not None and self.node_count > scaling.max_size:
            # Standalone ClusterQueue quotas are nodeCount x per-node capacity: above maxSize they
            # promise nodes the node group never starts, and admitted workloads stay Pending.
            # (A Karpenter pool has no scaling: its NodePool's size is nodeCount itself.)
            raise at("nodeCount", f"nodeCount {self.node_count} is above aws.scaling.maxSize {scaling.max_size}: "
                                  "the node group never runs that many nodes; lower nodeCount or raise maxSize", self.node_count)
        if self.aws is not None and self.aws.ami_family == "bottlerocket":
            # The node group's Bottlerocket user data carries the topology (gpu_fabric.kube.topology).
            for field, problem in bottlerocket_problems(self.topology.policy_options, self.topology.cpu_manager_policy_options):
                raise at(f"topology.{field}", f"{problem} (aws.amiType {self.aws.ami_type}); drop the option or use an AL2023 amiType")
        if self.aws is not None:
            missing_group = cluster_security_group_problem(self.aws)
            if missing_group:
                field, _, reason = missing_group.partition(": ")
                raise at(f"aws.{field}", reason)
            # GpuFabric hands the pool's taints to its EKS node group, which refuses what EKS refuses.
            for j, taint in enumerate(self.taints):
                try:
                    check_eks_taint_key(taint.key)
                except ValueError as error:
                    raise at(f"taints[{j}].key", str(error), taint.key) from None
        if self.accelerators_per_node and self.resolved_accelerator_resource is None:
            if self.resolved_manufacturer is None:
                # A name that is not gpustack--<manufacturer>-... tells no manufacturer: the usual fix is to state it.
                known = ", ".join(sorted(set(DEFAULT_ACCELERATOR_RESOURCE) - {"nvidia"}))
                raise at("manufacturer", f"{self.name!r} is not a GPUStack InstanceType name (gpustack--<manufacturer>-"
                         f"<model>-<os>-<arch>), so it tells no manufacturer: set manufacturer: nvidia (or {known}), or "
                         "acceleratorResource for another vendor")
            raise at("acceleratorResource", "acceleratorResource is required when the manufacturer has no default resource name")
        self._dra_shape()
        return self

    def _dra_shape(self) -> None:
        """What a ``dra`` pool needs before its claims can be planned (the rules over the cluster are elsewhere);
        each problem is raised at its field."""
        def at(path: str, message: str, value: Any = None) -> ValidationError:
            return field_problem(type(self).__name__, path, message, value)

        if not self.uses_dra:
            if self.gpus_per_claim is not None:
                raise at("gpusPerClaim", "gpusPerClaim applies to deviceAllocation: dra pools only", self.gpus_per_claim)
            return
        if self.fabric != "efa":
            # The claims pair GPUs with the EFA devices DRANET publishes.
            raise at("fabric", "deviceAllocation: dra pairs GPUs with EFA devices: the pool needs fabric: efa", self.fabric)
        if len(claim_template_name_of(self.name, MAX_ACCELERATORS_PER_NODE)) > 253:
            raise at("name", "the pool name is too long for its ResourceClaimTemplates (<pool>-<n>gpu, at most 253 "
                     "characters)", self.name)
        if self.resolved_manufacturer != "nvidia" or not self.accelerators_per_node:
            field = "manufacturer" if self.resolved_manufacturer != "nvidia" else "acceleratorsPerNode"
            raise at(field, "deviceAllocation: dra allocates NVIDIA GPUs (DeviceClass gpu.nvidia.com of NVIDIA's DRA "
                     "driver): the pool needs manufacturer nvidia and acceleratorsPerNode of at least 1")
        for j, count in enumerate(self.gpus_per_claim or []):
            if isinstance(count, bool) or not 1 <= count <= self.accelerators_per_node:
                raise at(f"gpusPerClaim[{j}]", f"{count} GPUs do not fit one node of the pool "
                         f"(1 to acceleratorsPerNode {self.accelerators_per_node})", count)
        if self.gpus_per_claim is not None and len(set(self.gpus_per_claim)) != len(self.gpus_per_claim):
            raise at("gpusPerClaim", "gpusPerClaim lists a GPU count twice; each count is one ResourceClaimTemplate",
                     self.gpus_per_claim)

    @property
    def dra_instance_types(self) -> list[str]:
        """The instance types a ``dra`` pool's claims are planned for: its node group's, or the one its
        ``nodeLabels`` pin with ``node.kubernetes.io/instance-type`` (nodes the stack does not provision)."""
        if self.aws is not None:
            return list(self.aws.instance_types)
        pinned = self.node_labels.get(INSTANCE_TYPE_LABEL)
        return [pinned] if pinned else []

    @property
    def uses_dra(self) -> bool:
        """``deviceAllocation: dra``: GPUs and EFA interfaces are claimed through DRA, not device plugins."""
        return self.device_allocation == "dra"

    @property
    def claim_gpu_counts(self) -> list[int]:
        """The GPU counts of the pool's ResourceClaimTemplates, sorted (a ``dra`` pool's; empty otherwise)."""
        if not self.uses_dra:
            return []
        return sorted(set(self.gpus_per_claim or [self.accelerators_per_node]))

    @property
    def resolved_manufacturer(self) -> Optional[str]:
        """The manufacturer given, or the one the InstanceType name carries."""
        return self.manufacturer or manufacturer_of(self.name)

    @property
    def resolved_accelerator_resource(self) -> Optional[str]:
        """The accelerator's extended resource name, if the pool has accelerators."""
        if self.accelerator_resource:
            return self.accelerator_resource
        return DEFAULT_ACCELERATOR_RESOURCE.get(self.resolved_manufacturer or "")

    def effective_node_labels(self) -> dict[str, str]:
        """Every label a node of the pool carries that the stack knows of, for selector matching.

        The pool's own labels, its node group's labels, and :func:`platform_node_labels` (the EFA
        label only for pools whose nodes come from our AWS node group).
        """
        aws = self.aws
        labels = pool_node_labels(
            self.name, efa=aws is not None, instance_types=aws.instance_types if aws else (),
            pool_labels=self.node_labels, node_group_labels=aws.labels if aws else None,
            # Karpenter labels every node it launches with its NodePool, which GpuFabric names after the pool.
            karpenter_node_pool=self.name if aws is not None and aws.is_karpenter else None, dra=self.uses_dra)
        return dict(sorted(labels.items()))

    def node_group_labels(self) -> dict[str, str]:
        """The labels the stack's node group (or NodePool) puts on the pool's nodes beside the EFA label: the pool's
        ``nodeLabels``, and on a ``dra`` pool the device-allocation label the stack's EFA plugin keeps off."""
        if self.uses_dra:
            return {**self.node_labels, DEVICE_ALLOCATION_LABEL: constants.DEVICE_ALLOCATION_DRA}
        return dict(self.node_labels)

    def taint_dicts(self) -> list[dict[str, str]]:
        """The pool's taints (and its node group's), Kubernetes spelling, as plain dicts."""
        declared = [*self.taints, *(self.aws.taints if self.aws is not None else [])]
        taints = [taint.as_dict() for taint in declared]
        unique = {(t["key"], t.get("value", ""), t["effect"]): t for t in taints}
        return [unique[key] for key in sorted(unique)]
