"""Pure builders for an EFA-enabled EKS managed node group, and the checks that precede them.

Every builder returns the engine's camelCase inputs of one resource (what a CrossGuard policy sees
in ``args.props``); values may be ``pulumi.Output``s where they come from other resources (the
security group id, the launch template id), but nothing here imports Pulumi.

Resources and type tokens:

* ``aws:ec2/securityGroup:SecurityGroup`` -- ``efa_security_group_inputs``
* ``aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule`` / ``...EgressRule`` --
  ``efa_self_ingress_rule_inputs`` / ``efa_self_egress_rule_inputs``
* ``aws:ec2/placementGroup:PlacementGroup`` -- ``placement_group_inputs``
* ``aws:ec2/launchTemplate:LaunchTemplate`` -- ``launch_template_inputs``
* ``aws:eks/nodeGroup:NodeGroup`` -- ``node_group_inputs`` (+ ``NODE_GROUP_IGNORE_CHANGES``)
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, Collection, Literal, Mapping, Sequence

from gpu_fabric.config import constants
from gpu_fabric.aws.efa import EfaPlanError, PlannedInterface, plan_group
from gpu_fabric.config.aws_rules import cluster_tag_problem, subnet_count_problem
from gpu_fabric.config.node_group import AwsNodeGroupSpec, RootVolumeSpec

SECURITY_GROUP_TYPE = constants.SECURITY_GROUP_TYPE
INGRESS_RULE_TYPE = constants.INGRESS_RULE_TYPE
EGRESS_RULE_TYPE = constants.EGRESS_RULE_TYPE
PLACEMENT_GROUP_TYPE = constants.PLACEMENT_GROUP_TYPE
LAUNCH_TEMPLATE_TYPE = constants.LAUNCH_TEMPLATE_TYPE
NODE_GROUP_TYPE = constants.NODE_GROUP_TYPE

EFA_PRESENT_LABEL = constants.EFA_PRESENT_LABEL
ALL_PROTOCOLS = "-1"

# Autoscalers (cluster-autoscaler, Karpenter-style tools, operators) own the node count after
# creation; without this every `pulumi up` would try to reset it.
NODE_GROUP_IGNORE_CHANGES: tuple[str, ...] = ("scalingConfig.desiredSize",)

AmiFamily = Literal["al2023", "bottlerocket"]


class NodeGroupInputError(ValueError):
    """The node group cannot be built; ``problems`` lists every reason (each names field or type)."""

    def __init__(self, problems: Sequence[str]):
        self.problems = list(problems)
        super().__init__("invalid EFA node group:\n  " + "\n  ".join(self.problems))


# -- checks -----------------------------------------------------------------------------------------


def ami_architecture(ami_type: str) -> str | None:
    """The EC2 architecture an EKS ``amiType`` runs on (``AL2023_ARM_64_NVIDIA`` -> ``arm64``)."""
    if "ARM_64" in ami_type:
        return "arm64"
    if "x86_64" in ami_type:
        return "x86_64"
    return None


# Pulumi auto-names a node group "<resource name>-<7 random hex>", and EKS takes at most 63 of
# [A-Za-z0-9_-] (CreateNodegroup, nodegroupName), so the resource name keeps to 55 of them.
_NODE_GROUP_RESOURCE_NAME_MAX = 63 - 8
_NOT_EKS_NAME = re.compile(r"[^A-Za-z0-9_-]")


def node_group_resource_name(component_name: str) -> str:
    """The node group's resource name, from which its EKS name is derived: ``<component>-ng``.

    When that is too long for EKS or holds characters EKS refuses (a pool name may contain '.'),
    a short, stable name takes its place: the start of the name and 8 hex digits of its SHA-256.
    """
    name = f"{component_name}-ng"
    if len(name) <= _NODE_GROUP_RESOURCE_NAME_MAX and not _NOT_EKS_NAME.search(name):
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    stem = _NOT_EKS_NAME.sub("-", name)[: _NODE_GROUP_RESOURCE_NAME_MAX - 12].rstrip("-_")
    return f"{stem}-{digest}-ng"


def instance_type_findings(
    instance_types: Sequence[str],
    infos: Mapping[str, Mapping[str, Any]],
    *,
    availability_zone: str,
    offered_availability_zones: Mapping[str, Collection[str]] | None = None,
    ami_type: str | None = None,
) -> list[str]:
    """Every reason the instance types cannot form one EFA node group in ``availability_zone``.

    Each finding starts with the field at fault (``instanceTypes:``, ``amiType:``,
    ``availabilityZone:``). ``infos`` maps names to ``DescribeInstanceTypes`` items; with ``ami_type``
    every type must run the AMI's architecture (``ProcessorInfo.SupportedArchitectures``). ``offered_availability_zones`` maps an
    instance type to the AZs that offer it (``DescribeInstanceTypeOfferings``); when given, a type
    not offered in the group's AZ is a finding.
    """
    findings = []
    ami_arch = ami_architecture(ami_type) if ami_type else None
    for name in instance_types:
        info = infos.get(name)
        if info is None:
            findings.append(f"instanceTypes: {name} has no instance facts")
            continue
        if not (info.get("NetworkInfo") or {}).get("EfaSupported"):
            findings.append(f"instanceTypes: {name} does not support EFA (NetworkInfo.EfaSupported is false)")
        supported = (info.get("ProcessorInfo") or {}).get("SupportedArchitectures") or []
        if ami_arch and supported and ami_arch not in supported:
            findings.append(f"amiType: {ami_type} is an {ami_arch} AMI but {name} runs {', '.join(supported)}")
        if offered_availability_zones is not None:
            offered = offered_availability_zones.get(name, ())
            if availability_zone not in offered:
                zones = ", ".join(sorted(offered)) or "none listed"
                findings.append(f"availabilityZone: {availability_zone} does not offer {name} (offered in: {zones})")
    return findings


def cluster_placement_findings(
    instance_types: Sequence[str], infos: Mapping[str, Mapping[str, Any]], mode: str = "create"
) -> list[str]:
    """Instance types that cannot launch into a cluster placement group.

    ``DescribeInstanceTypes`` lists each type's ``PlacementGroupInfo.SupportedStrategies``; EC2's
    placement-group rules exclude some types from the ``cluster`` strategy (of the EFA-capable types in
    the bundled table, vt1.24xlarge). Types whose facts do not say are not refused.
    """
    findings = []
    for name in instance_types:
        strategies = ((infos.get(name) or {}).get("PlacementGroupInfo") or {}).get("SupportedStrategies")
        if strategies is not None and "cluster" not in strategies:
            findings.append(
                f"placementGroup.mode: {name} cannot launch into a cluster placement group (supported strategies: "
                f"{', '.join(strategies) or 'none'}), so mode '{mode}' cannot place it; use 'none'"
            )
    return findings


def plan_node_group(
    spec: AwsNodeGroupSpec,
    infos: Mapping[str, Mapping[str, Any]],
    *,
    offered_availability_zones: Mapping[str, Collection[str]] | None = None,
) -> list[PlannedInterface]:
    """The one interface plan of the group, or ``NodeGroupInputError`` naming every problem."""
    findings = instance_type_findings(
        spec.instance_types,
        infos,
        availability_zone=spec.availability_zone,
        offered_availability_zones=offered_availability_zones,
        ami_type=spec.ami_type,
    )
    if spec.placement_group.mode in ("create", "domain"):
        findings.extend(cluster_placement_findings(spec.instance_types, infos, spec.placement_group.mode))
    if findings:
        raise NodeGroupInputError(findings)
    try:
        return plan_group(
            [infos[name] for name in spec.instance_types],
            layout=spec.efa_layout,
            efa_card_indices=spec.efa_card_indices,
        )
    except EfaPlanError as error:
        raise NodeGroupInputError([f"instanceTypes {spec.instance_types}: {error}"]) from error


def _refuse_cluster_tags(tags: Mapping[str, str], where: str) -> None:
    problem = cluster_tag_problem(tags)
    if problem:
        raise NodeGroupInputError([f"{where}: {problem}"])


# -- security group ---------------------------------------------------------------------------------


def efa_security_group_inputs(
    name: str, vpc_id: Any, tags: Mapping[str, str] | None = None, scope: str = "node group"
) -> dict[str, Any]:
    """The EFA security group: no inline rules (the self rules are separate resources).

    pulumi-aws removes EC2's default allow-all egress rule from groups it creates, so the group's
    only rules are the two self rules. ``scope`` says whose traffic it carries (``node group`` or
    ``EFA domain``) in its description.
    """
    tags = dict(tags or {})
    _refuse_cluster_tags(tags, "efa security group")
    return {
        "description": f"EFA traffic of {scope} {name}: all protocols to and from itself",
        "vpcId": vpc_id,
        "tags": {**tags, "Name": f"{name}-efa"},
    }


def _self_rule(security_group_id: Any, direction: str, tags: Mapping[str, str] | None) -> dict[str, Any]:
    rule = {
        "securityGroupId": security_group_id,
        "referencedSecurityGroupId": security_group_id,
        "ipProtocol": ALL_PROTOCOLS,
        "description": f"EFA: all protocols {direction} itself",
    }
    if tags:
        rule["tags"] = dict(tags)
    return rule


def efa_self_ingress_rule_inputs(security_group_id: Any, tags: Mapping[str, str] | None = None) -> dict[str, Any]:
    """All protocols in from the EFA security group itself (EFA SRD needs both directions)."""
    return _self_rule(security_group_id, "from", tags)


def efa_self_egress_rule_inputs(security_group_id: Any, tags: Mapping[str, str] | None = None) -> dict[str, Any]:
    """All protocols out to the EFA security group itself; ``egress 0.0.0.0/0`` does not cover EFA."""
    return _self_rule(security_group_id, "to", tags)


# -- placement group --------------------------------------------------------------------------------


def placement_group_inputs(name: str | None = None, tags: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A ``cluster`` placement group; without ``name`` Pulumi auto-names it (safe replacements)."""
    inputs: dict[str, Any] = {"strategy": "cluster"}
    if name:
        inputs["name"] = name
    if tags:
        inputs["tags"] = dict(tags)
    return inputs


