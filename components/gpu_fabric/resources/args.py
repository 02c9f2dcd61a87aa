"""The nested argument types the components share, as Pulumi's component analyzer reads them.

Each ``TypedDict`` mirrors one configuration model of :mod:`gpu_fabric.config` field for field, with
snake_case keys (the provider schema shows them camelCase to other languages); a test holds the two
in step. ``pulumi.Input[...]`` marks values that may come from another resource; bare types are
plain. Kubernetes quantities are strings (``"2"``, ``"8Gi"``). Enumerations are ``str``s whose
docstrings list the accepted values: the analyzer refuses ``Literal`` and unions, and the models
refuse any other value before anything is registered.

No ``from __future__ import annotations`` here: the analyzer reads these annotations at run time.
"""

import sys
from typing import Any, Mapping, Sequence, TypedDict

import pulumi

if sys.version_info >= (3, 11):
    from typing import Required
else:  # pragma: no cover - Python 3.10
    from typing_extensions import Required


# -- pools and nodes ---------------------------------------------------------------------------------


class TaintArgs(TypedDict, total=False):
    """A node taint."""

    key: Required[str]
    """Taint key, e.g. ``nvidia.com/gpu``."""
    value: str
    """Taint value; absent means the derived toleration uses ``Exists``."""
    effect: Required[str]
    """``NoSchedule``, ``NoExecute`` or ``PreferNoSchedule``. A pool's taints take either this or EKS's
    ``NO_SCHEDULE`` spelling; ``EfaNodeGroup``'s own taints take only EKS's spelling, as EKS does."""


class KubeletTopologyArgs(TypedDict, total=False):
    """kubelet TopologyManager / CPU manager settings of a pool's nodes."""

    policy: str
    """``none``, ``best-effort``, ``restricted`` (default) or ``single-numa-node``."""
    scope: str
    """``container`` (default) or ``pod``."""
    cpu_manager_policy: str
    """``none`` (default) or ``static``."""
    reserved_system_cpus: str
    """CPUs kept for the OS and kubelet, as a cpuset list such as ``"0-1"``."""
    policy_options: Mapping[str, str]
    """TopologyManager policy options, e.g. ``{"prefer-closest-numa-nodes": "true"}``."""
    cpu_manager_policy_options: Mapping[str, str]
    """Static CPU manager options, e.g. ``{"full-pcpus-only": "true"}``."""


class PlacementGroupArgs(TypedDict, total=False):
    """Where the nodes are placed."""

    mode: str
    """``create`` (default) a cluster placement group, use an ``existing`` one, or ``none``. Plain: it
    decides whether a placement group resource exists."""
    name: pulumi.Input[str]
    """Name of the existing placement group (``mode: existing`` only)."""


class ScalingArgs(TypedDict, total=False):
    """Node count bounds; ``desired_size`` is only the initial count (autoscalers own it afterwards)."""

    min_size: Required[int]
    """Fewest nodes."""
    max_size: Required[int]
    """Most nodes."""
    desired_size: int
    """Nodes at creation; defaults to ``min_size``."""


class RootVolumeArgs(TypedDict, total=False):
    """The node's encrypted gp3 volume (Bottlerocket: the data volume that holds images)."""

    size_gib: int
    """Size in GiB; default 200."""
    kms_key_id: pulumi.Input[str]
    """KMS key of the volume; the account's default EBS key when absent."""


class KarpenterArgs(TypedDict, total=False):
    """How Karpenter launches a pool's nodes (``provisioner: karpenter`` only)."""

    node_role: Required[str]
    """Name of the IAM role the nodes run as (``EC2NodeClass.spec.role``)."""
    version: str
    """The Karpenter release installed (``1.14.1``); when stated, older than 1.11 is refused."""
    static: bool
    """A static NodePool: ``replicas`` = the pool's node count (Karpenter's StaticCapacity feature gate)."""
    ami_version: str
    """Version half of the AMI alias (``al2023@<version>``); default ``latest``."""
    expire_after: str
    """NodePool ``expireAfter``; default ``Never`` (an expiring node is terminated while it serves)."""
    consolidate_after: str
    """How long an empty node waits before Karpenter removes it; default ``1h``."""
    associate_public_ip_address: bool
    """Public IP on the primary interface; refused with more than one EFA. Default false."""


