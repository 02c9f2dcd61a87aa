"""Which input changes make a provider replace a resource, and which roll a node group's nodes.

The tables mirror the providers' own code, by resource type token (the engine's camelCase input
names; a rule covers everything under its path, ``*`` matches any list index or map key):

* pulumi-aws bridges terraform-provider-aws, so a field forces replacement when its Terraform
  schema says ``ForceNew`` (SDK resources) or ``RequiresReplace`` (framework resources).
* pulumi-kubernetes decides in ``provider/pkg/provider/diff.go`` (``forceNewProperties``):
  ``metadata.name``/``metadata.namespace`` for every kind, plus a per-kind list.

A resource's own ``replace_on_changes`` adds to these (``forces_replacement``). The tests in
``tests/diff/test_diff_rules.py`` pin every entry.
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Mapping, Sequence

import yaml

from gpu_fabric.aws.karpenter import EC2_NODE_CLASS_TYPE, NODE_POOL_TYPE
from gpu_fabric.diff.paths import Path, is_under, matches, parse_path

PathPattern = Path

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
PLACEMENT_GROUP = "aws:ec2/placementGroup:PlacementGroup"
SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"
INGRESS_RULE = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
EGRESS_RULE = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"


def _paths(*paths: str) -> tuple[PathPattern, ...]:
    return tuple(parse_path(path) for path in paths)


AWS_REPLACE_ON_CHANGES: Mapping[str, tuple[PathPattern, ...]] = {
    # terraform-provider-aws internal/service/eks/node_group.go, resourceNodeGroup(): ForceNew on
    # ami_type, capacity_type, cluster_name, disk_size, instance_types, launch_template.{id,name},
    # node_group_name(_prefix), node_role_arn, remote_access, subnet_ids. launch_template.version,
    # release_version and version update in place (resourceNodeGroupUpdate -> UpdateNodegroupVersion).
    NODE_GROUP: _paths(
        "amiType", "capacityType", "clusterName", "diskSize", "instanceTypes", "launchTemplate.id",
        "launchTemplate.name", "nodeGroupName", "nodeGroupNamePrefix", "nodeRoleArn", "remoteAccess", "subnetIds",
    ),
    # internal/service/ec2/ec2_launch_template.go, resourceLaunchTemplate(): only name and
    # name_prefix are ForceNew; every other change (network interfaces, user data, placement)
    # creates a new template version (resourceLaunchTemplateUpdate -> CreateLaunchTemplateVersion).
    LAUNCH_TEMPLATE: _paths("name", "namePrefix"),
    # internal/service/ec2/ec2_placement_group.go, resourcePlacementGroup(): name, partition_count,
    # spread_level and strategy are ForceNew; resourcePlacementGroupUpdate is "Tags only".
    PLACEMENT_GROUP: _paths("name", "partitionCount", "spreadLevel", "strategy"),
    # internal/service/ec2/vpc_security_group.go, resourceSecurityGroup(): description, name,
    # name_prefix and vpc_id are ForceNew; inline ingress/egress and tags update in place.
    SECURITY_GROUP: _paths("description", "name", "namePrefix", "vpcId"),
    # internal/service/ec2/vpc_security_group_ingress_rule.go (the egress rule shares it):
    # security_group_id is RequiresReplace; ModifyPlan also replaces when the source kind changes
    # (cidr_ipv4 / cidr_ipv6 / prefix_list_id / referenced_security_group_id), see SOURCE_KIND_FIELDS.
    INGRESS_RULE: _paths("securityGroupId"),
    EGRESS_RULE: _paths("securityGroupId"),
}

# The rule's "source" is exactly one of these; switching from one to another replaces the rule
# (vpc_security_group_ingress_rule.go, ModifyPlan: sourceAttributeName old != new).
SOURCE_KIND_FIELDS: tuple[str, ...] = ("cidrIpv4", "cidrIpv6", "prefixListId", "referencedSecurityGroupId")

# pulumi-kubernetes provider/pkg/provider/diff.go: metadataForceNewProperties(".metadata") applies
# to every kind; forceNew[group][version][kind] adds these. (diff.go keys the DaemonSet entry
# "Daemonset", so the provider never matches it for apps/v1 DaemonSets; gpu-fabric's components
# declare replace_on_changes=["spec.selector"] themselves, and this table follows the intent.)
_LABEL_SELECTOR = _paths("spec.selector")
KUBERNETES_METADATA: tuple[PathPattern, ...] = _paths("metadata.name", "metadata.namespace")
KUBERNETES_REPLACE_ON_CHANGES: Mapping[str, tuple[PathPattern, ...]] = {
    "apps/v1/DaemonSet": _LABEL_SELECTOR,
    "apps/v1/Deployment": _LABEL_SELECTOR,
    "apps/v1/StatefulSet": _LABEL_SELECTOR + _paths(
        "spec.podManagementPolicy", "spec.revisionHistoryLimit", "spec.serviceName", "spec.volumeClaimTemplates"),
    "batch/v1/Job": _LABEL_SELECTOR + _paths("spec.completions", "spec.parallelism", "spec.template"),
    "core/v1/ConfigMap": _paths("binaryData", "data"),
    "core/v1/Secret": _paths("type", "stringData", "data"),
    "core/v1/Service": _paths("spec.clusterIP"),
    "rbac.authorization.k8s.io/v1/RoleBinding": _paths("roleRef"),
    "rbac.authorization.k8s.io/v1/ClusterRoleBinding": _paths("roleRef"),
}

# Changes after which EKS replaces every node of the group in a rolling update
# (node_group.go, resourceNodeGroupUpdate: d.HasChanges(launch_template, release_version, version)
# -> UpdateNodegroupVersion). A new launch-template version reaches the group as launchTemplate.version.
NODE_GROUP_ROLLING_FIELDS: tuple[str, ...] = ("launchTemplate", "releaseVersion", "version")

# Outputs an in-place update changes (so they are unknown in a preview): a launch-template update
# makes a new version (ec2_launch_template.go, resourceLaunchTemplate's CustomizeDiff marks
# latest_version new-computed whenever anything but tags/default_version changes).
UPDATE_COMPUTED_OUTPUTS: Mapping[str, tuple[str, ...]] = {
    LAUNCH_TEMPLATE: ("latestVersion", "defaultVersion"),
}


def _kubernetes_kind_key(type_token: str) -> str | None:
    """``kubernetes:apps/v1:DaemonSet`` -> ``apps/v1/DaemonSet`` (``...Patch`` types: the patched kind)."""
    package, _, rest = type_token.partition(":")
    if package != "kubernetes" or rest.startswith("providers") or type_token.startswith("pulumi:"):
        return None
    module, _, kind = rest.rpartition(":")
    if kind.endswith("Patch"):
        kind = kind[: -len("Patch")]
    return f"{module}/{kind}"


def provider_replace_patterns(type_token: str) -> tuple[PathPattern, ...]:
    """The fields whose change makes the resource's provider replace it."""
    if type_token in AWS_REPLACE_ON_CHANGES:
        return AWS_REPLACE_ON_CHANGES[type_token]
    kind_key = _kubernetes_kind_key(type_token)
    if kind_key is None:
        return ()
    return KUBERNETES_METADATA + KUBERNETES_REPLACE_ON_CHANGES.get(kind_key, ())


