"""Configuration model of one pool's EFA nodes (``aws:`` on a pool): an EFA-enabled EKS managed node group, or
with ``provisioner: karpenter`` the settings of the EC2NodeClass and NodePool Karpenter launches them from.

The rules encoded here come from what EFA needs and what other tools got wrong
(eksctl, terraform-aws-modules/terraform-aws-eks, pulumi/pulumi-eks and their issues): one explicit AZ and exactly one subnet (EFA does not cross subnets or
AZs, and a derived AZ drifts), no auto-created placement group when the group targets a capacity
reservation or a Capacity Block (eksctl#7949, terraform-aws-eks#3661), and no
``kubernetes.io/cluster/*`` tag on the EFA security group (AWS Load Balancer Controller, eksctl#8475).
"""

from __future__ import annotations

import re

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, ModelWrapValidatorHandler, ValidationError, field_validator, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from gpu_fabric.config import syntax
from gpu_fabric.config.aws_rules import ONE_SUBNET_REASON, cluster_tag_problem
from gpu_fabric.config.constants import CLUSTER_TAG_PREFIX  # noqa: F401  (re-exported for existing importers)
from gpu_fabric.config.base import SpecModel
from gpu_fabric.config.taints import Taint, eks_taint

# EFA-capable EKS AMIs (EKS User Guide, "Manage EFA devices"; eksctl#8113; awslabs/amazon-eks-ami
# templates/al2023/provisioners/install-efa.sh): AL2023 NVIDIA carries the EFA software, and
# Bottlerocket >= 1.28 supports EFA in its NVIDIA and standard variants (CPU pools such as Mooncake members).
AmiType = Literal["AL2023_x86_64_NVIDIA", "AL2023_ARM_64_NVIDIA", "BOTTLEROCKET_x86_64_NVIDIA", "BOTTLEROCKET_ARM_64_NVIDIA",
                  "BOTTLEROCKET_x86_64", "BOTTLEROCKET_ARM_64"]
CapacityType = Literal["ON_DEMAND", "SPOT", "CAPACITY_BLOCK"]
PlacementMode = Literal["create", "existing", "none", "domain"]
EfaLayout = Literal["recommended", "legacy"]
Provisioner = Literal["managedNodeGroup", "karpenter"]

KARPENTER_NODEPOOL_LABEL = "karpenter.sh/nodepool"
"""The label Karpenter puts on every node it launches, valued with the NodePool's name
(kubernetes-sigs/karpenter ``pkg/apis/v1/labels.go``, ``NodePoolLabelKey``); ``verify`` finds a Karpenter
pool's nodes by it."""
KARPENTER_MIN_VERSION = (1, 11)
"""``EC2NodeClass.spec.networkInterfaces`` (PR #9027) and ``spec.placementGroupSelector`` (PR #9030) first
shipped in Karpenter v1.11.0 (aws/karpenter-provider-aws ``pkg/apis/v1/ec2nodeclass.go``); older releases prune both fields."""
NODE_GROUP_ONLY_FIELDS = {
    "scaling": "a NodePool's size is the pool's nodeCount (limits.nodes, or replicas with karpenter.static)",
    "nodeRoleArn": "Karpenter takes the node role by name: set karpenter.nodeRole",
    "releaseVersion": "Karpenter picks the AMI from karpenter.amiVersion",
    "kubernetesVersion": "Karpenter launches nodes of the cluster's version",
}
"""Managed-node-group settings that mean nothing to Karpenter, and what to write instead."""
_DURATION = r"^(([0-9]+(s|m|h))+|Never)$"  # NodePool ``expireAfter`` / ``consolidateAfter`` (karpenter.sh_nodepools.yaml)
# AL2023 releases are dated (v20260801), Bottlerocket's are semantic (v1.20.3); EC2NodeClass CEL only wants
# "<family>@<something>" (karpenter.k8s.aws_ec2nodeclasses.yaml, amiSelectorTerms[].alias).
_AMI_VERSION = r"^(latest|v[0-9]{8}|v?[0-9]{1,9}\.[0-9]{1,9}\.[0-9]{1,9})$"
_KARPENTER_VERSION = r"^v?[0-9]{1,9}\.[0-9]{1,9}(\.[0-9]{1,9})?$"  # bounded: int() of 5,000 digits raises
# IAM CreateRole RoleName: [\w+=,.@-]+ (ASCII), 1 to 64 characters.
_IAM_ROLE_NAME = re.compile(r"[A-Za-z0-9_+=,.@-]{1,64}", re.ASCII)
_MAX_GO_DURATION_NS = 2**63 - 1  # time.Duration is an int64 of nanoseconds (2562047h47m16.854775807s)
_UNIT_NS = {"s": 10**9, "m": 60 * 10**9, "h": 3600 * 10**9}