class AwsNodesArgs(TypedDict, total=False):
    """Where and how a pool's EFA nodes run, whoever launches them (EKS managed node group or Karpenter).

    Values that decide the interface plan, the user data or how many resources exist (instance
    types, AMI and capacity types, layout, scaling, labels, taints, tags) are plain.
    """

    cluster_name: Required[pulumi.Input[str]]
    """Name of the EKS cluster (for example ``cluster.name`` of an ``aws.eks.Cluster``)."""
    vpc_id: Required[pulumi.Input[str]]
    """VPC of the cluster; the EFA security group is created in it."""
    instance_types: Required[Sequence[str]]
    """EC2 instance types; all must support EFA and share one interface layout. Plain: they decide the
    launch template's interfaces."""
    availability_zone: Required[pulumi.Input[str]]
    """The group's one availability zone, explicit so it cannot drift and replace the group."""
    subnet_id: Required[pulumi.Input[str]]
    """The group's one subnet, in ``availability_zone`` (EFA traffic does not cross subnets)."""
    ami_type: str
    """``AL2023_x86_64_NVIDIA`` (default), ``AL2023_ARM_64_NVIDIA``, ``BOTTLEROCKET_x86_64_NVIDIA``,
    ``BOTTLEROCKET_ARM_64_NVIDIA``, ``BOTTLEROCKET_x86_64`` or ``BOTTLEROCKET_ARM_64``. Plain: it decides
    the user-data format."""
    capacity_type: str
    """``ON_DEMAND`` (default), ``SPOT`` or ``CAPACITY_BLOCK``. Plain: it decides the placement rules."""
    capacity_reservation_id: pulumi.Input[str]
    """On-Demand Capacity Reservation or Capacity Block to launch into."""
    placement_group: PlacementGroupArgs
    """Default ``create``; ``none`` is implied with a capacity reservation or a Capacity Block."""
    efa_layout: str
    """``recommended`` (default) or ``legacy`` interface layout."""
    efa_card_indices: Sequence[int]
    """Network cards that carry an EFA (default: as many as the type allows)."""
    cluster_security_group_id: pulumi.Input[str]
    """The EKS cluster security group, on every interface beside the EFA group (EKS does not add it to a launch
    template that names interfaces); required unless ``security_group_ids`` lists it."""
    security_group_ids: Sequence[pulumi.Input[str]]
    """Extra security groups of every interface (the cluster security group, when not given on its own)."""
    root_volume: RootVolumeArgs
    """The encrypted gp3 volume."""
    labels: Mapping[str, str]
    """Node labels (``vpc.amazonaws.com/efa.present: "true"`` is always added). Plain: they are
    written into the user data."""
    taints: Sequence[TaintArgs]
    """Node taints. Plain: they are written into the user data."""
    tags: Mapping[str, str]
    """AWS tags of every resource (``kubernetes.io/cluster/*`` is refused)."""
    release_version: pulumi.Input[str]
    """EKS AMI release version."""
    kubernetes_version: pulumi.Input[str]
    """Kubernetes version of the nodes."""


class AwsNodeGroupArgs(AwsNodesArgs, total=False):
    """A pool's ``aws`` block: an EFA-enabled EKS managed node group, or with ``provisioner: karpenter`` an
    EC2NodeClass and NodePool, in one AZ and one subnet of an existing cluster."""

    node_role_arn: pulumi.Input[str]
    """IAM role the nodes run as (for example ``role.arn`` of an ``aws.iam.Role``); required for a managed
    node group, refused with ``provisioner: karpenter`` (``karpenter.node_role`` names the role)."""
    scaling: ScalingArgs
    """Node count bounds; required for a managed node group, refused with ``provisioner: karpenter`` (the
    pool's node count sizes the NodePool)."""
    provisioner: str
    """``managedNodeGroup`` (default) or ``karpenter``. Plain: it decides which resources exist."""
    karpenter: KarpenterArgs
    """Karpenter's settings (``provisioner: karpenter`` only). Plain: written into the NodeClass and NodePool."""


