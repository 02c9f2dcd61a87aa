"""``gpu_fabric.diff.compare``: the pure comparison of two renders."""

import dataclasses
import json

from gpu_fabric.diff.compare import compare, path_changes, unwrap_secrets
from gpu_fabric.diff.digest import SECRET, UNKNOWN
from gpu_fabric.diff.replace_rules import INGRESS_RULE, LAUNCH_TEMPLATE, NODE_GROUP, SECURITY_GROUP
from gpu_fabric.program.urn import engine_urn
from gpu_fabric.program.rendered import RenderedResource

SECRET_WIRE = {"4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270"}
COMPONENT = engine_urn("dev", "p", "gpu-fabric:index:EfaNodeGroup", "g")


def resource(type_, name, inputs, parent=COMPONENT, deps=None, computed=None, **options):
    urn = engine_urn("dev", "p", type_, name, parent)
    return RenderedResource(type_, name, parent, True, inputs, urn, dependencies=deps or {},
                            computed={"id": f"{name}-id", **(computed or {})}, **options)


def fleet(*, user_data="AAA", sg_description="efa", capacity="ON_DEMAND", labels=None):
    sg = resource(SECURITY_GROUP, "g-sg", {"description": sg_description, "vpcId": "vpc-1"}, computed={"name": "g-sg"})
    rule = resource(INGRESS_RULE, "g-in", {"securityGroupId": "g-sg-id", "referencedSecurityGroupId": "g-sg-id",
                                           "ipProtocol": "-1"},
                    deps={"securityGroupId": (sg.urn,), "referencedSecurityGroupId": (sg.urn,)})
    template = resource(LAUNCH_TEMPLATE, "g-lt", {"userData": user_data,
                                                  "networkInterfaces": [{"securityGroups": ["g-sg-id", "sg-cluster"]}]},
                        deps={"networkInterfaces": (sg.urn,)}, computed={"latestVersion": 1, "name": "g-lt"})
    group = resource(NODE_GROUP, "g-ng", {"capacityType": capacity, "launchTemplate": {"id": "g-lt-id", "version": "1"},
                                          "labels": labels or {}, "scalingConfig": {"desiredSize": 2, "maxSize": 4}},
                     deps={"launchTemplate": (template.urn,)}, ignore_changes=("scalingConfig.desiredSize",))
    return [sg, rule, template, group]


def steps_by_name(digest):
    return {step.name: step for step in digest.steps}


def test_no_change_has_no_steps_and_counts_every_resource_same():
    digest = compare(fleet(), fleet())
    assert digest.steps == [] and not digest.has_changes
    assert digest.change_summary == {"create": 0, "update": 0, "replace": 0, "delete": 0, "same": 4}


def test_launch_template_update_rolls_the_node_group_that_reads_its_version():
    steps = steps_by_name(compare(fleet(), fleet(user_data="BBB")))
    assert set(steps) == {"g-lt", "g-ng"}
    assert steps["g-lt"].op == "update" and not steps["g-lt"].rolls_nodes
    group = steps["g-ng"]
    assert group.op == "update" and group.rolls_nodes
    assert [change.key for change in group.changes] == ["launchTemplate.version"]
    assert group.new_state["inputs"]["launchTemplate"] == {"id": "g-lt-id", "version": UNKNOWN}


def test_replaced_security_group_replaces_its_rules_and_rolls_the_nodes():
    steps = steps_by_name(compare(fleet(), fleet(sg_description="new")))
    assert steps["g-sg"].op == "replace" and steps["g-sg"].replace_reasons == ["description"]
    assert steps["g-in"].op == "replace" and steps["g-in"].replace_reasons == ["securityGroupId"]
    assert steps["g-lt"].op == "update"
    assert [c.key for c in steps["g-lt"].changes] == ["networkInterfaces[0].securityGroups[0]"]
    assert steps["g-ng"].rolls_nodes


def test_capacity_type_replaces_with_the_reason_and_ignored_paths_stay_quiet():
    base = fleet()
    head = fleet(capacity="SPOT")
    head[3].inputs["scalingConfig"]["desiredSize"] = 3  # ignore_changes
    digest = compare(base, head)
    (step,) = digest.steps
    assert step.op == "replace" and step.replace_reasons == ["capacityType"] and step.rolls_nodes
    assert step.to_json()["detailedDiff"] == {"capacityType": {"kind": "update-replace", "inputDiff": True}}


def test_label_change_is_an_in_place_update_that_does_not_roll():
    (step,) = compare(fleet(), fleet(labels={"team": "a"})).steps
    assert step.op == "update" and not step.rolls_nodes and step.diff_reasons == ["labels"]


def test_created_and_deleted_resources_and_the_summary():
    base, head = fleet(), fleet()
    extra = resource(INGRESS_RULE, "g-extra", {"securityGroupId": "g-sg-id", "cidrIpv4": "10.0.0.0/8"})
    digest = compare(base + [extra], head)
    assert [(s.op, s.name) for s in digest.steps] == [("delete", "g-extra")]
    digest = compare(base, head + [extra])
    assert [(s.op, s.name) for s in digest.steps] == [("create", "g-extra")]
    assert digest.change_summary["create"] == 1 and digest.change_summary["same"] == 4


