"""``KarpenterEfaPool``: an EFA pool whose nodes Karpenter launches -- an ``EC2NodeClass`` and a ``NodePool``
planned from the same instance facts and EFA interface plan as ``EfaNodeGroup``, with the EFA security
group (its own, or an EFA domain's) and, optionally, a cluster placement group.

Everything is checked before the first resource is registered: the configuration, the instance facts,
the interface plan, Karpenter's own rules (:mod:`gpu_fabric.aws.karpenter`) and the user data.
"""

from dataclasses import dataclass
from typing import Any, Callable, Collection, Mapping, Optional

import pulumi
import pulumi_aws as aws

from gpu_fabric.aws import to_pulumi_kwargs
from gpu_fabric.aws.catalog.types import InstanceCatalog
from gpu_fabric.aws.efa import PlannedInterface
from gpu_fabric.aws.karpenter import ec2_node_class, karpenter_findings, node_pool
from gpu_fabric.aws.node_group import (
    NodeGroupInputError,
    node_labels,
    plan_node_group,
)
from gpu_fabric.aws.user_data import user_data_for_ami
from gpu_fabric.config.base import ConfigError
from gpu_fabric.config.node_group import MAX_NODES, AwsNodeGroupSpec
from gpu_fabric.config.syntax import dns_subdomain
from gpu_fabric.config.taints import Taint
from gpu_fabric.resources.args import AwsNodesArgs, KarpenterArgs, KubeletTopologyArgs, Required
from gpu_fabric.resources.efa_node_group import DEFERRABLE, split_args
from gpu_fabric.resources.inputs import DeferredInputs, InvalidInputError
from gpu_fabric.resources.efa_network import (
    NetworkInterfacePlan,
    node_placement_inputs,
    refuse_domain_placement,
    register_efa_network,
)
from gpu_fabric.resources.kubernetes_objects import metadata_name, register_manifest
from gpu_fabric.resources.outputs import register_declared_outputs
from gpu_fabric.resources.stack_catalog import stack_catalog

TYPE_TOKEN = "gpu-fabric:index:KarpenterEfaPool"

_COMPONENT_KEYS = {"topology": "topology", "pool_labels": "pool_labels", "poolLabels": "pool_labels",
                   "efa_security_group_id": "efa_security_group_id", "efaSecurityGroupId": "efa_security_group_id",
                   "node_count": "node_count", "nodeCount": "node_count",
                   "object_name": "object_name", "objectName": "object_name"}

PLAIN_REASONS = {
    "instance_types": "the instance types decide the NodeClass's EFA interfaces and the NodePool's requirements",
    "ami_type": "the AMI type decides the AMI alias, the user-data format and the volume layout",
    "capacity_type": "the capacity type decides the NodePool's capacity-type requirement",
    "placement_group": "the mode decides whether a placement group is created",
    "provisioner": "the provisioner decides which resources exist",
    "karpenter": "Karpenter's settings are written into the NodeClass and NodePool",
    "efa_layout": "the layout decides the NodeClass's interfaces",
    "efa_card_indices": "the cards decide the NodeClass's interfaces",
    "security_group_ids": "the list decides the NodeClass's security group terms; its items may be Outputs",
    "root_volume": "the size decides the block device mappings",
    "labels": "labels are written into the NodePool and checked against Karpenter's restricted domains",
    "taints": "taints are written into the NodePool",
    "tags": "tag keys are checked (kubernetes.io/cluster/* is refused)",
    "topology": "the topology is written into the user data",
    "pool_labels": "labels are written into the NodePool",
    "node_count": "the node count sizes the NodePool (limits.nodes, replicas)",
    "object_name": "the name of the NodeClass and NodePool is checked against Kubernetes' name syntax",
}
"""Why each plain argument must be known at construction."""