def forces_replacement(type_token: str, path: Sequence, declared: Iterable[str] = ()) -> bool:
    """Does a change at ``path`` replace a resource of ``type_token`` that declares ``declared`` replace_on_changes?

    A provider's field replaces when the change is under it or encloses it (a whole block added
    contains the ForceNew attribute). A declared path replaces when the change is under it, as the
    engine applies it (pulumi/pulumi pkg/resource/deploy/step_generator.go, applyReplaceOnChanges:
    ``replaceOnChangePath.Contains(diffPath)``).
    """
    if any(matches(pattern, path) for pattern in provider_replace_patterns(type_token)):
        return True
    return any(is_under(path, parse_path(pattern)) for pattern in declared)


KUBERNETES_PROVIDER = "pulumi:providers:kubernetes"


def _active_cluster(inputs: Mapping[str, Any]) -> Any:
    """The active cluster entry of a Kubernetes provider's kubeconfig (with the provider's overrides)."""
    raw = inputs.get("kubeconfig")
    try:
        config = json.loads(raw) if isinstance(raw, str) and raw.lstrip().startswith("{") else yaml.safe_load(raw or "")
    except (ValueError, yaml.YAMLError):
        return raw  # not parseable: compare the text itself
    if not isinstance(config, dict):
        return raw
    context_name = inputs.get("context") or config.get("current-context")
    contexts = {c.get("name"): c.get("context") or {} for c in config.get("contexts") or [] if isinstance(c, dict)}
    cluster_name = inputs.get("cluster") or contexts.get(context_name, {}).get("cluster")
    clusters = {c.get("name"): c.get("cluster") for c in config.get("clusters") or [] if isinstance(c, dict)}
    return clusters.get(cluster_name)


