"""Pure builders for a pool whose EFA nodes Karpenter launches: an ``EC2NodeClass`` and a ``NodePool``.

The interface list comes from the same planner as an EFA managed node group's launch template
(:func:`gpu_fabric.aws.node_group.plan_node_group`), so both provisioners give a node the same cards.
Objects are plain Kubernetes dicts (camelCase), exactly what the component registers and what the
policy pack reads back from resource properties. Values may be ``pulumi.Output``s where they come from
other resources (security group id, placement group name); nothing here imports Pulumi.

Karpenter facts (aws/karpenter-provider-aws v1.14.1, https://github.com/aws/karpenter-provider-aws):

* ``spec.networkInterfaces`` takes ``interface`` or ``efa-only`` per (card, device), never ``efa``
  (``pkg/apis/v1/ec2nodeclass.go`` ``NetworkInterface``; ``designs/efa-for-static-capacity.md`` Non-Goal 2);
  its CEL rules want a primary ``interface`` at card 0 / device 0 and at most one ``efa-only`` per card.
* ``spec.placementGroupSelector`` selects one existing group by name or id; Karpenter never creates one
  (``designs/placement-groups-support.md``), and a cluster group must be pinned to one zone by the
  NodePool's requirements.
* ``associatePublicIPAddress: true`` with more than one EFA fails at launch (EC2; PR #5666,
  ``website/content/en/docs/concepts/nodeclasses.md``).
* A changed ``networkInterfaces`` drifts the NodeClass: Karpenter replaces its nodes.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from gpu_fabric.aws.efa import EFA, EFA_ONLY, PlannedInterface
from gpu_fabric.aws.node_group import node_labels
from gpu_fabric.config.node_group import KARPENTER_MIN_VERSION, KARPENTER_NODEPOOL_LABEL, AwsNodeGroupSpec, RootVolumeSpec, karpenter_version
from gpu_fabric.findings import Rule

KARPENTER_EFA_POOL = Rule(
    "karpenter-efa-pool",
    "an EFA EC2NodeClass carries one layout fitting every instance type its NodePools allow, selects the stack's EFA "
    "security group, no public IP beside several EFAs, one zone with a placement group, and Karpenter >= 1.11",
    "https://github.com/aws/karpenter-provider-aws/blob/main/designs/efa-for-static-capacity.md",
    policy="karpenter-efa-pool")

EC2_NODE_CLASS_API_VERSION = "karpenter.k8s.aws/v1"
NODE_POOL_API_VERSION = "karpenter.sh/v1"
EC2_NODE_CLASS_KIND = "EC2NodeClass"
NODE_POOL_KIND = "NodePool"
EC2_NODE_CLASS_TYPE = f"kubernetes:{EC2_NODE_CLASS_API_VERSION}:{EC2_NODE_CLASS_KIND}"
"""Type token of an ``apiextensions.CustomResource`` of this kind (what a policy sees)."""
NODE_POOL_TYPE = f"kubernetes:{NODE_POOL_API_VERSION}:{NODE_POOL_KIND}"

INSTANCE_TYPE_KEY = "node.kubernetes.io/instance-type"
ZONE_KEY = "topology.kubernetes.io/zone"
CAPACITY_TYPE_KEY = "karpenter.sh/capacity-type"
RESTRICTED_LABEL_DOMAINS = ("karpenter.sh", "karpenter.k8s.aws")
"""Label domains a NodePool's template may not set (CEL rules of karpenter.sh_nodepools.yaml)."""

# amiType -> the alias family (EC2NodeClass CEL: family in al2, al2023, bottlerocket, windows*). Karpenter
# resolves the NVIDIA / standard variant and the architecture per instance type from the alias.
_ALIAS_FAMILY = {"al2023": "al2023", "bottlerocket": "bottlerocket"}

BOTTLEROCKET_OS_VOLUME = "4Gi"
"""Karpenter's own default size of Bottlerocket's OS volume /dev/xvda (aws/karpenter-provider-aws
``pkg/providers/amifamily/bottlerocket.go``, ``DefaultBlockDeviceMappings``; ``EphemeralBlockDevice`` is /dev/xvdb)."""

DISRUPTION_BUDGET = [{"nodes": "1"}]
"""At most one node of the pool is disrupted voluntarily at a time (drift, emptiness): a drifted EFA layout
rolls node by node instead of 10% at once (Karpenter's default budget)."""

