"""``EfaNodeGroup``: an EFA-enabled EKS managed node group with its launch template, EFA security
group, self rules and (optionally) cluster placement group.

Everything is checked before the first resource is registered -- the configuration, the instance
facts, the EFA interface plan and the user data -- so a bad input registers nothing. The resource
inputs come from ``gpu_fabric.aws.node_group``, the same builders the policy pack reads.
"""

from dataclasses import dataclass
from typing import Any, Callable, Collection, Mapping, Optional

import pulumi
import pulumi_aws as aws
from pydantic import ValidationError

from gpu_fabric.aws import to_pulumi_kwargs
from gpu_fabric.aws.node_group import (
    NODE_GROUP_IGNORE_CHANGES,
    launch_template_inputs,
    node_group_inputs,
    node_group_resource_name,
    node_labels,
    plan_node_group,
)
from gpu_fabric.aws.user_data import to_base64, user_data_for_ami
from gpu_fabric.aws.catalog.types import InstanceCatalog
from gpu_fabric.aws.efa import PlannedInterface
from gpu_fabric.resources.aws_deferrable import AWS_NODES_DEFERRABLE
from gpu_fabric.resources.args import AwsNodesArgs, KubeletTopologyArgs, Required, ScalingArgs
from gpu_fabric.resources.efa_network import (
    NetworkInterfacePlan,
    node_placement_inputs,
    refuse_domain_placement,
    register_efa_network,
)
from gpu_fabric.resources.inputs import ANY, DeferredInputs, InvalidInputError
from gpu_fabric.resources.outputs import register_declared_outputs
from gpu_fabric.resources.stack_catalog import stack_catalog
from gpu_fabric.config.node_group import AwsNodeGroupSpec
from gpu_fabric.config.base import ConfigError, SpecModel
from gpu_fabric.config.topology import KubeletTopology, bottlerocket_problems

TYPE_TOKEN = "gpu-fabric:index:EfaNodeGroup"

# Keys of EfaNodeGroupArgs that are not AwsNodeGroupSpec fields (both spellings).
_COMPONENT_KEYS = {"topology": "topology", "pool_labels": "pool_labels", "poolLabels": "pool_labels",
                   "efa_security_group_id": "efa_security_group_id", "efaSecurityGroupId": "efa_security_group_id"}

DEFERRABLE: tuple[tuple[Any, ...], ...] = AWS_NODES_DEFERRABLE
"""Argument paths that may be ``Output``s (values other resources produce)."""

PLAIN_REASONS = {
    "instance_types": "the instance types decide the launch template's EFA interfaces",
    "ami_type": "the AMI type decides the user-data format and the volume layout",
    "capacity_type": "the capacity type decides the placement and market options",
    "placement_group": "the mode decides whether a placement group is created",
    "scaling": "the bounds are checked against each other before registration",
    "efa_layout": "the layout decides the launch template's interfaces",
    "efa_card_indices": "the cards decide the launch template's interfaces",
    "security_group_ids": "the list decides every interface's groups; its items may be Outputs",
    "root_volume": "the size decides the block device mappings",
    "labels": "labels are written into the user data",
    "taints": "taints are written into the user data",
    "tags": "tag keys are checked (kubernetes.io/cluster/* is refused)",
    "topology": "the topology is written into the user data",
    "pool_labels": "labels are written into the user data",
}
"""Why each plain argument must be known at construction."""


class EfaNodeGroupArgs(AwsNodesArgs, total=False):
    """Inputs of ``EfaNodeGroup``: the node group, plus the pool's kubelet topology and labels."""

    node_role_arn: Required[pulumi.Input[str]]
    """IAM role the nodes run as (for example ``role.arn`` of an ``aws.iam.Role``)."""
    scaling: Required[ScalingArgs]
    """Node count bounds."""
    topology: KubeletTopologyArgs
    """kubelet topology settings; default ``restricted`` / ``container``. Plain: written into the user data."""
    pool_labels: Mapping[str, str]
    """Labels of the fabric pool, added to ``labels``. Plain: written into the user data."""
    efa_security_group_id: pulumi.Input[str]
    """An EFA security group shared with the other node groups of an EFA domain (``EfaDomain``), put on
    every interface instead of a group of the node group's own. It must allow all traffic to and from
    itself; pass an id that resolves only once those rules exist (``EfaDomain.security_group_id`` does)."""