def _duration_nanoseconds(text: str) -> int:
    """Nanoseconds of a ``1h30m``-style duration (the NodePool pattern already holds)."""
    parts = re.findall(r"([0-9]+)([smh])", text)
    if any(len(number) > 30 for number, _ in parts):
        return _MAX_GO_DURATION_NS + 1
    return sum(int(number) * _UNIT_NS[unit] for number, unit in parts)

MAX_NODES = 5000
"""Kubernetes' documented scalability limit, 5,000 nodes per cluster (kubernetes.io, "Considerations for
large clusters"); bounds a node group's sizes and a pool's nodeCount."""
MAX_GP3_GIB = 65536
"""Largest gp3 volume EBS creates (64 TiB)."""
MAX_NETWORK_CARDS = 64
"""Network card indices stay below this (EC2's largest instances have 32 cards)."""


class PlacementGroupSpec(SpecModel):
    """Where the nodes are placed: a new cluster placement group, an existing one, or none."""

    mode: PlacementMode = "create"
    """``create`` a cluster placement group, use an ``existing`` one by name, ``none``, or ``domain``: share
    one cluster placement group with the other node groups of the pool's EFA domain that choose it
    (``GpuFabric`` only; a pool outside any domain gets a group of its own)."""
    name: syntax.PlainText | None = Field(default=None, max_length=255)
    """Name of the existing placement group (``mode: existing`` only)."""

    @model_validator(mode="after")
    def _name_matches_mode(self) -> "PlacementGroupSpec":
        if self.mode == "existing" and not self.name:
            raise ValueError("name is required when mode is 'existing'")
        if self.mode != "existing" and self.name:
            raise ValueError(f"name is only used with mode 'existing' (mode is {self.mode!r})")
        return self


class ScalingSpec(SpecModel):
    """Node count bounds; ``desiredSize`` is only the initial count (autoscalers own it afterwards)."""

    min_size: int = Field(ge=0, le=MAX_NODES)
    """Smallest node count of the node group."""
    max_size: int = Field(ge=1, le=MAX_NODES)
    """Largest node count of the node group."""
    desired_size: int | None = Field(default=None, ge=0, le=MAX_NODES)
    """Defaults to ``minSize``."""

    @model_validator(mode="after")
    def _ordered(self) -> "ScalingSpec":
        desired = self.desired_size if self.desired_size is not None else self.min_size
        if not self.min_size <= desired <= self.max_size:
            raise ValueError(
                f"scaling must satisfy minSize <= desiredSize <= maxSize (got {self.min_size} <= {desired} <= {self.max_size})"
            )
        return self

    @property
    def initial_size(self) -> int:
        """The desired size at creation."""
        return self.desired_size if self.desired_size is not None else self.min_size


class RootVolumeSpec(SpecModel):
    """The node's encrypted gp3 volume (Bottlerocket: the data volume that holds images)."""

    size_gib: int = Field(default=200, ge=20, le=MAX_GP3_GIB, alias="sizeGiB")
    """Size of the gp3 volume in GiB (default 200)."""
    kms_key_id: syntax.PlainText | None = Field(default=None, max_length=2048)
    """KMS key for the volume; the account's default EBS key when absent."""


