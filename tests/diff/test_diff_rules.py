"""The replace-forcing table, property paths and engine URNs of ``gpu-fabric diff``."""

import json

import pytest

from gpu_fabric.diff.paths import format_path, matches, parse_path
from gpu_fabric.diff.replace_rules import (
    EGRESS_RULE,
    INGRESS_RULE,
    LAUNCH_TEMPLATE,
    NODE_GROUP,
    PLACEMENT_GROUP,
    SECURITY_GROUP,
    forces_replacement,
    rolls_nodes,
    source_kind_switched,
)
from gpu_fabric.program.urn import engine_urn, parse_urn


@pytest.mark.parametrize("type_, path, replaces", [
    # terraform-provider-aws eks/node_group.go: ForceNew vs. in place
    (NODE_GROUP, "capacityType", True),
    (NODE_GROUP, "amiType", True),
    (NODE_GROUP, "instanceTypes[0]", True),
    (NODE_GROUP, "subnetIds[0]", True),
    (NODE_GROUP, "nodeRoleArn", True),
    (NODE_GROUP, "clusterName", True),
    (NODE_GROUP, "launchTemplate.id", True),
    (NODE_GROUP, "launchTemplate", True),
    (NODE_GROUP, "launchTemplate.version", False),
    (NODE_GROUP, "releaseVersion", False),
    (NODE_GROUP, "version", False),
    (NODE_GROUP, "labels.team", False),
    (NODE_GROUP, "taints[0].effect", False),
    (NODE_GROUP, "scalingConfig.maxSize", False),
    (NODE_GROUP, "tags.owner", False),
    # ec2_launch_template.go: only the name replaces; everything else is a new version
    (LAUNCH_TEMPLATE, "name", True),
    (LAUNCH_TEMPLATE, "namePrefix", True),
    (LAUNCH_TEMPLATE, "userData", False),
    (LAUNCH_TEMPLATE, "networkInterfaces[3].networkCardIndex", False),
    (LAUNCH_TEMPLATE, "placement.groupName", False),
    # ec2_placement_group.go: all but tags replace
    (PLACEMENT_GROUP, "strategy", True),
    (PLACEMENT_GROUP, "name", True),
    (PLACEMENT_GROUP, "partitionCount", True),
    (PLACEMENT_GROUP, "spreadLevel", True),
    (PLACEMENT_GROUP, "tags.owner", False),
    # vpc_security_group.go
    (SECURITY_GROUP, "vpcId", True),
    (SECURITY_GROUP, "description", True),
    (SECURITY_GROUP, "name", True),
    (SECURITY_GROUP, "tags.Name", False),
    (SECURITY_GROUP, "ingress[0].fromPort", False),
    # vpc_security_group_{ingress,egress}_rule.go
    (INGRESS_RULE, "securityGroupId", True),
    (EGRESS_RULE, "securityGroupId", True),
    (INGRESS_RULE, "referencedSecurityGroupId", False),
    (EGRESS_RULE, "description", False),
    # pulumi-kubernetes diff.go
    ("kubernetes:apps/v1:DaemonSet", "metadata.name", True),
    ("kubernetes:apps/v1:DaemonSet", "metadata.namespace", True),
    ("kubernetes:apps/v1:DaemonSet", "spec.selector.matchLabels.app", True),
    ("kubernetes:apps/v1:DaemonSet", "spec.template.spec.containers[0].image", False),
    ("kubernetes:apps/v1:DaemonSet", "metadata.labels.app", False),
    ("kubernetes:worker.gpustack.ai/v1:ModelDeployment", "metadata.name", True),
    ("kubernetes:worker.gpustack.ai/v1:ModelDeployment", "spec.roles[0].replicas", False),
    ("kubernetes:kueue.x-k8s.io/v1beta2:LocalQueuePatch", "metadata.namespace", True),
    ("kubernetes:kueue.x-k8s.io/v1beta2:LocalQueuePatch", "spec.clusterQueue", False),
    ("kubernetes:core/v1:ConfigMap", "data.key", True),
    ("pulumi:providers:kubernetes", "kubeconfig", False),
    ("gpu-fabric:index:GpuFabric", "queueOwner", False),
])
def test_provider_replace_table(type_, path, replaces):
    assert forces_replacement(type_, parse_path(path)) is replaces


def test_declared_replace_on_changes_adds_to_the_table():
    path = parse_path("spec.roles[0].replicas")
    assert not forces_replacement("kubernetes:worker.gpustack.ai/v1:ModelDeployment", path)
    assert forces_replacement("kubernetes:worker.gpustack.ai/v1:ModelDeployment", path, ["spec.roles[*].replicas"])
    assert forces_replacement("gpu-fabric:index:GpuFabric", parse_path("queueOwner"), ["queueOwner"])