# -- launch template --------------------------------------------------------------------------------


def _interface_fields(interface: Any) -> tuple[int, int, str]:
    if isinstance(interface, Mapping):
        return int(interface["networkCardIndex"]), int(interface["deviceIndex"]), str(interface["interfaceType"])
    return interface.network_card_index, interface.device_index, interface.interface_type


def network_interfaces(plan: Sequence[Any], security_group_ids: Sequence[Any]) -> list[dict[str, Any]]:
    """``networkInterfaces`` of the launch template: every interface carries every security group.

    No ``subnetId`` (the node group owns the subnet) and no address keys at all, so ``efa-only``
    interfaces never get one and the others take the subnet's defaults.
    """
    if not security_group_ids:
        raise NodeGroupInputError(["securityGroupIds: every EFA interface needs at least the EFA security group"])
    interfaces = []
    for interface in plan:
        card, device, kind = _interface_fields(interface)
        interfaces.append(
            {
                "networkCardIndex": card,
                "deviceIndex": device,
                "interfaceType": kind,
                "securityGroups": list(security_group_ids),
                "deleteOnTermination": "true",
            }
        )
    return interfaces


def block_device_mappings(ami_family: AmiFamily, size_gib: int, kms_key_id: str | None = None) -> list[dict[str, Any]]:
    """Encrypted gp3 volumes: AL2023 root ``/dev/xvda``; Bottlerocket OS ``/dev/xvda`` + data ``/dev/xvdb``."""

    def ebs(size: int | None) -> dict[str, Any]:
        volume: dict[str, Any] = {"encrypted": "true", "volumeType": "gp3", "deleteOnTermination": "true"}
        if size is not None:
            volume["volumeSize"] = size
        if kms_key_id:
            volume["kmsKeyId"] = kms_key_id
        return volume

    if ami_family == "bottlerocket":
        # The OS volume keeps the AMI's size; images and pods live on the data volume.
        return [{"deviceName": "/dev/xvda", "ebs": ebs(None)}, {"deviceName": "/dev/xvdb", "ebs": ebs(size_gib)}]
    return [{"deviceName": "/dev/xvda", "ebs": ebs(size_gib)}]