def test_new_parent_is_delete_plus_create_with_an_alias_hint():
    other = engine_urn("dev", "p", "gpu-fabric:index:EfaDevicePlugin", "h")  # a parent of another type: a new URN
    old = resource("kubernetes:apps/v1:DaemonSet", "plugin", {"metadata": {"name": "p", "namespace": "kube-system"}})
    moved = resource("kubernetes:apps/v1:DaemonSet", "plugin", {"metadata": {"name": "p", "namespace": "kube-system"}},
                     parent=other)
    renamed = resource("kubernetes:apps/v1:DaemonSet", "plugin-v2", {"metadata": {"name": "p", "namespace": "kube-system"}})
    for new in (moved, renamed):
        steps = {step.op: step for step in compare([old], [new]).steps}
        assert set(steps) == {"delete", "create"}
        assert f'aliases=["{old.urn}"]' in steps["create"].hints[0]
        assert new.urn in steps["delete"].hints[0]
    unrelated = resource("kubernetes:apps/v1:DaemonSet", "other", {"metadata": {"name": "q", "namespace": "x"}})
    assert all(not step.hints for step in compare([old], [unrelated]).steps)


def test_secrets_are_compared_but_never_shown():
    def config_map(secret):
        return resource("kubernetes:core/v1:ConfigMap", "cm", {"metadata": {"name": "cm"},
                                                                "data": {"token": {**SECRET_WIRE, "value": secret}}})
    digest = compare([config_map("hunter2")], [config_map("hunter3")])
    (step,) = digest.steps
    assert step.op == "replace"  # ConfigMap data forces replacement (pulumi-kubernetes diff.go)
    text = json.dumps(digest.to_json())
    assert "hunter" not in text and SECRET in text
    assert compare([config_map("same")], [config_map("same")]).steps == []


def test_path_changes_compare_lists_by_index_and_types_strictly():
    changes = path_changes({"a": [1, 2], "b": True}, {"a": [1, 3, 4], "b": 1})
    assert [(c.key, c.kind) for c in changes] == [("a[1]", "update"), ("a[2]", "add"), ("b", "update")]
    assert path_changes(unwrap_secrets({"x": 1}), {"x": 1}) == []


def test_resources_of_a_replaced_provider_are_replaced_with_a_hint():
    def provider(server):
        config = {"current-context": "c", "contexts": [{"name": "c", "context": {"cluster": "c"}}],
                  "clusters": [{"name": "c", "cluster": {"server": server}}]}
        return resource("pulumi:providers:kubernetes", "kubernetes", {"kubeconfig": json.dumps(config)}, parent="")

    def stack(server):
        k8s = provider(server)
        plugin = resource("kubernetes:apps/v1:DaemonSet", "plugin", {"metadata": {"name": "p"}})
        return [k8s, dataclasses.replace(plugin, provider=k8s.urn)]

    steps = steps_by_name(compare(stack("https://a"), stack("https://b")))
    assert steps["kubernetes"].op == "replace" and steps["kubernetes"].replace_reasons == ["kubeconfig"]
    assert steps["plugin"].op == "replace" and "provider" in steps["plugin"].hints[0]
    assert compare(stack("https://a"), stack("https://a")).steps == []


def test_following_the_alias_hint_turns_delete_plus_create_into_the_same_resource():
    """Aliases as the SDK sends them (specs), resolved by the render, matched by the comparison."""
    import pulumi
    import pulumi_kubernetes as k8s

    from gpu_fabric.program.render import render_stack

    class Box(pulumi.ComponentResource):
        def __init__(self, name, kind, opts=None):
            super().__init__(f"test:index:{kind}", name, {}, opts)

    def program(renamed: bool, aliased: bool):
        def run():
            parent = Box("box", "NewBox" if renamed else "Box")
            options = {"parent": parent}
            if aliased:
                options["aliases"] = ["urn:pulumi:dev::gpu-fabric::test:index:Box$kubernetes:core/v1:ConfigMap::cm"]  # what the hint says
            k8s.core.v1.ConfigMap("cm", metadata={"name": "cm"}, data={"a": "1"}, opts=pulumi.ResourceOptions(**options))
        return run

    base = render_stack("dev", ".", config={}, program=program(False, False)).resources
    moved = render_stack("dev", ".", config={}, program=program(True, False)).resources
    fixed = render_stack("dev", ".", config={}, program=program(True, True)).resources
    config_map = lambda digest: sorted(s.op for s in digest.steps if s.type == "kubernetes:core/v1:ConfigMap")
    digest = compare(base, moved)
    assert config_map(digest) == ["create", "delete"]
    created = next(s for s in digest.steps if s.op == "create" and s.type == "kubernetes:core/v1:ConfigMap")
    assert 'aliases=["urn:pulumi:dev::gpu-fabric::test:index:Box$kubernetes:core/v1:ConfigMap::cm"]' in created.hints[0]
    assert config_map(compare(base, fixed)) == []
    cm = next(r for r in fixed if r.type == "kubernetes:core/v1:ConfigMap")
    assert cm.aliases == ("urn:pulumi:dev::gpu-fabric::test:index:Box$kubernetes:core/v1:ConfigMap::cm",)


def test_alias_specs_resolve_to_engine_urns():
    import pulumi

    from gpu_fabric.program.render import render_stack

    def run():
        parent = pulumi.ComponentResource("test:index:Box", "box")
        pulumi.ComponentResource("test:index:Leaf", "leaf-v2", opts=pulumi.ResourceOptions(
            parent=parent, aliases=[pulumi.Alias(name="leaf")]))

    (leaf,) = [r for r in render_stack("dev", ".", config={}, program=run).resources if r.name == "leaf-v2"]
    assert "urn:pulumi:dev::gpu-fabric::test:index:Box$test:index:Leaf::leaf" in leaf.aliases