class KarpenterSpec(SpecModel):
    """How Karpenter launches the pool's nodes (``aws.provisioner: karpenter`` only)."""

    node_role: syntax.PlainText = Field(min_length=1, max_length=64)
    """Name of the IAM role the nodes run as (``EC2NodeClass.spec.role``; Karpenter creates its instance profile).
    IAM role names are at most 64 characters of letters, digits and ``+=,.@_-`` (a name, not an ARN)."""
    version: Annotated[str, Field(pattern=_KARPENTER_VERSION)] | None = None
    """The Karpenter release installed in the cluster (``1.14.1``); when stated, older than 1.11 is refused."""
    static: bool = False
    """A static NodePool (``spec.replicas`` = the pool's nodeCount): Karpenter keeps exactly that many nodes
    whatever the pods ask; otherwise nodes follow pending pods up to ``limits.nodes``."""
    ami_version: Annotated[str, Field(pattern=_AMI_VERSION)] = "latest"
    """The version half of the AMI alias (``al2023@v20260801``, ``bottlerocket@v1.20.3``); pin it in production,
    ``latest`` drifts (and replaces) nodes whenever EKS publishes an AMI."""
    expire_after: Annotated[str, Field(pattern=_DURATION)] = "Never"
    """NodePool ``template.spec.expireAfter``. Default ``Never``: an expiring node is terminated even while it
    serves; roll nodes through drift (AMI version, NodeClass changes) instead."""
    consolidate_after: Annotated[str, Field(pattern=_DURATION)] = "1h"
    """How long an empty node waits before Karpenter removes it (``disruption.consolidateAfter``)."""
    associate_public_ip_address: bool = False
    """``EC2NodeClass.spec.associatePublicIPAddress``; EC2 refuses a public IP on an instance with more than one EFA."""

    @field_validator("node_role")
    @classmethod
    def _role_name(cls, value: str) -> str:
        if value.startswith("arn:"):
            raise ValueError(f"{value!r} is an ARN; Karpenter takes the role's name (EC2NodeClass.spec.role), "
                             f"here {value.rsplit('/', 1)[-1]!r}")
        if not _IAM_ROLE_NAME.fullmatch(value):
            raise ValueError(f"{value!r} is not an IAM role name (letters, digits and '+=,.@_-', no spaces; "
                             "IAM CreateRole RoleName)")
        return value

    @field_validator("expire_after", "consolidate_after")
    @classmethod
    def _within_go_duration(cls, value: str) -> str:
        if value != "Never" and _duration_nanoseconds(value) > _MAX_GO_DURATION_NS:
            raise ValueError(f"{value!r} is longer than Go's time.Duration holds (about 2562047h); Karpenter "
                             "cannot parse it -- write Never for no limit")
        return value

    @field_validator("version")
    @classmethod
    def _at_least_1_11(cls, value: str | None) -> str | None:
        if value is not None and karpenter_version(value) < KARPENTER_MIN_VERSION:
            raise ValueError(
                f"Karpenter {value} cannot express the EFA layout; EC2NodeClass networkInterfaces and "
                "placementGroupSelector need Karpenter >= 1.11 (aws/karpenter-provider-aws PRs #9027, #9030)")
        return value