def provider_config_replaces(type_token: str, old_inputs: Mapping[str, Any], new_inputs: Mapping[str, Any]) -> list[str]:
    """The changed keys for which a provider resource is replaced (and with it everything it manages).

    pulumi-kubernetes provider/pkg/provider/provider.go, ``DiffConfig``: a change to
    ``renderYamlToDirectory`` replaces; otherwise every changed key replaces iff the kubeconfig's
    active cluster (after the ``context``/``cluster`` overrides) changed.
    """
    if type_token != KUBERNETES_PROVIDER:
        return []
    changed = sorted(key for key in set(old_inputs) | set(new_inputs) if old_inputs.get(key) != new_inputs.get(key))
    if not changed:
        return []
    if _active_cluster(old_inputs) != _active_cluster(new_inputs):
        return changed
    return [key for key in changed if key == "renderYamlToDirectory"]


def source_kind_switched(type_token: str, old_inputs: Mapping, new_inputs: Mapping) -> bool:
    """A security-group rule whose source changes kind (CIDR -> referenced group, ...) is replaced."""
    if type_token not in (INGRESS_RULE, EGRESS_RULE):
        return False
    old_kind = [field for field in SOURCE_KIND_FIELDS if old_inputs.get(field) is not None]
    new_kind = [field for field in SOURCE_KIND_FIELDS if new_inputs.get(field) is not None]
    return old_kind != new_kind


# Karpenter replaces the nodes of a drifted NodeClaim (website/content/en/docs/concepts/disruption.md,
# "Drift"): a changed NodePool ``spec.template`` drifts its nodes, and so does a changed EC2NodeClass spec
# -- static fields through the NodeClass's hash annotation, selector terms (subnets, security groups,
# AMIs, capacity reservations) through what they resolve to. ``networkInterfaces`` is a static field
# (v1.11, PR #9027: "changing it drifts nodes"). The docs name no spec field that never drifts, so every
# EC2NodeClass spec change counts.
KARPENTER_DRIFT_FIELDS: Mapping[str, tuple[str, ...]] = {
    EC2_NODE_CLASS_TYPE: ("spec",),
    NODE_POOL_TYPE: ("spec", "template"),
}


def rolls_nodes(type_token: str, op: str, changed_paths: Iterable[Sequence[Any]]) -> bool:
    """Does the step replace nodes: an EKS node group's (rolling update or replacement), or a Karpenter
    NodeClass's or NodePool's (drift)?"""
    drift = KARPENTER_DRIFT_FIELDS.get(type_token)
    if drift is not None:
        if op == "replace":
            return True
        return op == "update" and any(tuple(path[: len(drift)]) == drift for path in changed_paths)
    if type_token != NODE_GROUP:
        return False
    if op == "replace":
        return True
    return op == "update" and any(path and path[0] in NODE_GROUP_ROLLING_FIELDS for path in changed_paths)
