"""``EfaNodeGroup``: an EFA-enabled EKS managed node group with its launch template, EFA security
group, self rules and (optionally) cluster placement group.

Everything is checked before the first resource is registered -- the configuration, the instance
facts, the EFA interface plan and the user data -- so a bad input registers nothing. The resource
inputs come from ``gpu_fabric.aws.node_group``, the same builders the policy pack reads.
"""

from __future__ import annotations

from typing import Any, Collection, Mapping, Optional, TypedDict

import pulumi
import pulumi_aws as aws
from pydantic import ValidationError

from gpu_fabric.aws import to_pulumi_kwargs
from gpu_fabric.aws.node_group import (
    NODE_GROUP_IGNORE_CHANGES,
    efa_security_group_inputs,
    efa_self_egress_rule_inputs,
    efa_self_ingress_rule_inputs,
    launch_template_inputs,
    node_group_inputs,
    node_group_resource_name,
    node_labels,
    placement_group_inputs,
    plan_node_group,
)
from gpu_fabric.aws.user_data import to_base64, user_data_for_ami
from gpu_fabric.catalog import InstanceCatalog, default_catalog
from gpu_fabric.spec.aws import AwsNodeGroupSpec
from gpu_fabric.spec.base import ConfigError, SpecModel
from gpu_fabric.topology import KubeletTopology

TYPE_TOKEN = "gpu-fabric:index:EfaNodeGroup"

# Keys of EfaNodeGroupArgs that are not AwsNodeGroupSpec fields (both spellings).
_COMPONENT_KEYS = {"topology": "topology", "pool_labels": "pool_labels", "poolLabels": "pool_labels"}


class EfaNodeGroupArgs(TypedDict, total=False):
    """Inputs of ``EfaNodeGroup``; keys may be snake_case or camelCase (the spec's aliases)."""

    cluster_name: str
    """Name of the existing EKS cluster."""
    vpc_id: str
    """VPC of the cluster; the EFA security group is created in it."""
    instance_types: list[str]
    """EC2 instance types; all must support EFA and yield the same interface plan."""
    availability_zone: str
    """The group's one availability zone."""
    subnet_id: str
    """The group's one subnet (in ``availability_zone``)."""
    node_role_arn: str
    """IAM role of the nodes."""
    ami_type: str
    """``AL2023_x86_64_NVIDIA`` (default), ``AL2023_ARM_64_NVIDIA``, ``BOTTLEROCKET_x86_64_NVIDIA`` or ``BOTTLEROCKET_ARM_64_NVIDIA``."""
    capacity_type: str
    """``ON_DEMAND`` (default), ``SPOT`` or ``CAPACITY_BLOCK``."""
    capacity_reservation_id: str
    """Capacity reservation or Capacity Block to launch into."""
    placement_group: dict
    """``{mode: create|existing|none, name?}``; ``none`` is implied with a reservation or Capacity Block."""
    scaling: dict
    """``{minSize, maxSize, desiredSize?}``; the desired size is ignored after creation."""
    efa_layout: str
    """``recommended`` (default) or ``legacy`` interface layout."""
    efa_card_indices: list[int]
    """Network cards that carry an EFA (default: as many as the type allows)."""
    security_group_ids: list[str]
    """Extra security groups for every interface (for example the cluster security group)."""
    root_volume: dict
    """``{sizeGiB: 200, kmsKeyId?}``: the encrypted gp3 volume."""
    labels: dict[str, str]
    """Node labels (``vpc.amazonaws.com/efa.present: "true"`` is always added)."""
    taints: list[dict]
    """Node taints ``{key, value?, effect: NO_SCHEDULE|NO_EXECUTE|PREFER_NO_SCHEDULE}``."""
    tags: dict[str, str]
    """AWS tags of every resource (``kubernetes.io/cluster/*`` is refused)."""
    release_version: str
    """EKS AMI release version."""
    kubernetes_version: str
    """Kubernetes version of the nodes."""
    topology: dict
    """kubelet topology settings (``KubeletTopology``); default restricted / container."""
    pool_labels: dict[str, str]
    """Labels of the fabric pool, added to ``labels``."""


def _validated(model: type[SpecModel], data: Any, prefix: tuple[str, ...] = ()) -> Any:
    if isinstance(data, model):
        return data
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise ConfigError.from_validation_error(error, prefix) from None


def split_args(args: Mapping[str, Any] | AwsNodeGroupSpec) -> tuple[AwsNodeGroupSpec, KubeletTopology, dict[str, str]]:
    """Validate ``EfaNodeGroupArgs`` into the node-group spec, the topology and the pool labels."""
    if isinstance(args, AwsNodeGroupSpec):
        return args, KubeletTopology.fabric_default(), {}
    spec_fields = {key: value for key, value in args.items() if key not in _COMPONENT_KEYS}
    extra = {_COMPONENT_KEYS[key]: value for key, value in args.items() if key in _COMPONENT_KEYS}
    spec = _validated(AwsNodeGroupSpec, spec_fields)
    topology = _validated(KubeletTopology, extra.get("topology") or {}, ("topology",))
    pool_labels = dict(extra.get("pool_labels") or {})
    conflicts = sorted(key for key in pool_labels if key in spec.labels and spec.labels[key] != pool_labels[key])
    if conflicts:
        raise ConfigError([("poolLabels", f"labels {conflicts} are set differently in labels and poolLabels")])
    return spec, topology, pool_labels