class AwsNodeGroupSpec(SpecModel):
    """An EFA-enabled EKS managed node group in one AZ and one subnet of an existing cluster."""

    cluster_name: syntax.EksClusterName
    """Name of the existing EKS cluster."""
    vpc_id: syntax.VpcId
    """VPC of the cluster; the EFA security group is created in it."""
    instance_types: list[syntax.InstanceType] = Field(min_length=1, max_length=20)
    """EC2 instance types; all must support EFA and share one interface layout."""
    availability_zone: syntax.AvailabilityZone
    """The one AZ of the group, explicit so it cannot drift and replace the group."""
    subnet_id: syntax.SubnetId
    """The one subnet of the group (EFA traffic does not cross subnets)."""
    node_role_arn: syntax.RoleArn | None = None
    """IAM role the nodes run as (managed node groups; required there)."""
    ami_type: AmiType = "AL2023_x86_64_NVIDIA"
    """EKS AMI type of the nodes (default ``AL2023_x86_64_NVIDIA``); decides how the kubelet topology is written (nodeadm or Bottlerocket settings)."""
    capacity_type: CapacityType = "ON_DEMAND"
    """``ON_DEMAND`` (default), ``SPOT`` or ``CAPACITY_BLOCK``."""
    capacity_reservation_id: syntax.CapacityReservationId | None = None
    """On-Demand Capacity Reservation or Capacity Block to launch into."""
    placement_group: PlacementGroupSpec = Field(default_factory=PlacementGroupSpec)
    """Default ``create``; ``none`` when a capacity reservation or Capacity Block is targeted."""
    scaling: ScalingSpec | None = None
    """Node count bounds (managed node groups; required there)."""
    provisioner: Provisioner | None = None
    """Who launches the nodes: an EKS ``managedNodeGroup`` (default, also when absent) or ``karpenter`` (an
    EC2NodeClass and a NodePool planned from the same instance facts). Absent stays absent in dumps, so a
    stack that never says it renders as before."""
    karpenter: KarpenterSpec | None = None
    """Karpenter's settings (``provisioner: karpenter`` only)."""
    efa_layout: EfaLayout = "recommended"
    """``recommended`` (default: the primary ``interface`` plus ``efa-only`` interfaces, one VPC address per node) or ``legacy`` (what eksctl and terraform-aws-eks generate: every EFA an ``efa`` interface that consumes a VPC address)."""
    efa_card_indices: list[int] | None = None
    """Network cards that carry an EFA (default: as many as the type allows)."""
    cluster_security_group_id: syntax.SecurityGroupId | None = None
    """The EKS cluster security group (``aws eks describe-cluster --query
    cluster.resourcesVpcConfig.clusterSecurityGroupId``), attached to every interface beside the EFA group.
    EKS adds it only to a launch template that names no interfaces or groups, and the EFA launch template names
    both, so without it the nodes cannot reach the control plane and never join. Required unless
    ``securityGroupIds`` lists it."""
    security_group_ids: list[syntax.SecurityGroupId] = Field(default_factory=list, max_length=4)
    """Extra security groups attached to every interface (the cluster security group, when not given as
    ``clusterSecurityGroupId``)."""
    root_volume: RootVolumeSpec = Field(default_factory=RootVolumeSpec)
    """The node's encrypted gp3 volume."""
    labels: syntax.EksLabels = Field(default_factory=dict)
    """Kubernetes labels the node group puts on its nodes (EKS node-group labels)."""
    taints: list[Annotated[Taint, AfterValidator(eks_taint)]] = Field(default_factory=list, max_length=50)
    """Taints of the group's nodes, in EKS spelling (``NO_SCHEDULE``), as the node-group API takes them."""
    tags: syntax.AwsTags = Field(default_factory=dict, max_length=40)
    """AWS tags of the node group and what is created with it (launch template, security group, instances, volumes, interfaces)."""
    release_version: syntax.PlainText | None = Field(default=None, max_length=64)
    """EKS AMI release version; the latest for ``kubernetesVersion`` when absent."""
    kubernetes_version: syntax.KubernetesVersion | None = None
    """Kubernetes version of the nodes; the cluster's when absent."""

    @model_validator(mode="before")
    @classmethod
    def _refuse_subnet_lists_and_imply_placement(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        for key in ("subnetIds", "subnet_ids", "subnets"):
            if key in data:
                raise ValueError(
                    f"{key}: an EFA node group takes exactly one subnet as subnetId ({ONE_SUBNET_REASON})"
                )
        has_placement = "placementGroup" in data or "placement_group" in data
        targets_reservation = bool(data.get("capacityReservationId") or data.get("capacity_reservation_id"))
        capacity_block = (data.get("capacityType") or data.get("capacity_type")) == "CAPACITY_BLOCK"
        if not has_placement and (targets_reservation or capacity_block):
            # A group of its own would keep reserved instances from launching (eksctl#7949).
            data = {**data, "placementGroup": {"mode": "none"}}
        return data

    @field_validator("subnet_id", mode="before")
    @classmethod
    def _one_subnet(cls, value: Any) -> Any:
        if isinstance(value, (list, tuple)):
            raise ValueError(
                f"subnetId takes exactly one subnet, not a list of {len(value)} ({ONE_SUBNET_REASON})"
            )
        return value

    @field_validator("instance_types")
    @classmethod
    def _distinct_types(cls, types: list[str]) -> list[str]:
        if len(set(types)) != len(types):
            raise ValueError("instanceTypes lists a type more than once")
        return types

    @field_validator("efa_card_indices")
    @classmethod
    def _card_indices(cls, indices: list[int] | None) -> list[int] | None:
        if indices is None:
            return None
        if not indices or any(not 0 <= index < MAX_NETWORK_CARDS for index in indices) or len(set(indices)) != len(indices):
            raise ValueError(f"efaCardIndices must be a non-empty list of distinct card indices from 0 to {MAX_NETWORK_CARDS - 1}")
        return sorted(indices)

    @field_validator("tags")
    @classmethod
    def _no_cluster_tag(cls, tags: dict[str, str]) -> dict[str, str]:
        problem = cluster_tag_problem(tags)
        if problem:
            raise ValueError(problem)
        return tags

    @model_validator(mode="wrap")
    @classmethod
    def _provisioner_fields(cls, data: Any, handler: ModelWrapValidatorHandler["AwsNodeGroupSpec"]) -> "AwsNodeGroupSpec":
        # Reported at the field that does not belong (or is missing), together with every other field error.
        problems = provisioner_problems(data) if isinstance(data, dict) else []
        details = [InitErrorDetails(type=PydanticCustomError("provisioner", message), loc=tuple(field.split(".")),
                                    input=data)
                   for field, message in problems]
        try:
            spec = handler(data)
        except ValidationError as error:
            if not details:
                raise
            raise ValidationError.from_exception_data(cls.__name__, [
                *(InitErrorDetails(type=e["type"], loc=e["loc"], input=e["input"], ctx=e.get("ctx") or {})  # type: ignore[typeddict-item]
                  for e in error.errors(include_url=False)), *details]) from None
        if details:
            raise ValidationError.from_exception_data(cls.__name__, details)
        return spec

    @model_validator(mode="after")
    def _capacity_rules(self) -> "AwsNodeGroupSpec":
        reservation = self.capacity_reservation_id
        if self.capacity_type == "CAPACITY_BLOCK" and not reservation:
            raise ValueError("capacityReservationId is required when capacityType is CAPACITY_BLOCK (the block's id)")
        if self.capacity_type == "SPOT" and reservation:
            raise ValueError("capacityReservationId cannot be combined with capacityType SPOT")
        mode = self.placement_group.mode
        if reservation and mode in ("create", "domain"):
            raise ValueError(
                f"placementGroup.mode: '{mode}' conflicts with capacityReservationId; a new placement group keeps "
                "reserved instances from launching — use 'none' (or 'existing' for a reservation made in a group)"
            )
        if self.capacity_type == "CAPACITY_BLOCK" and mode != "none":
            raise ValueError("placementGroup.mode must be 'none' for capacityType CAPACITY_BLOCK (AWS places the block)")
        return self

    @property
    def interface_security_group_ids(self) -> list[str]:
        """The groups every interface carries beside the EFA group: the cluster group first, then the extras."""
        extra = [group for group in self.security_group_ids if group != self.cluster_security_group_id]
        return [self.cluster_security_group_id, *extra] if self.cluster_security_group_id else extra

    @property
    def is_karpenter(self) -> bool:
        """True when Karpenter, not an EKS managed node group, launches the nodes."""
        return self.provisioner == "karpenter"

    @property
    def ami_family(self) -> Literal["al2023", "bottlerocket"]:
        """``bottlerocket`` or ``al2023``: decides user-data format and volume layout."""
        return "bottlerocket" if self.ami_type.startswith("BOTTLEROCKET") else "al2023"


_SNAKE = {"nodeRoleArn": "node_role_arn", "releaseVersion": "release_version", "kubernetesVersion": "kubernetes_version",
          "scaling": "scaling", "karpenter": "karpenter"}


EKS_LAUNCH_TEMPLATE_SECURITY_GROUPS = "https://docs.aws.amazon.com/eks/latest/userguide/launch-templates.html"
"""EKS "Customize managed nodes with launch templates", Security groups: EKS attaches the cluster security group
only when the launch template specifies no network interfaces or security groups."""


def cluster_security_group_problem(spec: "AwsNodeGroupSpec") -> str | None:
    """An EFA launch template (or EC2NodeClass) names its interfaces and groups, so EKS does not add the cluster
    security group: a stack's pool must name it, or the nodes never join the cluster."""
    if spec.interface_security_group_ids:
        return None
    return ("clusterSecurityGroupId: required: the EFA launch template names every interface and its security groups, so EKS does not "
             "add the cluster security group and the nodes could not reach the control plane (they never join); "
             "give it here (aws eks describe-cluster --name <cluster> --query "
             f"cluster.resourcesVpcConfig.clusterSecurityGroupId), or list it in securityGroupIds "
             f"({EKS_LAUNCH_TEMPLATE_SECURITY_GROUPS})")


def provisioner_problems(data: dict[str, Any]) -> list[tuple[str, str]]:
    """``(field, reason)`` for settings of the other provisioner, and for what the chosen one needs but lacks.

    ``data`` is a pool's ``aws`` block as written (camelCase or snake_case keys).
    """
    def given(key: str) -> bool:
        return data.get(key) is not None or data.get(_SNAKE[key]) is not None

    provisioner = data.get("provisioner") or "managedNodeGroup"
    if provisioner == "karpenter":
        problems = [(key, f"a managed-node-group setting, not used by provisioner karpenter ({why})")
                    for key, why in NODE_GROUP_ONLY_FIELDS.items() if given(key)]
        if not given("karpenter"):
            problems.append(("karpenter", "provisioner karpenter needs its settings, at least karpenter.nodeRole "
                                          "(the IAM role name of the nodes)"))
        problems.extend(_karpenter_value_problems(data))
        return problems
    if provisioner != "managedNodeGroup":
        return []  # the provisioner field itself is refused
    problems = []
    if given("karpenter"):
        problems.append(("karpenter", "Karpenter settings on a managed node group; set provisioner: karpenter or "
                                      "remove them"))
    problems.extend((key, "Field required for a managed node group (provisioner managedNodeGroup)")
                    for key in ("nodeRoleArn", "scaling") if not given(key))
    return problems


# karpenter.k8s.aws_ec2nodeclasses.yaml (v1.14.1), spec.tags x-kubernetes-validations: the EC2NodeClass is
# refused by the API server when a tag key is one of these (or starts with 'kubernetes.io/cluster').
KARPENTER_RESTRICTED_TAG_KEYS = ("eks:eks-cluster-name", "karpenter.sh/nodepool", "karpenter.sh/nodeclaim",
                                 "karpenter.k8s.aws/ec2nodeclass")
KARPENTER_RESTRICTED_TAG_PREFIX = "kubernetes.io/cluster"
_AL2023_AMI_VERSION = re.compile(r"v[0-9]{8}", re.ASCII)
_BOTTLEROCKET_AMI_VERSION = re.compile(r"v?[0-9]+\.[0-9]+\.[0-9]+", re.ASCII)


def karpenter_tag_problems(tags: Any) -> list[str]:
    """Tag keys the EC2NodeClass CEL rules refuse (``spec.tags``), each with the rule's message."""
    if not isinstance(tags, dict):
        return []
    return [f"{key!r} is a tag Karpenter sets itself; the EC2NodeClass refuses it (CEL of "
            f"karpenter.k8s.aws_ec2nodeclasses.yaml spec.tags: 'tag contains a restricted tag matching "
            f"{KARPENTER_RESTRICTED_TAG_PREFIX + '/' if key.startswith(KARPENTER_RESTRICTED_TAG_PREFIX) else key}')"
            for key in sorted(k for k in tags if isinstance(k, str))
            if key in KARPENTER_RESTRICTED_TAG_KEYS or key.startswith(KARPENTER_RESTRICTED_TAG_PREFIX)]


def _karpenter_value_problems(data: dict[str, Any]) -> list[tuple[str, str]]:
    """Values of a Karpenter pool that Karpenter refuses after the apply: restricted tags, an AMI version of
    the other AMI family's format."""
    problems = [("tags", problem) for problem in karpenter_tag_problems(data.get("tags"))]
    settings = data.get("karpenter")
    version = settings.get("amiVersion", settings.get("ami_version")) if isinstance(settings, dict) else None
    ami_type = data.get("amiType", data.get("ami_type")) or "AL2023_x86_64_NVIDIA"
    if isinstance(version, str) and version != "latest" and isinstance(ami_type, str):
        if ami_type.startswith("BOTTLEROCKET") and not _BOTTLEROCKET_AMI_VERSION.fullmatch(version):
            problems.append(("karpenter.amiVersion", f"{version!r} is not a Bottlerocket release (v1.20.3); "
                             f"amiType {ami_type} takes the alias bottlerocket@<version>"))
        elif not ami_type.startswith("BOTTLEROCKET") and not _AL2023_AMI_VERSION.fullmatch(version):
            problems.append(("karpenter.amiVersion", f"{version!r} is not an AL2023 AMI release (dated, v20260801); "
                             f"amiType {ami_type} takes the alias al2023@<version>"))
    return problems


def karpenter_version(text: str) -> tuple[int, ...]:
    """``"v1.14.1"`` -> ``(1, 14, 1)``."""
    return tuple(int(part) for part in text.lstrip("v").split("."))