def _validated(model: type[SpecModel], data: Any, prefix: tuple[str, ...] = ()) -> Any:
    if isinstance(data, model):
        return data
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise ConfigError.from_validation_error(error, prefix) from None


def split_args(args: Mapping[str, Any], component_keys: Mapping[str, str] = _COMPONENT_KEYS,
               ) -> tuple[AwsNodeGroupSpec, KubeletTopology, dict[str, str]]:
    """Validate ``EfaNodeGroupArgs`` into the node-group spec, the topology and the pool labels.

    ``component_keys`` maps the component's own keys (both spellings) to their snake_case names.
    """
    spec_fields = {key: value for key, value in args.items() if key not in component_keys}
    extra = {component_keys[key]: value for key, value in args.items() if key in component_keys}
    spec = _validated(AwsNodeGroupSpec, spec_fields)
    topology = _validated(KubeletTopology, extra.get("topology") or {}, ("topology",))
    pool_labels = dict(extra.get("pool_labels") or {})
    conflicts = sorted(key for key in pool_labels if key in spec.labels and spec.labels[key] != pool_labels[key])
    if conflicts:
        raise ConfigError([("pool_labels", f"labels {conflicts} are set differently in labels and poolLabels")])
    return spec, topology, pool_labels


@dataclass(frozen=True)
class NodeGroupPlan:
    """Everything checked before registration: the spec, its interface plan, labels, taints and user data."""

    spec: AwsNodeGroupSpec
    interfaces: list[PlannedInterface]
    labels: dict[str, str]
    taints: list[dict[str, Any]]
    user_data: str


def plan_efa_node_group(
    args: Mapping[str, Any],
    catalog: InstanceCatalog,
    offered_availability_zones: Optional[Mapping[str, Collection[str]]] = None,
    *,
    is_deferred: Callable[[Any], bool] = lambda value: False,
) -> NodeGroupPlan:
    """Validate ``EfaNodeGroupArgs`` and plan the group; raises ``ConfigError``/``ValueError`` naming the problem.

    ``is_deferred`` tells values that stand for ``Output``s still unknown.
    """
    spec, topology, pool_labels = split_args(args)
    if spec.is_karpenter or spec.scaling is None or spec.node_role_arn is None:
        raise ConfigError([("provisioner", "EfaNodeGroup builds an EKS managed node group; a pool Karpenter "
                            "launches is a KarpenterEfaPool")])
    if spec.ami_family == "bottlerocket":
        # Refused at the property before the user data renders (the rendering refuses the same settings).
        problems = bottlerocket_problems(topology.policy_options, topology.cpu_manager_policy_options)
        if problems:
            raise ConfigError([(f"topology.{field}", f"{message} (amiType {spec.ami_type})") for field, message in problems])
    labels = node_labels({**spec.labels, **pool_labels})
    infos = catalog.describe(spec.instance_types)
    # An AZ still unknown is compared with the offerings when it resolves (this same function runs again).
    offered = None if is_deferred(spec.availability_zone) else offered_availability_zones
    interfaces = plan_node_group(spec, infos, offered_availability_zones=offered)
    taints = [taint.model_dump(exclude_none=True) for taint in spec.taints]
    user_data = user_data_for_ami(spec.ami_type, topology, labels=labels, taints=taints)
    return NodeGroupPlan(spec, interfaces, labels, taints, user_data)