DRIFT_SURGE_NODES = 1
"""``limits.nodes`` is the pool's size plus this: Karpenter launches a drifted node's replacement before it
drains the old one, and a NodePool at its node limit cannot, so drift deadlocks (aws/karpenter-provider-aws
#8873, static pools with ``limits.nodes == replicas``; EKS "Static Capacity Node Pools": set ``limits.nodes``
above ``replicas``). One, as the disruption budget replaces one node at a time."""


class KarpenterInputError(ValueError):
    """The Karpenter objects cannot be built; ``problems`` lists every reason (each names its field)."""

    def __init__(self, problems: Sequence[str]):
        self.problems = list(problems)
        super().__init__("invalid Karpenter EFA pool:\n  " + "\n  ".join(self.problems))


# -- rules shared with the policy pack ----------------------------------------------------------------


def karpenter_interface_findings(interfaces: Sequence[Any]) -> list[str]:
    """Interfaces an EC2NodeClass cannot express: Karpenter offers ``interface`` and ``efa-only`` only."""
    findings = []
    for interface in interfaces:
        kind = interface.interface_type if isinstance(interface, PlannedInterface) else interface.get("interfaceType")
        if kind == EFA:
            card = interface.network_card_index if isinstance(interface, PlannedInterface) else interface.get("networkCardIndex")
            findings.append(
                f"efaLayout: network card {card} would need interface type 'efa' (ENA+EFA), which Karpenter's "
                "networkInterfaces do not offer (interface | efa-only; designs/efa-for-static-capacity.md); use "
                "efaLayout recommended, or a type whose card 0 takes a second interface")
    return findings


def public_ip_findings(associate_public_ip: Any, efa_count: int) -> list[str]:
    """EC2 refuses a public IPv4 address on an instance launched with more than one EFA."""
    if associate_public_ip is True and efa_count > 1:
        return [f"associatePublicIpAddress: the nodes carry {efa_count} EFAs and EC2 refuses a public IP on an "
                "instance with more than one network interface (Karpenter PR #5666, nodeclasses.md)"]
    return []


def restricted_label_findings(labels: Mapping[str, str]) -> list[str]:
    """Labels a NodePool template may not carry (CEL of karpenter.sh_nodepools.yaml)."""
    findings = []
    for key in sorted(labels):
        domain = key.split("/", 1)[0] if "/" in key else ""
        if key == KARPENTER_NODEPOOL_LABEL or key == "kubernetes.io/hostname" or any(
                domain.endswith(restricted) for restricted in RESTRICTED_LABEL_DOMAINS):
            findings.append(f"labels: {key} is set by Karpenter itself; a NodePool may not set it "
                            "(karpenter.sh_nodepools.yaml, template.metadata.labels)")
    return findings


def version_findings(component: str, version: str) -> list[str]:
    """A stated Karpenter older than 1.11 prunes networkInterfaces and placementGroupSelector."""
    try:
        stated = karpenter_version(version)
    except ValueError:
        return [f"KarpenterEfaPool {component}: karpenter.version {version!r} is not a version number"]
    if stated < KARPENTER_MIN_VERSION:
        return [f"KarpenterEfaPool {component}: karpenter.version: Karpenter {version} cannot express the EFA layout; EC2NodeClass "
                "networkInterfaces and placementGroupSelector need Karpenter >= 1.11 (PRs #9027, #9030)"]
    return []


def zone_pin_findings(has_placement_group: bool, zones: Sequence[str] | None) -> list[str]:
    """A cluster placement group holds one AZ: its NodePool must require exactly one zone."""
    if has_placement_group and (zones is None or len(zones) != 1):
        got = "no zone requirement" if zones is None else f"zones {', '.join(zones) or 'none'}"
        return [f"availabilityZone: a NodeClass with a cluster placementGroupSelector needs its NodePool pinned to "
                f"one zone ({ZONE_KEY} In [one zone]); got {got} (designs/placement-groups-support.md)"]
    return []


def karpenter_findings(spec: AwsNodeGroupSpec, interfaces: Sequence[PlannedInterface],
                       labels: Mapping[str, str] | None = None) -> list[str]:
    """Every reason the planned pool cannot become an EC2NodeClass and NodePool (fields relative to ``aws``)."""
    karpenter = spec.karpenter
    if karpenter is None:
        return ["karpenter: provisioner karpenter needs its settings (karpenter.nodeRole)"]
    efa_count = sum(1 for interface in interfaces if interface.is_efa)
    return [*karpenter_interface_findings(interfaces),
            *[f"karpenter.{finding}" for finding in public_ip_findings(karpenter.associate_public_ip_address, efa_count)],
            *restricted_label_findings(labels if labels is not None else spec.labels)]