class KarpenterEfaPoolArgs(AwsNodesArgs, total=False):
    """Inputs of ``KarpenterEfaPool``: the pool's ``aws`` settings with ``provisioner: karpenter``
    (implied when absent), its size, kubelet topology and labels."""

    karpenter: Required[KarpenterArgs]
    """Karpenter's settings: the node role at least. Plain: written into the NodeClass and NodePool."""
    provisioner: str
    """``karpenter`` (the default here). Plain."""
    node_count: Required[int]
    """The pool's size: the NodePool's ``limits.nodes`` (and ``replicas`` with ``karpenter.static``). Plain."""
    object_name: str
    """Name of the EC2NodeClass and NodePool (Karpenter labels each node ``karpenter.sh/nodepool: <name>``);
    default: the component's name. Plain."""
    topology: KubeletTopologyArgs
    """kubelet topology settings; default ``restricted`` / ``container``. Plain: written into the user data."""
    pool_labels: Mapping[str, str]
    """Labels of the fabric pool, added to ``labels``. Plain: written into the NodePool."""
    efa_security_group_id: pulumi.Input[str]
    """An EFA domain's shared security group (``EfaDomain.security_group_id``), selected instead of a group
    of the pool's own."""


@dataclass(frozen=True)
class KarpenterPoolPlan:
    """Everything checked before registration."""

    spec: AwsNodeGroupSpec
    interfaces: list[PlannedInterface]
    labels: dict[str, str]
    taints: list[dict[str, str]]
    user_data: str
    node_count: int
    object_name: str


def _at_field(finding: str) -> tuple[str, str]:
    """``"amiType: ..."`` -> ``("amiType", "...")``; other findings go to ``instanceTypes``."""
    field, colon, message = finding.partition(": ")
    if colon and all(part.isidentifier() for part in field.split(".")):
        return field, message
    return "instanceTypes", finding


def plan_karpenter_pool(
    args: Mapping[str, Any],
    catalog: InstanceCatalog,
    offered_availability_zones: Optional[Mapping[str, Collection[str]]] = None,
    *,
    default_name: str = "",
    is_deferred: Callable[[Any], bool] = lambda value: False,
) -> KarpenterPoolPlan:
    """Validate ``KarpenterEfaPoolArgs`` and plan the pool; raises ``ConfigError`` naming every problem."""
    spec_args = dict(args)
    spec_args.setdefault("provisioner", "karpenter")
    spec, topology, pool_labels = split_args(spec_args, _COMPONENT_KEYS)
    if not spec.is_karpenter:
        raise ConfigError([("provisioner", "KarpenterEfaPool renders Karpenter objects; a managed node group is an "
                            "EfaNodeGroup")])
    extra = {_COMPONENT_KEYS[key]: value for key, value in args.items() if key in _COMPONENT_KEYS}
    node_count = extra.get("node_count")
    if isinstance(node_count, bool) or not isinstance(node_count, int) or not 1 <= node_count <= MAX_NODES:
        raise ConfigError([("node_count", f"the pool's size must be a whole number of nodes from 1 to {MAX_NODES}, "
                            f"got {node_count!r}")])
    object_name = str(extra.get("object_name") or default_name)
    try:
        dns_subdomain(object_name, "objectName")
    except ValueError as error:
        raise ConfigError([("object_name", f"{error}; the NodeClass and NodePool are named after it")]) from None
    labels = node_labels({**spec.labels, **pool_labels})
    infos = catalog.describe(spec.instance_types)
    offered = None if is_deferred(spec.availability_zone) else offered_availability_zones
    try:
        interfaces = plan_node_group(spec, infos, offered_availability_zones=offered)
    except NodeGroupInputError as error:
        raise ConfigError([_at_field(finding) for finding in error.problems]) from None
    findings = karpenter_findings(spec, interfaces, labels)
    if findings:
        raise ConfigError([_at_field(finding) for finding in findings])
    taints = [Taint.model_validate(taint.model_dump()).as_dict() for taint in spec.taints]
    # Karpenter writes the NodePool's labels and taints into the kubelet itself; the user data carries
    # only what Karpenter does not: the kubelet topology.
    user_data = user_data_for_ami(spec.ami_type, topology)
    return KarpenterPoolPlan(spec, interfaces, labels, taints, user_data, node_count, object_name)


