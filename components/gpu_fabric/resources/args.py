"""The nested argument types the components share, as Pulumi's component analyzer reads them.

Each ``TypedDict`` mirrors one configuration model of :mod:`gpu_fabric.config` field for field, with
snake_case keys (the provider schema shows them camelCase to other languages); a test holds the two
in step. ``pulumi.Input[...]`` marks values that may come from another resource; bare types are
plain. Kubernetes quantities are strings (``"2"``, ``"8Gi"``). Enumerations are ``str``s whose
docstrings list the accepted values: the analyzer refuses ``Literal`` and unions, and the models
refuse any other value before anything is registered.

This module holds the pools and nodes; a ModelDeployment's types are in
:mod:`gpu_fabric.resources.deployment_args`, the KV cache's in :mod:`gpu_fabric.resources.kv_cache_args`.

No ``from __future__ import annotations`` here: the analyzer reads these annotations at run time.
"""

import sys
from typing import Mapping, Sequence, TypedDict

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