# -- EC2NodeClass ---------------------------------------------------------------------------------------


def node_class_interfaces(interfaces: Sequence[PlannedInterface]) -> list[dict[str, Any]]:
    """``spec.networkInterfaces``: the plan's (card, device, type), refused where Karpenter cannot say it."""
    problems = karpenter_interface_findings(interfaces)
    if problems:
        raise KarpenterInputError(problems)
    return [interface.to_launch_template() for interface in interfaces]


def ami_alias(ami_family: str, ami_version: str) -> str:
    """``al2023@latest`` / ``bottlerocket@v20260801``: the EC2NodeClass ``amiSelectorTerms[].alias``."""
    return f"{_ALIAS_FAMILY[ami_family]}@{ami_version}"


def node_class_block_devices(ami_family: str, root_volume: RootVolumeSpec) -> list[dict[str, Any]]:
    """Encrypted gp3 volumes, the same sizes as the managed node group's; ``rootVolume`` marks kubelet's disk."""

    def ebs(size: str) -> dict[str, Any]:
        volume: dict[str, Any] = {"volumeSize": size, "volumeType": "gp3", "encrypted": True, "deleteOnTermination": True}
        if root_volume.kms_key_id:
            volume["kmsKeyID"] = root_volume.kms_key_id
        return volume

    size = f"{root_volume.size_gib}Gi"
    if ami_family == "bottlerocket":
        # OS on /dev/xvda, images and pods on the data volume /dev/xvdb (Karpenter's Bottlerocket layout:
        # bottlerocket.go, EphemeralBlockDevice), which is kubelet's root, hence rootVolume.
        return [{"deviceName": "/dev/xvda", "ebs": ebs(BOTTLEROCKET_OS_VOLUME)},
                {"deviceName": "/dev/xvdb", "ebs": ebs(size), "rootVolume": True}]
    return [{"deviceName": "/dev/xvda", "ebs": ebs(size), "rootVolume": True}]


def ec2_node_class(
    name: str,
    spec: AwsNodeGroupSpec,
    interfaces: Sequence[PlannedInterface],
    *,
    security_group_ids: Sequence[Any],
    user_data: str,
    placement_group_name: Any = None,
) -> dict[str, Any]:
    """The ``EC2NodeClass``: the EFA interfaces, one subnet, the EFA security group, IMDSv2, encrypted gp3.

    ``security_group_ids`` starts with the EFA security group (the pool's own or its domain's);
    ``placement_group_name`` is the cluster group to select (``None``: no placement group).
    """
    karpenter = spec.karpenter
    if karpenter is None:
        raise KarpenterInputError(["karpenter: provisioner karpenter needs its settings (karpenter.nodeRole)"])
    if not security_group_ids:
        raise KarpenterInputError(["securityGroupIds: every EFA interface needs at least the EFA security group"])
    node_class_spec: dict[str, Any] = {
        "role": karpenter.node_role,
        "amiSelectorTerms": [{"alias": ami_alias(spec.ami_family, karpenter.ami_version)}],
        "subnetSelectorTerms": [{"id": spec.subnet_id}],
        "securityGroupSelectorTerms": [{"id": group} for group in security_group_ids],
        "networkInterfaces": node_class_interfaces(interfaces),
        # Hop limit 2 so pods behind the node's network namespace still reach IMDSv2 (as for node groups).
        "metadataOptions": {"httpEndpoint": "enabled", "httpProtocolIPv6": "disabled",
                            "httpPutResponseHopLimit": 2, "httpTokens": "required"},
        "blockDeviceMappings": node_class_block_devices(spec.ami_family, spec.root_volume),
        "userData": user_data,
    }
    if karpenter.associate_public_ip_address:
        node_class_spec["associatePublicIPAddress"] = True
    if placement_group_name is not None:
        node_class_spec["placementGroupSelector"] = {"name": placement_group_name}
    if spec.capacity_reservation_id:
        node_class_spec["capacityReservationSelectorTerms"] = [{"id": spec.capacity_reservation_id}]
    if spec.tags:
        node_class_spec["tags"] = dict(spec.tags)
    return {"apiVersion": EC2_NODE_CLASS_API_VERSION, "kind": EC2_NODE_CLASS_KIND,
            "metadata": {"name": name}, "spec": node_class_spec}