class TopologyAgentSettingsArgs(TypedDict, total=False):
    """How the ``KubeletTopologyAgent`` DaemonSet reaches a pool's nodes (all defaults: ``{}``)."""

    namespace: str
    """Namespace of the agent's objects. Default ``kube-system``."""
    image: str
    """Image with ``python3`` (standard library only). Default ``python:3.12-slim``."""
    host_paths: Sequence[str]
    """Host directories the agent may write. Default ``/etc/kubernetes`` and ``/var/lib/kubelet``."""
    kubelet_unit: str
    """systemd unit of the kubelet. Default ``kubelet.service``."""


class PoolArgs(TypedDict, total=False):
    """One pool of identical nodes: a GPUStack InstanceType, which is also the Kueue ClusterQueue."""

    name: Required[str]
    """ClusterQueue / InstanceType name, e.g. ``gpustack--nvidia-a10g-linux-amd64``."""
    fabric: Required[str]
    """``efa``, ``rdma`` or ``none``."""
    manufacturer: str
    """Accelerator manufacturer; derived from the name when omitted."""
    accelerator_resource: str
    """Extended resource of one whole accelerator; ``nvidia.com/gpu`` for NVIDIA by default."""
    accelerators_per_node: Required[int]
    """Accelerators per node."""
    interfaces_per_node: int
    """Fabric endpoints per node: EFA interfaces, or RDMA NICs."""
    partitioned_interfaces_per_node: int
    """SR-IOV virtual functions per node advertised as ``device.gpustack.ai/rdma.partitioned``."""
    node_count: Required[int]
    """Nodes in the pool (the quotas of a standalone ClusterQueue)."""
    cpu_per_node: int
    """Allocatable CPUs per node; standalone ClusterQueues then also meter ``cpu``."""
    memory_per_node: str
    """Allocatable memory per node (e.g. ``"512Gi"``); standalone ClusterQueues then also meter ``memory``."""
    node_labels: Mapping[str, str]
    """Labels the pool's nodes carry."""
    taints: Sequence[TaintArgs]
    """Taints the pool's nodes carry."""
    topology: KubeletTopologyArgs
    """kubelet topology settings of the pool's nodes."""
    aws: AwsNodeGroupArgs
    """An EFA-enabled EKS managed node group that provides the nodes (``fabric: efa`` only)."""
    topology_agent: TopologyAgentSettingsArgs
    """Deliver ``topology`` with the ``KubeletTopologyAgent`` DaemonSet, for nodes the stack does not provision."""
    device_allocation: str
    """``plugin`` (default: device plugins) or ``dra`` (ResourceClaimTemplates pairing GPUs and EFA per PCIe root)."""
    gpus_per_claim: Sequence[int]
    """``dra`` pools: the GPU counts workloads claim, one ResourceClaimTemplate each (default: a whole node)."""


# -- GPUStack objects --------------------------------------------------------------------------------


class NamedRefArgs(TypedDict, total=False):
    """A reference by name."""

    name: Required[str]
    """The referenced object's name."""


class LocalObjectRefArgs(TypedDict, total=False):
    """A reference to an object in the deployment's namespace (ConfigMap, Secret, pull secret)."""

    name: Required[str]
    """The object's name."""


class ModelArgs(TypedDict, total=False):
    """The served model."""

    name: Required[str]
    """Model name, e.g. ``Qwen/Qwen3-8B``."""
    artifact_ref: NamedRefArgs
    """A ModelArtifact to serve instead of downloading by name."""