class EfaNodeGroup(pulumi.ComponentResource):
    """An EKS managed node group whose nodes carry every EFA their instance type offers."""

    node_group: pulumi.Output[aws.eks.NodeGroup]
    """The EKS managed node group."""
    launch_template: pulumi.Output[aws.ec2.LaunchTemplate]
    """The launch template carrying the EFA interfaces."""
    security_group: pulumi.Output[Optional[aws.ec2.SecurityGroup]]
    """The node group's own EFA security group (all protocols to and from itself); ``None`` when it uses a
    shared one (``efa_security_group_id``)."""
    placement_group: pulumi.Output[Optional[aws.ec2.PlacementGroup]]
    """The cluster placement group this component created, or ``None`` (existing group, or none)."""
    node_group_name: pulumi.Output[str]
    """Name of the EKS node group."""
    node_group_arn: pulumi.Output[str]
    """ARN of the EKS node group."""
    launch_template_id: pulumi.Output[str]
    """Id of the launch template."""
    launch_template_version: pulumi.Output[int]
    """Latest version of the launch template (the one the node group uses)."""
    security_group_id: pulumi.Output[str]
    """Id of the EFA security group on its interfaces (its own, or the shared one)."""
    placement_group_name: pulumi.Output[Optional[str]]
    """Name of the placement group the nodes launch into, or ``None`` when they use none."""
    interface_plan: pulumi.Output[list[NetworkInterfacePlan]]
    """The launch template's interfaces, in order."""

    def __init__(
        self,
        name: str,
        args: EfaNodeGroupArgs,
        opts: Optional[pulumi.ResourceOptions] = None,
        *,
        catalog: Optional[InstanceCatalog] = None,
        offered_availability_zones: Optional[Mapping[str, Collection[str]]] = None,
    ) -> None:
        # Everything that can fail runs before the component registers, so nothing half-exists.
        # Outputs (a cluster's name, a subnet's id ...) are checked again, by the same planner, when
        # they resolve; the resources that read them wait for that check.
        inputs = DeferredInputs("EfaNodeGroup", args, EfaNodeGroupArgs, DEFERRABLE, PLAIN_REASONS)
        catalog = catalog or stack_catalog(opts)

        def plan_with(values: Mapping[str, Any]) -> NodeGroupPlan:
            return plan_efa_node_group(values, catalog, offered_availability_zones, is_deferred=inputs.is_deferred)

        # A refusal is an InvalidInputError (a pulumi.InputPropertiesError) naming EfaNodeGroup and the property.
        plan = inputs.validate(plan_with, default_path="instance_types")
        inputs.check_on_resolve(plan_with)
        spec = plan.spec
        scaling, node_role_arn = spec.scaling, spec.node_role_arn
        if scaling is None or node_role_arn is None:  # plan_efa_node_group refuses them missing
            raise InvalidInputError([(key, "required for an EKS managed node group") for key, value in
                                     (("scaling", scaling), ("node_role_arn", node_role_arn)) if value is None], "EfaNodeGroup")

        refuse_domain_placement(spec, "EfaNodeGroup")
        shared_group = inputs.values.get("efa_security_group_id")

        registered_inputs = node_placement_inputs(spec, inputs.is_deferred)
        super().__init__(TYPE_TOKEN, name, registered_inputs, opts)
        child = pulumi.ResourceOptions(parent=self)
        tags = dict(spec.tags)

        def resource_inputs(builder_inputs: Mapping[str, Any]) -> dict[str, Any]:
            return to_pulumi_kwargs(inputs.restore(builder_inputs))

        network = register_efa_network(name, spec, shared_group, child, resource_inputs, inputs.restore)
        rules, group_id, placement_name = network.rules, network.group_id, network.placement_name

        single_type = spec.instance_types[0] if len(spec.instance_types) == 1 else None
        launch_template = aws.ec2.LaunchTemplate(
            f"{name}-lt",
            **resource_inputs(
                launch_template_inputs(
                    name,
                    single_type,
                    plan.interfaces,
                    [group_id, *spec.interface_security_group_ids],
                    to_base64(plan.user_data),
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
            **resource_inputs(
                node_group_inputs(
                    cluster_name=spec.cluster_name,
                    node_role_arn=node_role_arn,
                    subnet_ids=[spec.subnet_id],
                    ami_type=spec.ami_type,
                    capacity_type=spec.capacity_type,
                    launch_template_id=launch_template.id,
                    launch_template_version=launch_template.latest_version.apply(str),
                    min_size=scaling.min_size,
                    max_size=scaling.max_size,
                    desired_size=scaling.initial_size,
                    labels=plan.labels,
                    taints=plan.taints,
                    instance_types=None if single_type else spec.instance_types,
                    tags=tags,
                    release_version=spec.release_version,
                    kubernetes_version=spec.kubernetes_version,
                )
            ),
            # Nodes must not boot before EFA traffic between them is allowed (a shared group's id
            # resolves only after its rules exist, and the launch template waits for it).
            opts=pulumi.ResourceOptions(
                parent=self, ignore_changes=list(NODE_GROUP_IGNORE_CHANGES), depends_on=rules or None
            ),
        )

        self.node_group = pulumi.Output.from_input(node_group)
        self.launch_template = pulumi.Output.from_input(launch_template)
        self.node_group_name = node_group.node_group_name
        self.node_group_arn = node_group.arn
        self.launch_template_id = launch_template.id
        self.launch_template_version = launch_template.latest_version
        network.publish(self, inputs.restore, plan.interfaces)
        register_declared_outputs(self, registered_inputs)