# -- NodePool -------------------------------------------------------------------------------------------


def capacity_types(spec: AwsNodeGroupSpec) -> list[str]:
    """``karpenter.sh/capacity-type`` values: ``reserved`` with a reservation or block, else on-demand / spot.

    Capacity Blocks are modelled as capacity reservations, selected by id like an ODCR
    (karpenter.sh/docs/tasks/odcrs; needs the ``ReservedCapacity`` feature gate).
    """
    if spec.capacity_reservation_id:
        return ["reserved"]
    return ["spot"] if spec.capacity_type == "SPOT" else ["on-demand"]


def node_pool(
    name: str,
    spec: AwsNodeGroupSpec,
    *,
    node_class_name: str,
    node_count: int,
    labels: Mapping[str, str],
    taints: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """The ``NodePool``: pinned to the instance types, the zone and the capacity type; sized by ``node_count``
    (``limits.nodes`` = ``node_count`` + :data:`DRIFT_SURGE_NODES`; ``replicas`` = ``node_count`` when static).

    Disruption: ``WhenEmpty`` -- Karpenter never consolidates an *underutilised* GPU node, which would
    evict the model replicas it serves to pack them elsewhere; only empty nodes go (after
    ``consolidateAfter``), and drift rolls one node at a time (:data:`DISRUPTION_BUDGET`). A static pool
    (``karpenter.static``) keeps ``replicas`` nodes; Karpenter ignores consolidation there.
    """
    karpenter = spec.karpenter
    if karpenter is None:
        raise KarpenterInputError(["karpenter: provisioner karpenter needs its settings (karpenter.nodeRole)"])
    problems = restricted_label_findings(labels)
    if problems:
        raise KarpenterInputError(problems)
    requirements = [
        {"key": INSTANCE_TYPE_KEY, "operator": "In", "values": list(spec.instance_types)},
        {"key": ZONE_KEY, "operator": "In", "values": [spec.availability_zone]},
        {"key": CAPACITY_TYPE_KEY, "operator": "In", "values": capacity_types(spec)},
    ]
    template_spec: dict[str, Any] = {
        "nodeClassRef": {"group": EC2_NODE_CLASS_API_VERSION.split("/")[0], "kind": EC2_NODE_CLASS_KIND,
                         "name": node_class_name},
        "requirements": requirements,
        "expireAfter": karpenter.expire_after,
    }
    if taints:
        template_spec["taints"] = [dict(taint) for taint in taints]
    pool_spec: dict[str, Any] = {
        "template": {"metadata": {"labels": node_labels(labels)}, "spec": template_spec},
        "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": karpenter.consolidate_after,
                       "budgets": [dict(budget) for budget in DISRUPTION_BUDGET]},
        # The pool's size plus the one node a drift roll adds while it replaces another; Kueue's quotas meter
        # the pool's size, so the surge node never admits more work.
        "limits": {"nodes": node_count + DRIFT_SURGE_NODES},
    }
    if karpenter.static:
        pool_spec["replicas"] = node_count
    return {"apiVersion": NODE_POOL_API_VERSION, "kind": NODE_POOL_KIND, "metadata": {"name": name}, "spec": pool_spec}


def node_pool_size(node_pool_object: Mapping[str, Any]) -> int | None:
    """The nodes a NodePool serves with: ``replicas`` when static, else ``limits.nodes`` less the drift surge
    (``None``: unbounded). What Kueue's quotas of the pool meter."""
    pool_spec = node_pool_object.get("spec") or {}
    if pool_spec.get("replicas") is not None:
        return int(pool_spec["replicas"])
    nodes = (pool_spec.get("limits") or {}).get("nodes")
    return int(nodes) - DRIFT_SURGE_NODES if nodes is not None else None


def requirement_values(node_pool_object: Mapping[str, Any], key: str) -> list[str] | None:
    """The ``In`` values of one requirement of a NodePool's template (``None`` when it has none)."""
    for requirement in ((node_pool_object.get("spec") or {}).get("template") or {}).get("spec", {}).get("requirements") or []:
        if requirement.get("key") == key and requirement.get("operator") == "In":
            return [str(value) for value in requirement.get("values") or []]
    return None