class KarpenterEfaPool(pulumi.ComponentResource):
    """An EC2NodeClass and NodePool whose nodes carry the EFA layout EC2 recommends for their instance type."""

    security_group: pulumi.Output[Optional[aws.ec2.SecurityGroup]]
    """The pool's own EFA security group; ``None`` when it selects a shared one."""
    placement_group: pulumi.Output[Optional[aws.ec2.PlacementGroup]]
    """The cluster placement group this component created, or ``None``."""
    node_class_name: pulumi.Output[str]
    """Name of the EC2NodeClass."""
    node_pool_name: pulumi.Output[str]
    """Name of the NodePool (the nodes' ``karpenter.sh/nodepool`` label)."""
    security_group_id: pulumi.Output[str]
    """Id of the EFA security group the NodeClass selects (its own, or the shared one)."""
    placement_group_name: pulumi.Output[Optional[str]]
    """Name of the placement group the NodeClass selects, or ``None``."""
    interface_plan: pulumi.Output[list[NetworkInterfacePlan]]
    """The NodeClass's interfaces, in order."""

    def __init__(
        self,
        name: str,
        args: KarpenterEfaPoolArgs,
        opts: Optional[pulumi.ResourceOptions] = None,
        *,
        catalog: Optional[InstanceCatalog] = None,
        offered_availability_zones: Optional[Mapping[str, Collection[str]]] = None,
    ) -> None:
        inputs = DeferredInputs("KarpenterEfaPool", args, KarpenterEfaPoolArgs, DEFERRABLE, PLAIN_REASONS)
        catalog = catalog or stack_catalog(opts)

        def plan_with(values: Mapping[str, Any]) -> KarpenterPoolPlan:
            return plan_karpenter_pool(values, catalog, offered_availability_zones, default_name=name,
                                       is_deferred=inputs.is_deferred)

        plan = inputs.validate(plan_with, default_path="instance_types")
        inputs.check_on_resolve(plan_with)
        spec = plan.spec
        refuse_domain_placement(spec, "KarpenterEfaPool")
        shared_group = inputs.values.get("efa_security_group_id")
        karpenter = spec.karpenter
        if karpenter is None:  # the spec refuses provisioner karpenter without its settings
            raise InvalidInputError([("karpenter", "provisioner karpenter needs its settings (karpenter.nodeRole)")],
                                    "KarpenterEfaPool")

        registered_inputs = {**node_placement_inputs(spec, inputs.is_deferred),
                             "karpenter": karpenter.model_dump(by_alias=True, exclude_none=True)}
        super().__init__(TYPE_TOKEN, name, registered_inputs, opts)
        child = pulumi.ResourceOptions(parent=self)

        def resource_inputs(builder_inputs: Mapping[str, Any]) -> dict[str, Any]:
            return to_pulumi_kwargs(inputs.restore(builder_inputs))

        network = register_efa_network(name, spec, shared_group, child, resource_inputs, inputs.restore,
                                       scope="Karpenter pool")
        rules, group_id, placement_name = network.rules, network.group_id, network.placement_name

        node_class_manifest = inputs.restore(ec2_node_class(
            plan.object_name, spec, plan.interfaces, security_group_ids=[group_id, *spec.interface_security_group_ids],
            user_data=plan.user_data, placement_group_name=placement_name))
        # Nodes must not boot before EFA traffic between them is allowed.
        node_class = register_manifest(f"{name}-nodeclass", node_class_manifest,
                                       pulumi.ResourceOptions(parent=self, depends_on=rules or None))
        node_pool_manifest = node_pool(plan.object_name, spec, node_class_name=plan.object_name,
                                       node_count=plan.node_count, labels=plan.labels, taints=plan.taints)
        pool = register_manifest(f"{name}-nodepool", node_pool_manifest,
                                 pulumi.ResourceOptions(parent=self, depends_on=[node_class]))

        # The objects themselves, for Python programs (not outputs: the schema has no type for a generic
        # CustomResource; other languages read the names).
        self.node_class_resource: pulumi.CustomResource = node_class
        """The ``EC2NodeClass`` (karpenter.k8s.aws/v1)."""
        self.node_pool_resource: pulumi.CustomResource = pool
        """The ``NodePool`` (karpenter.sh/v1)."""
        self.node_class_name = metadata_name(node_class)
        self.node_pool_name = metadata_name(pool)
        network.publish(self, inputs.restore, plan.interfaces)
        register_declared_outputs(self, registered_inputs)