class EngineArgs(TypedDict, total=False):
    """The inference engine."""

    name: Required[str]
    """``vLLM`` or ``SGLang``."""
    image: pulumi.Input[str]
    """Runner image every role without its own image runs (GPUStack operator 0.9 and later; required there
    unless every role names one). ``main@5cfac77b`` has no such field."""
    version: str
    """Engine version (``main@5cfac77b`` synthesizes runner images from it; released lines do not)."""


class RouterArgs(TypedDict, total=False):
    """The router in front of the roles; a router plus Prefill/Decode roles renders a KV-transfer leg."""

    name: Required[str]
    """``llm-d-router``, ``vllm-router`` or ``sglang-gateway``."""
    replicas: int
    """Router replicas."""
    image: pulumi.Input[str]
    """Router image."""
    image_pull_policy: str
    """``Always``, ``IfNotPresent`` or ``Never``."""
    image_pull_secrets: Sequence[LocalObjectRefArgs]
    """Pull secrets in the deployment's namespace."""
    extra_args: Sequence[str]
    """Extra router arguments."""
    request_timeout_seconds: int
    """Request timeout."""
    disaggregation_threshold_tokens: int
    """Prompt length from which ``llm-d-router`` disaggregates."""


class KvTransferArgs(TypedDict, total=False):
    """Direct prefill-to-decode KV transfer."""

    protocol: str
    """``Auto``, ``TCP``, ``RDMA``, ``EFA``, ``CANN`` or ``ROCM``."""
    backend: str
    """The direct connector's backend (GPUStack operator 0.11 and later)."""


class KvCacheRefArgs(TypedDict, total=False):
    """The KVCachePoolBinding (same namespace) whose pool serves the deployment's KV cache."""

    pool_ref: Required[NamedRefArgs]
    """The binding."""
    connector: str
    """``Mooncake``."""


class RoleResourcesArgs(TypedDict, total=False):
    """Per-Pod resources of a role; ``interface`` is translated into fabric device keys."""

    accelerator: str
    """Accelerators per Pod (a quantity)."""
    accelerator_sliced_memory_percentage: int
    """Memory share of a sliced accelerator."""
    accelerator_sliced_cores_percentage: int
    """Core share of a sliced accelerator."""
    accelerator_partitioned_profile: str
    """Partition profile of a partitioned accelerator."""
    interface: str
    """Fabric interfaces per Pod (a quantity)."""
    cpu: str
    """CPU per Pod (a quantity; GPUStack operator 0.11 and later)."""
    ram: str
    """Memory per Pod (a quantity; GPUStack operator 0.11 and later)."""
    local_storage: str
    """Local storage per Pod (a quantity; GPUStack operator 0.11 and later)."""


class EnvVarArgs(TypedDict, total=False):
    """An environment variable."""

    name: Required[str]
    """Variable name."""
    value: str
    """Variable value."""


class PortArgs(TypedDict, total=False):
    """A container port."""

    port: Required[int]
    """Port number."""
    protocol: str
    """``TCP``, ``UDP`` or ``SCTP``."""


class RoleTopologyArgs(TypedDict, total=False):
    """Kueue topology-aware scheduling for a role."""

    required_level: str
    """The topology label key all Pods of a replica must share."""


class HostPathSourceArgs(TypedDict, total=False):
    """A host path volume (the operator gates it behind a Setting)."""

    path: Required[str]
    """Path on the node."""
    type: str
    """Kubernetes hostPath type."""


class AdditionalVolumeArgs(TypedDict, total=False):
    """A volume mounted into every container of the role: exactly one of config_map, secret, host_path."""

    mount_path: Required[str]
    """Absolute mount path."""
    read_only: bool
    """Mount read-only."""
    sub_path: str
    """Relative path within the volume."""
    config_map: LocalObjectRefArgs
    """A ConfigMap."""
    secret: LocalObjectRefArgs
    """A Secret."""
    host_path: HostPathSourceArgs
    """A host path."""


class ElasticEpArgs(TypedDict, total=False):
    """The elastic expert-parallel profile: one managed vLLM Server role of ``width`` engines."""

    width: Required[int]
    """Engines, 2 to 64."""