class EfaNodeGroup(pulumi.ComponentResource):
    """An EKS managed node group whose nodes carry every EFA their instance type offers."""

    node_group_name: pulumi.Output[str]
    """Name of the EKS node group."""
    launch_template_id: pulumi.Output[str]
    """Id of the launch template carrying the EFA interfaces."""
    security_group_id: pulumi.Output[str]
    """Id of the EFA security group (all protocols to and from itself)."""
    placement_group_name: pulumi.Output[Optional[str]]
    """Name of the cluster placement group, or ``None`` when the group uses none."""
    interface_plan: list[dict]
    """The launch template's interfaces: ``networkCardIndex``, ``deviceIndex``, ``interfaceType``."""

    def __init__(
        self,
        name: str,
        args: EfaNodeGroupArgs,
        opts: Optional[pulumi.ResourceOptions] = None,
        *,
        catalog: InstanceCatalog | None = None,
        offered_availability_zones: Mapping[str, Collection[str]] | None = None,
    ) -> None:
        # Everything that can fail runs before the component registers, so nothing half-exists.
        spec, topology, pool_labels = split_args(args)
        labels = node_labels({**spec.labels, **pool_labels})
        infos = (catalog or default_catalog()).describe(spec.instance_types)
        plan = plan_node_group(spec, infos, offered_availability_zones=offered_availability_zones)
        taints = [taint.model_dump(exclude_none=True) for taint in spec.taints]
        user_data = user_data_for_ami(spec.ami_type, topology, labels=labels, taints=taints)

        super().__init__(TYPE_TOKEN, name, {}, opts)
        child = pulumi.ResourceOptions(parent=self)
        tags = dict(spec.tags)

        security_group = aws.ec2.SecurityGroup(
            f"{name}-efa-sg", **to_pulumi_kwargs(efa_security_group_inputs(name, spec.vpc_id, tags)), opts=child
        )
        ingress = aws.vpc.SecurityGroupIngressRule(
            f"{name}-efa-sg-self-ingress", **to_pulumi_kwargs(efa_self_ingress_rule_inputs(security_group.id, tags)), opts=child
        )
        egress = aws.vpc.SecurityGroupEgressRule(
            f"{name}-efa-sg-self-egress", **to_pulumi_kwargs(efa_self_egress_rule_inputs(security_group.id, tags)), opts=child
        )

        placement_name: Any = None
        if spec.placement_group.mode == "create":
            placement = aws.ec2.PlacementGroup(
                f"{name}-placement", **to_pulumi_kwargs(placement_group_inputs(tags=tags)), opts=child
            )
            placement_name = placement.name
        elif spec.placement_group.mode == "existing":
            placement_name = spec.placement_group.name

        single_type = spec.instance_types[0] if len(spec.instance_types) == 1 else None
        launch_template = aws.ec2.LaunchTemplate(
            f"{name}-lt",
            **to_pulumi_kwargs(
                launch_template_inputs(
                    name,
                    single_type,
                    plan,
                    [security_group.id, *spec.security_group_ids],
                    to_base64(user_data),
                    placement_group_name=placement_name,
                    capacity_reservation_id=spec.capacity_reservation_id,
                    capacity_block=spec.capacity_type == "CAPACITY_BLOCK",
                    root_volume=spec.root_volume,
                    tags=tags,
                    ami_family=spec.ami_family,
                )
            ),
            opts=child,
        )

        node_group = aws.eks.NodeGroup(
            node_group_resource_name(name),  # "<name>-ng", or a short stable name EKS accepts
            **to_pulumi_kwargs(
                node_group_inputs(
                    cluster_name=spec.cluster_name,
                    node_role_arn=spec.node_role_arn,
                    subnet_ids=[spec.subnet_id],
                    ami_type=spec.ami_type,
                    capacity_type=spec.capacity_type,
                    launch_template_id=launch_template.id,
                    launch_template_version=launch_template.latest_version.apply(str),
                    min_size=spec.scaling.min_size,
                    max_size=spec.scaling.max_size,
                    desired_size=spec.scaling.initial_size,
                    labels=labels,
                    taints=taints,
                    instance_types=None if single_type else spec.instance_types,
                    tags=tags,
                    release_version=spec.release_version,
                    kubernetes_version=spec.kubernetes_version,
                )
            ),
            # Nodes must not boot before EFA traffic between them is allowed.
            opts=pulumi.ResourceOptions(
                parent=self, ignore_changes=list(NODE_GROUP_IGNORE_CHANGES), depends_on=[ingress, egress]
            ),
        )

        self.node_group_name = node_group.node_group_name
        self.launch_template_id = launch_template.id
        self.security_group_id = security_group.id
        self.placement_group_name = pulumi.Output.from_input(placement_name)
        self.interface_plan = [interface.to_launch_template() for interface in plan]
        self.register_outputs(
            {
                "nodeGroupName": self.node_group_name,
                "launchTemplateId": self.launch_template_id,
                "securityGroupId": self.security_group_id,
                "placementGroupName": self.placement_group_name,
                "interfacePlan": self.interface_plan,
            }
        )