def launch_template_inputs(
    name: str,
    instance_type: str | None,
    plan: Sequence[Any],
    security_group_ids: Sequence[Any],
    user_data_b64: str,
    placement_group_name: Any = None,
    capacity_reservation_id: str | None = None,
    capacity_block: bool = False,
    root_volume: RootVolumeSpec | None = None,
    tags: Mapping[str, str] | None = None,
    ami_family: AmiFamily = "al2023",
) -> dict[str, Any]:
    """The launch template of an EFA managed node group.

    ``instance_type`` is ``None`` when the group has several types (they then go on the node
    group); ``root_volume`` defaults to 200 GiB. Security groups live only on the interfaces: a
    launch template that defines interfaces cannot also carry ``vpcSecurityGroupIds``. IMDSv2 is
    required with hop limit 2 so pods behind the node's network namespace can still reach it.
    """
    if capacity_block and not capacity_reservation_id:
        raise NodeGroupInputError(["capacityReservationId: a Capacity Block launch needs the block's reservation id"])
    tags = dict(tags or {})
    root_volume = root_volume or RootVolumeSpec()
    inputs: dict[str, Any] = {
        "description": f"gpu-fabric EFA launch template of node group {name}",
        "networkInterfaces": network_interfaces(plan, security_group_ids),
        "metadataOptions": {"httpTokens": "required", "httpEndpoint": "enabled", "httpPutResponseHopLimit": 2},
        "blockDeviceMappings": block_device_mappings(ami_family, root_volume.size_gib, root_volume.kms_key_id),
        "userData": user_data_b64,
        "updateDefaultVersion": True,
        "tagSpecifications": [
            {"resourceType": kind, "tags": {**tags, "Name": name}} for kind in ("instance", "volume", "network-interface")
        ],
        "tags": tags,
    }
    if instance_type:
        inputs["instanceType"] = instance_type
    if placement_group_name is not None:
        inputs["placement"] = {"groupName": placement_group_name}
    if capacity_reservation_id:
        inputs["capacityReservationSpecification"] = {
            "capacityReservationTarget": {"capacityReservationId": capacity_reservation_id}
        }
    if capacity_block:
        inputs["instanceMarketOptions"] = {"marketType": "capacity-block"}
    return inputs