class RoleArgs(TypedDict, total=False):
    """One role of a ModelDeployment: replicas on one pool (InstanceType, or AcceleratorType from operator 0.11)."""

    name: Required[str]
    """Role name (a DNS label)."""
    kind: str
    """``Server`` (default), ``Prefill`` or ``Decode``."""
    replicas: int
    """Replicas of the role."""
    size: int
    """Pods per replica."""
    instance_type: str
    """The InstanceType (pool) the role runs on (GPUStack operator up to 0.10 and ``main@5cfac77b``)."""
    accelerator_type: str
    """The AcceleratorType (pool) the role runs on (GPUStack operator 0.11 and later); set it or ``instance_type``."""
    resources: RoleResourcesArgs
    """Per-Pod resources."""
    image: pulumi.Input[str]
    """Runner image of the role, for example one built in the same program."""
    image_pull_policy: str
    """``Always``, ``IfNotPresent`` or ``Never``."""
    image_pull_secrets: Sequence[LocalObjectRefArgs]
    """Pull secrets in the deployment's namespace."""
    command: Sequence[str]
    """Container command."""
    extra_args: Sequence[str]
    """Extra engine arguments."""
    env: Sequence[EnvVarArgs]
    """Environment variables."""
    ports: Sequence[PortArgs]
    """Container ports."""
    shm_size: str
    """Shared memory size (a quantity)."""
    privileged: bool
    """Run privileged (advised against; fabric devices come from the device plugins)."""
    additional_volumes: Sequence[AdditionalVolumeArgs]
    """Volumes mounted into every container of the role."""
    topology: RoleTopologyArgs
    """Topology-aware scheduling."""
    termination_grace_period_seconds: int
    """Grace period, 15 to 3600 seconds."""
    elastic_ep: ElasticEpArgs
    """Elastic expert parallelism."""


class DeploymentArgs(TypedDict, total=False):
    """A GPUStack ModelDeployment: ``name`` and ``namespace`` plus the object's ``spec`` fields."""

    name: Required[str]
    """Object name."""
    namespace: Required[str]
    """Tenant namespace."""
    model: Required[ModelArgs]
    """The served model."""
    engine: Required[EngineArgs]
    """The engine."""
    router: RouterArgs
    """The router."""
    kv_transfer: KvTransferArgs
    """Direct prefill-to-decode transfer."""
    kv_cache: KvCacheRefArgs
    """The KV-cache pool binding."""
    roles: Required[Sequence[RoleArgs]]
    """The roles (1 to 10)."""


class TransportArgs(TypedDict, total=False):
    """Transport of a KV-cache backend or of one member group."""

    protocol: str
    """``Auto``, ``TCP``, ``RDMA``, ``EFA``, ``CANN``, ``ROCM``, ``MUSA`` or ``MACA``."""


class HostPathArgs(TypedDict, total=False):
    """An extra host path of a member group."""

    path: Required[str]
    """Path on the node."""
    mount_path: str
    """Path in the container."""
    type: str
    """Kubernetes hostPath type."""
    read_only: bool
    """Mount read-only."""


class MemberGroupArgs(TypedDict, total=False):
    """A Mooncake member group: one DaemonSet on the nodes its selector picks."""

    node_selector: Required[Mapping[str, str]]
    """Nodes of the group."""
    medium: Required[str]
    """``DRAM`` or ``VRAM``."""
    capacity_per_member: Required[str]
    """Capacity each member contributes (a quantity)."""
    local_buffer_size: str
    """Local buffer size (a quantity)."""
    extra_args: Sequence[str]
    """Extra member arguments."""
    extra_env: Sequence[EnvVarArgs]
    """Extra environment."""
    image: pulumi.Input[str]
    """Member image."""
    transport: TransportArgs
    """Transport of this group."""
    fabric_interface_count: int
    """Fabric interfaces per member."""
    security_context: Mapping[str, Any]
    """Container security context (never privileged)."""
    host_paths: Sequence[HostPathArgs]
    """Extra host paths."""
    runtime_class_name: str
    """RuntimeClass of the members."""
    local_disks: Sequence[Mapping[str, Any]]
    """Local disk (at most one)."""