def test_switching_a_rule_source_kind_replaces_it():
    cidr = {"securityGroupId": "sg-1", "cidrIpv4": "10.0.0.0/16"}
    referenced = {"securityGroupId": "sg-1", "referencedSecurityGroupId": "sg-2"}
    assert source_kind_switched(INGRESS_RULE, cidr, referenced)
    assert not source_kind_switched(INGRESS_RULE, referenced, {**referenced, "referencedSecurityGroupId": "sg-3"})
    assert not source_kind_switched(SECURITY_GROUP, cidr, referenced)


@pytest.mark.parametrize("op, paths, rolls", [
    ("update", ["launchTemplate.version"], True),
    ("update", ["releaseVersion"], True),
    ("update", ["version"], True),
    ("replace", ["capacityType"], True),
    ("update", ["labels.team"], False),
    ("update", ["scalingConfig.maxSize"], False),
    ("delete", [], False),
    ("create", [], False),
])
def test_node_group_rolls(op, paths, rolls):
    assert rolls_nodes(NODE_GROUP, op, [parse_path(p) for p in paths]) is rolls
    assert not rolls_nodes(LAUNCH_TEMPLATE, op, [parse_path(p) for p in paths])


@pytest.mark.parametrize("text, path", [
    ("capacityType", ("capacityType",)),
    ("launchTemplate.version", ("launchTemplate", "version")),
    ("networkInterfaces[3].securityGroups[0]", ("networkInterfaces", 3, "securityGroups", 0)),
    ('metadata.labels["app.kubernetes.io/name"]', ("metadata", "labels", "app.kubernetes.io/name")),
    ('labels["vpc.amazonaws.com/efa.present"]', ("labels", "vpc.amazonaws.com/efa.present")),
    ("spec.roles[*].replicas", ("spec", "roles", "*", "replicas")),
])
def test_paths_round_trip(text, path):
    assert parse_path(text) == path
    assert format_path(path) == text


def test_malformed_path_is_refused():
    with pytest.raises(ValueError, match="malformed"):
        parse_path('a["unterminated')


def test_path_matching_is_prefix_either_way():
    assert matches(parse_path("spec.selector"), parse_path("spec.selector.matchLabels.app"))
    assert matches(parse_path("launchTemplate.id"), parse_path("launchTemplate"))
    assert not matches(parse_path("launchTemplate.id"), parse_path("launchTemplate.version"))


def test_engine_urn_carries_the_whole_parent_chain_but_never_the_stack():
    stack_urn = engine_urn("dev", "proj", "pulumi:pulumi:Stack", "proj-dev")
    fabric = engine_urn("dev", "proj", "gpu-fabric:index:GpuFabric", "fabric", stack_urn)
    group = engine_urn("dev", "proj", "gpu-fabric:index:EfaNodeGroup", "g", fabric)
    template = engine_urn("dev", "proj", LAUNCH_TEMPLATE, "g-lt", group)
    assert fabric == "urn:pulumi:dev::proj::gpu-fabric:index:GpuFabric::fabric"
    assert template == ("urn:pulumi:dev::proj::gpu-fabric:index:GpuFabric$gpu-fabric:index:EfaNodeGroup"
                        f"${LAUNCH_TEMPLATE}::g-lt")
    assert parse_urn(template).type == LAUNCH_TEMPLATE
    assert parse_urn(template).name == "g-lt"
    with pytest.raises(ValueError):
        parse_urn("not-a-urn")


def test_declared_paths_replace_only_on_changes_under_them_as_the_engine_applies_them():
    custom = "kubernetes:worker.gpustack.ai/v1:ModelDeployment"
    assert forces_replacement(custom, parse_path("spec.roles[0].replicas"), ["spec.roles"])
    assert not forces_replacement(custom, parse_path("spec"), ["spec.roles"])


def test_kubernetes_provider_is_replaced_only_when_the_active_cluster_changes():
    from gpu_fabric.diff.replace_rules import KUBERNETES_PROVIDER, provider_config_replaces

    def kubeconfig(server, args=("eks", "get-token")):
        return {"kubeconfig": json.dumps({
            "current-context": "c", "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
            "clusters": [{"name": "c", "cluster": {"server": server}}],
            "users": [{"name": "u", "user": {"exec": {"args": list(args)}}}]})}
    old = kubeconfig("https://a.example")
    assert provider_config_replaces(KUBERNETES_PROVIDER, old, kubeconfig("https://b.example")) == ["kubeconfig"]
    assert provider_config_replaces(KUBERNETES_PROVIDER, old, kubeconfig("https://a.example", ("other",))) == []
    assert provider_config_replaces(KUBERNETES_PROVIDER, old, {**old, "renderYamlToDirectory": "out"}) == [
        "renderYamlToDirectory"]
    assert provider_config_replaces("pulumi:providers:aws", {"region": "a"}, {"region": "b"}) == []