# -- node group -------------------------------------------------------------------------------------


def node_labels(pool_labels: Mapping[str, str] | None = None) -> dict[str, str]:
    """The pool's labels plus ``vpc.amazonaws.com/efa.present: "true"`` (device plugins select on it)."""
    labels = dict(pool_labels or {})
    if labels.get(EFA_PRESENT_LABEL, "true") != "true":
        raise NodeGroupInputError([f"labels: {EFA_PRESENT_LABEL} is reserved and must be 'true' on an EFA node group"])
    labels[EFA_PRESENT_LABEL] = "true"
    return dict(sorted(labels.items()))


def node_group_inputs(
    *,
    cluster_name: str,
    node_role_arn: str,
    subnet_ids: Sequence[str],
    ami_type: str,
    capacity_type: str,
    launch_template_id: Any,
    launch_template_version: Any,
    min_size: int,
    max_size: int,
    desired_size: int,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, Any]] = (),
    instance_types: Sequence[str] | None = None,
    tags: Mapping[str, str] | None = None,
    release_version: str | None = None,
    kubernetes_version: str | None = None,
) -> dict[str, Any]:
    """``aws.eks.NodeGroup`` inputs; register with ``ignore_changes=NODE_GROUP_IGNORE_CHANGES``.

    ``instance_types`` is set only when the launch template names no type (several types).
    """
    subnet_problem = subnet_count_problem(len(subnet_ids))
    if subnet_problem:
        raise NodeGroupInputError([f"subnetId: {subnet_problem}"])
    inputs: dict[str, Any] = {
        "clusterName": cluster_name,
        "nodeRoleArn": node_role_arn,
        "subnetIds": list(subnet_ids),
        "amiType": ami_type,
        "capacityType": capacity_type,
        "launchTemplate": {"id": launch_template_id, "version": launch_template_version},
        "labels": node_labels(labels),
        "scalingConfig": {"minSize": min_size, "maxSize": max_size, "desiredSize": desired_size},
    }
    if taints:
        inputs["taints"] = [
            {key: taint[key] for key in ("key", "value", "effect") if taint.get(key) is not None} for taint in taints
        ]
    if instance_types:
        inputs["instanceTypes"] = list(instance_types)
    if tags:
        inputs["tags"] = dict(tags)
    if release_version:
        inputs["releaseVersion"] = release_version
    if kubernetes_version:
        inputs["version"] = kubernetes_version
    return inputs