class LeaderArgs(TypedDict, total=False):
    """The managed Mooncake leader (master)."""

    replicas: int
    """Leader replicas (1 to 5)."""
    allocation_strategy: str
    """``Random`` or ``FreeRatioFirst``."""
    multi_tenancy: bool
    """Serve several domains."""
    extra_args: Sequence[str]
    """Extra leader arguments."""
    extra_env: Sequence[EnvVarArgs]
    """Extra environment."""
    high_availability: Mapping[str, Any]
    """High-availability settings, as the operator takes them."""
    election_backend: str
    """How the leader elects (GPUStack operator 0.11 and later; its docs show ``None``)."""


class ManagedArgs(TypedDict, total=False):
    """A backend whose leader and members the operator runs."""

    leader: LeaderArgs
    """The leader."""
    members: Required[Sequence[MemberGroupArgs]]
    """Member groups (1 to 32)."""
    scale_in: Mapping[str, Any]
    """Scale-in settings, as the operator takes them."""


class ExternalEndpointArgs(TypedDict, total=False):
    """An endpoint of an external Mooncake deployment."""

    name: Required[str]
    """``Client`` or ``Admin``."""
    address: Required[pulumi.Input[str]]
    """``host:port``."""


class ExternalArgs(TypedDict, total=False):
    """A backend run outside the operator."""

    endpoints: Required[Sequence[ExternalEndpointArgs]]
    """Its endpoints."""


class ConnectionArgs(TypedDict, total=False):
    """Exactly one of ``managed`` and ``external``."""

    managed: ManagedArgs
    """Operator-managed leader and members."""
    external: ExternalArgs
    """An external deployment."""


class KVCacheBackendArgs(TypedDict, total=False):
    """A cluster-scoped KVCacheBackend (Mooncake)."""

    name: Required[str]
    """Object name."""
    type: str
    """``Mooncake`` (default)."""
    image: pulumi.Input[str]
    """Mooncake image."""
    image_pull_policy: str
    """``Always``, ``IfNotPresent`` or ``Never``."""
    image_pull_secrets: Sequence[LocalObjectRefArgs]
    """Pull secrets in the operator's namespace for the Mooncake pods."""
    transport: TransportArgs
    """Transport of the backend."""
    connection: Required[ConnectionArgs]
    """Managed or external."""


class PoolQuotaArgs(TypedDict, total=False):
    """Total capacity a KVCachePool may use."""

    total: Required[str]
    """A quantity, e.g. ``"512Gi"``."""


class KVCachePoolArgs(TypedDict, total=False):
    """A cluster-scoped KVCachePool over exactly one backend."""

    name: Required[str]
    """Object name."""
    backends: Required[Sequence[str]]
    """The one backend's name."""
    quota: Required[PoolQuotaArgs]
    """The pool's capacity."""


class DomainArgs(TypedDict, total=False):
    """The store tenant a binding writes to (immutable)."""

    name: str
    """Domain name."""
    block_size: Required[int]
    """Block size."""
    dtype: Required[str]
    """KV data type."""


class BindingQuotaArgs(TypedDict, total=False):
    """A binding's share of the pool."""

    ceiling: Required[str]
    """A quantity, e.g. ``"64Gi"``."""


class KVCachePoolBindingArgs(TypedDict, total=False):
    """A namespaced KVCachePoolBinding: what a ModelDeployment's ``kv_cache.pool_ref`` names."""

    name: Required[str]
    """Object name."""
    namespace: Required[str]
    """Tenant namespace."""
    pool_ref: Required[NamedRefArgs]
    """The KVCachePool."""
    domain: Required[DomainArgs]
    """The store tenant."""
    quota: Required[BindingQuotaArgs]
    """The binding's share."""
