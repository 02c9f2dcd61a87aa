"""Karpenter EFA pools: rendered objects valid as Karpenter v1.14.1's API server validates them,
the rest of the stack treating them like node groups, and Karpenter's rules refused before the apply."""

from __future__ import annotations

import copy
import dataclasses

import pytest

from gpu_fabric.aws.catalog.bundled import BundledInstanceCatalog
from gpu_fabric.aws.karpenter import EC2_NODE_CLASS_TYPE, NODE_POOL_TYPE, node_pool_size
from gpu_fabric.config.base import ConfigError
from gpu_fabric.config.constants import NODE_GROUP_TYPE, SECURITY_GROUP_TYPE, LAUNCH_TEMPLATE_TYPE
from gpu_fabric.diff.replace_rules import rolls_nodes
from gpu_fabric.kube.kueue import pool_quotas
from gpu_fabric.plan.fabric_plan import coverage_gaps
from gpu_fabric.plan.resource_view import Resource
from gpu_fabric.policies.karpenter import KARPENTER_POOL_TYPE, karpenter_efa_pool
from gpu_fabric.policies.runner import run_policies
from gpu_fabric.program.render import render_stack
from gpu_fabric.resources.fabric import _check_node_groups
from gpu_fabric.validation.configuration import load_config
from gpu_fabric.verify.expectations import pool_selector

from support.bad_input import run_cli
from support.crd_validation import crd_problems, require_crds
from support.stack_configs import PROJECT_DIR, stack_values
from support.policy_pack import analyzer  # noqa: F401  (the pack served over gRPC, a module fixture)

STACK = "karpenter-efa"
H200 = "gpustack--nvidia-h200-linux-amd64"


@pytest.fixture(scope="module")
def rendered():
    """The example stack, rendered once for this module."""
    return render_stack(STACK, PROJECT_DIR)


def values() -> dict:
    return copy.deepcopy(stack_values(STACK))


def _one(rendered, type_token: str):
    found = [r for r in rendered.resources if r.type == type_token]
    assert len(found) == 1, [r.name for r in found]
    return found[0]


def _problems(config_values: dict) -> list[tuple[str, str]]:
    """What load_config and GpuFabric's pre-registration planning refuse, as (path, message)."""
    try:
        _check_node_groups(load_config(config_values), BundledInstanceCatalog())
    except ConfigError as error:
        return list(error.pairs)
    return []


# -- done when ----------------------------------------------------------------------------------------


def test_p5en_pool_renders_a_node_class_with_one_interface_and_16_efa_only_and_a_pinned_node_pool(rendered):
    node_class = _one(rendered, EC2_NODE_CLASS_TYPE).inputs
    spec = node_class["spec"]
    kinds = [i["interfaceType"] for i in spec["networkInterfaces"]]
    assert kinds.count("interface") == 1 and kinds.count("efa-only") == 16 and len(kinds) == 17
    assert spec["networkInterfaces"][0] == {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"}
    assert spec["metadataOptions"]["httpTokens"] == "required"
    assert all(d["ebs"]["encrypted"] is True and d["ebs"]["volumeType"] == "gp3" for d in spec["blockDeviceMappings"])
    assert spec["placementGroupSelector"] == {"name": "fabric-efa-domain-gpustack--generic-linux-amd64-placement"}
    assert spec["subnetSelectorTerms"] == [{"id": "subnet-0a1b2c3d4e5f60718"}]
    assert spec["role"] == "llm-serving-karpenter-nodes"
    assert spec["amiSelectorTerms"] == [{"alias": "al2023@v20260801"}]

    pool = _one(rendered, NODE_POOL_TYPE).inputs
    requirements = {r["key"]: r["values"] for r in pool["spec"]["template"]["spec"]["requirements"]}
    assert requirements["node.kubernetes.io/instance-type"] == ["p5en.48xlarge"]
    assert requirements["topology.kubernetes.io/zone"] == ["us-east-1a"]
    assert requirements["karpenter.sh/capacity-type"] == ["on-demand"]
    assert pool["spec"]["template"]["spec"]["nodeClassRef"]["name"] == node_class["metadata"]["name"] == H200
    assert pool["spec"]["disruption"]["consolidationPolicy"] == "WhenEmpty"
    assert pool["spec"]["template"]["spec"]["taints"] == [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]


def test_rendered_karpenter_and_kueue_objects_are_valid_against_the_crds_and_their_cel_rules(rendered):
    require_crds()
    checked = [r.inputs for r in rendered.resources
               if r.is_kubernetes_object and r.inputs["apiVersion"].split("/")[0] in ("karpenter.sh", "karpenter.k8s.aws", "kueue.x-k8s.io")]
    assert {m["kind"] for m in checked} >= {"EC2NodeClass", "NodePool", "LocalQueue"}
    for manifest in checked:
        assert crd_problems(manifest) == [], manifest["kind"]


def test_the_crd_validator_refuses_what_karpenters_cel_rules_refuse(rendered):
    require_crds()
    node_class = copy.deepcopy(_one(rendered, EC2_NODE_CLASS_TYPE).inputs)
    node_class["spec"]["networkInterfaces"][0]["interfaceType"] = "efa-only"  # no primary interface left
    assert any("primary interface" in p for p in crd_problems(node_class))
    two_on_a_card = copy.deepcopy(_one(rendered, EC2_NODE_CLASS_TYPE).inputs)
    two_on_a_card["spec"]["networkInterfaces"][2]["networkCardIndex"] = 0
    two_on_a_card["spec"]["networkInterfaces"][2]["deviceIndex"] = 2
    assert any("at most one efa device per network card" in p for p in crd_problems(two_on_a_card))
    pruned = copy.deepcopy(_one(rendered, EC2_NODE_CLASS_TYPE).inputs)
    pruned["spec"]["networkInterface"] = []  # misspelt: the server would prune it
    assert any("networkInterface" in p for p in crd_problems(pruned))
    static = copy.deepcopy(_one(rendered, NODE_POOL_TYPE).inputs)
    static["spec"].update(replicas=2, weight=10)
    assert any("'weight' is not supported on static NodePools" in p for p in crd_problems(static))
    label = copy.deepcopy(_one(rendered, NODE_POOL_TYPE).inputs)
    label["spec"]["template"]["metadata"]["labels"]["karpenter.sh/team"] = "a"  # uses the find() extension
    assert any('label domain "karpenter.sh" is restricted' in p for p in crd_problems(label))


def test_a_karpenter_pool_and_a_node_group_share_the_efa_domains_security_group(rendered):
    domain_group = next(r for r in rendered.resources if r.type == SECURITY_GROUP_TYPE and "efa-domain" in r.name)
    node_class = _one(rendered, EC2_NODE_CLASS_TYPE)
    template = _one(rendered, LAUNCH_TEMPLATE_TYPE)
    assert domain_group.urn in node_class.dependencies["spec"]
    assert domain_group.urn in template.dependencies["networkInterfaces"]
    node_group = _one(rendered, NODE_GROUP_TYPE)
    assert "c6in" in str(template.inputs) and node_group.inputs["labels"]["vpc.amazonaws.com/efa.present"] == "true"
    # Only the domain's group: neither pool creates one of its own.
    assert [r.name for r in rendered.resources if r.type == SECURITY_GROUP_TYPE] == [domain_group.name]


def test_mixing_p5en_and_p5_is_refused_at_instance_types(tmp_path):
    # Exit 1: the refusal is the mandatory pool-instance-facts policy's, applied at render (CLI conventions).
    import shutil

    shutil.copytree(PROJECT_DIR / "stacks", tmp_path / "stacks")
    stack_file = tmp_path / "stacks" / f"Pulumi.{STACK}.yaml"
    stack_file.write_text(stack_file.read_text().replace("- p5en.48xlarge", "- p5en.48xlarge\n          - p5.48xlarge"))
    run = run_cli("render", "--project", str(tmp_path), "--stack", STACK, "--out", str(tmp_path / "out"))
    assert run.code == 1, run.describe()
    assert "pools[0].aws.instanceTypes" in run.err and "p5.48xlarge" in run.err
    assert not (tmp_path / "out" / STACK).exists()  # nothing written


# -- bad input ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("change, path, words", [
    (lambda aws: aws.update(provisioner="fargate"), "pools[0].aws.provisioner", "managedNodeGroup"),
    (lambda aws: aws["karpenter"].pop("nodeRole"), "pools[0].aws.karpenter.nodeRole", "required"),
    (lambda aws: aws.pop("karpenter"), "pools[0].aws.karpenter", "karpenter.nodeRole"),
    (lambda aws: aws.update(scaling={"minSize": 1, "maxSize": 2}), "pools[0].aws.scaling", "a managed-node-group setting"),
    (lambda aws: aws.update(nodeRoleArn="arn:aws:iam::123456789012:role/x"), "pools[0].aws.nodeRoleArn", "karpenter.nodeRole"),
    (lambda aws: aws["karpenter"].update(version="1.10.2"), "pools[0].aws.karpenter.version", ">= 1.11"),
    (lambda aws: aws["karpenter"].update(associatePublicIpAddress=True), "pools[0].aws.karpenter.associatePublicIpAddress",
     "more than one"),
    (lambda aws: aws.update(labels={"karpenter.k8s.aws/team": "a"}), "pools[0].aws.labels", "Karpenter itself"),
])
def test_karpenter_pool_bad_input_is_refused_at_its_path(change, path, words):
    config = values()
    change(config["pools"][0]["aws"])
    problems = _problems(config)
    assert any(p == path and words in m for p, m in problems), problems


def test_karpenter_settings_on_a_node_group_pool_are_refused():
    config = values()
    config["pools"][1]["aws"]["karpenter"] = {"nodeRole": "nodes"}
    problems = _problems(config)
    assert any(p == "pools[1].aws.karpenter" and "Karpenter settings on a managed node group" in m for p, m in problems), problems


# -- the rest of the stack ----------------------------------------------------------------------------


def test_coverage_kueue_and_verify_treat_the_karpenter_pool_like_any_other(rendered):
    config = load_config(values())
    assert coverage_gaps(config) == []  # the EFA device plugin schedules on the NodePool's nodes
    pool = config.pool(H200)
    assert pool_selector(pool)["karpenter.sh/nodepool"] == H200
    node_pool = _one(rendered, NODE_POOL_TYPE).inputs
    quotas = dict(pool_quotas(pool))
    assert quotas["nvidia.com/gpu"] == node_pool_size(node_pool) * pool.accelerators_per_node
    static = values()
    static["pools"][0]["aws"]["karpenter"]["static"] = True
    static_pool = load_config(static).pool(H200)
    assert dict(pool_quotas(static_pool))["nvidia.com/gpu"] == 2 * 8


def test_efa_info_stack_names_the_node_pool():
    from gpu_fabric.cli.efa_info import stack_domain_lines

    lines, types = stack_domain_lines(STACK, str(PROJECT_DIR))
    assert any(f"NodePool {H200} (us-east-1a, subnet-0a1b2c3d4e5f60718, 16 EFA)" in line for line in lines)
    assert "p5en.48xlarge" in types and "c6in.32xlarge" in types


def test_a_network_interfaces_change_rolls_the_nodes_and_a_limit_change_does_not():
    assert rolls_nodes(EC2_NODE_CLASS_TYPE, "update", [("spec", "networkInterfaces", 3, "interfaceType")])
    assert rolls_nodes(NODE_POOL_TYPE, "update", [("spec", "template", "spec", "requirements")])
    assert not rolls_nodes(NODE_POOL_TYPE, "update", [("spec", "limits", "nodes")])
    assert not rolls_nodes(EC2_NODE_CLASS_TYPE, "update", [("metadata", "labels")])


# -- the policy pack ----------------------------------------------------------------------------------


def _resources(rendered) -> list[Resource]:
    return [Resource(r.type, r.name, r.urn, copy.deepcopy(r.inputs), r.parent, dict(r.dependencies))
            for r in rendered.resources]


def _violations(resources) -> list[str]:
    return [v.message for v in run_policies([karpenter_efa_pool], resources)]


def _edit(resources, type_token, edit):
    out = []
    for r in resources:
        if r.type == type_token:
            props = copy.deepcopy(dict(r.props))
            edit(props)
            r = dataclasses.replace(r, props=props)
        out.append(r)
    return out


def test_the_policy_passes_the_example_and_refuses_each_karpenter_rule(rendered):
    resources = _resources(rendered)
    assert _violations(resources) == []

    def add_p5(props):
        props["spec"]["template"]["spec"]["requirements"][0]["values"].append("p5.48xlarge")
    assert any("instanceTypes p5.48xlarge" in v and "one EFA layout" in v for v in _violations(_edit(resources, NODE_POOL_TYPE, add_p5)))

    def unpin_zone(props):
        props["spec"]["template"]["spec"]["requirements"][1]["values"] = ["us-east-1a", "us-east-1b"]
    assert any("pinned to one zone" in v for v in _violations(_edit(resources, NODE_POOL_TYPE, unpin_zone)))

    def public_ip(props):
        props["spec"]["associatePublicIPAddress"] = True
    assert any("public IP" in v for v in _violations(_edit(resources, EC2_NODE_CLASS_TYPE, public_ip)))

    without_group = [dataclasses.replace(r, property_dependencies={"spec": ()}) if r.type == EC2_NODE_CLASS_TYPE else r
                     for r in resources]
    assert any("selects no EFA security group" in v for v in _violations(without_group))

    def old_karpenter(props):
        props["karpenter"]["version"] = "1.10.0"
    assert any(">= 1.11" in v for v in _violations(_edit(resources, KARPENTER_POOL_TYPE, old_karpenter)))


# -- the component alone ------------------------------------------------------------------------------


def _component_program(args):
    def program():
        from gpu_fabric import KarpenterEfaPool

        KarpenterEfaPool("p5en", args, catalog=BundledInstanceCatalog())
    return program


def _component_args(**changes):
    args = {
        "cluster_name": "llm-serving", "vpc_id": "vpc-0a1b2c3d4e5f60718", "instance_types": ["p5en.48xlarge"],
        "availability_zone": "us-east-1a", "subnet_id": "subnet-0a1b2c3d4e5f60718", "node_count": 4,
        "karpenter": {"node_role": "nodes", "static": True}, "capacity_reservation_id": "cr-0123456789abcdef0",
        "placement_group": {"mode": "none"},
    }
    args.update(changes)
    return args


def test_the_component_alone_renders_its_own_security_group_and_a_static_reserved_pool():
    result = render_stack("component", PROJECT_DIR, config={}, program=_component_program(_component_args()))
    types = [r.type for r in result.resources]
    assert types.count(SECURITY_GROUP_TYPE) == 1 and "aws:ec2/placementGroup:PlacementGroup" not in types
    node_class = next(r.inputs for r in result.resources if r.type == EC2_NODE_CLASS_TYPE)
    node_pool = next(r.inputs for r in result.resources if r.type == NODE_POOL_TYPE)
    assert node_class["spec"]["capacityReservationSelectorTerms"] == [{"id": "cr-0123456789abcdef0"}]
    assert "placementGroupSelector" not in node_class["spec"]
    # One node above the size: room for the replacement a drift roll launches first (karpenter-provider-aws#8873).
    assert node_pool["spec"]["replicas"] == 4 and node_pool["spec"]["limits"] == {"nodes": 5}
    requirements = {r["key"]: r["values"] for r in node_pool["spec"]["template"]["spec"]["requirements"]}
    assert requirements["karpenter.sh/capacity-type"] == ["reserved"]
    require_crds()
    assert crd_problems(node_class) == [] and crd_problems(node_pool) == []


def test_the_component_refuses_a_node_group_provisioner_and_registers_nothing():
    with pytest.raises(Exception) as raised:
        render_stack("component", PROJECT_DIR, config={},
                     program=_component_program(_component_args(provisioner="managedNodeGroup")))
    assert "provisioner" in str(raised.value)


def test_diff_of_two_renders_rolls_the_nodes_when_the_node_class_interfaces_change(rendered):
    from gpu_fabric.diff.compare import compare

    def changed(type_token, edit):
        out = []
        for r in rendered.resources:
            if r.type == type_token:
                inputs = copy.deepcopy(r.inputs)
                edit(inputs)
                r = dataclasses.replace(r, inputs=inputs)
            out.append(r)
        return out

    fewer_cards = changed(EC2_NODE_CLASS_TYPE, lambda m: m["spec"]["networkInterfaces"].pop())
    step = next(s for s in compare(rendered.resources, fewer_cards).steps if s.type == EC2_NODE_CLASS_TYPE)
    assert step.op == "update" and step.rolls_nodes
    bigger = changed(NODE_POOL_TYPE, lambda m: m["spec"]["limits"].update(nodes=5))
    step = next(s for s in compare(rendered.resources, bigger).steps if s.type == NODE_POOL_TYPE)
    assert step.op == "update" and not step.rolls_nodes


def test_the_domain_security_group_policies_see_the_node_class(rendered):
    from gpu_fabric.plan.efa_domains.from_resources import shared_security_groups, stack_domains
    from gpu_fabric.policies.efa_domains import efa_domain_security_group
    from gpu_fabric.policies.security_groups import efa_security_groups

    resources = _resources(rendered)
    domain = next(d for d in stack_domains(resources)[0].domains if d.fabric == "efa")
    shared, groups = shared_security_groups(domain, resources)
    assert sorted(groups) == ["gpustack--generic-linux-amd64", H200]
    assert [g.name for g in shared] == ["fabric-efa-domain-gpustack--generic-linux-amd64-sg"]
    assert [g.name for g in efa_security_groups(resources)] == ["fabric-efa-domain-gpustack--generic-linux-amd64-sg"]
    assert run_policies([efa_domain_security_group], resources) == []

    # The NodeClass selecting a group of its own instead: the domain's pools no longer share one.
    own = Resource(SECURITY_GROUP_TYPE, "own-sg", "urn:own-sg", {"vpcId": "vpc-0a1b2c3d4e5f60718"})
    apart = [dataclasses.replace(r, property_dependencies={"spec": (own.urn,)}) if r.type == EC2_NODE_CLASS_TYPE else r
             for r in resources] + [own]
    violations = [v.message for v in run_policies([efa_domain_security_group], apart)]
    assert any(f"pool {H200}: own-sg" in v for v in violations), violations


@pytest.mark.parametrize("ami_type, devices", [("AL2023_x86_64_NVIDIA", ["/dev/xvda"]),
                                               ("BOTTLEROCKET_x86_64_NVIDIA", ["/dev/xvda", "/dev/xvdb"])])
def test_the_component_alone_is_valid_for_each_ami_family(ami_type, devices):
    require_crds()
    result = render_stack("component", PROJECT_DIR, config={}, program=_component_program(_component_args(ami_type=ami_type)))
    node_class = next(r.inputs for r in result.resources if r.type == EC2_NODE_CLASS_TYPE)
    assert [d["deviceName"] for d in node_class["spec"]["blockDeviceMappings"]] == devices
    assert [d.get("rootVolume") for d in node_class["spec"]["blockDeviceMappings"]][-1] is True
    assert crd_problems(node_class) == []
    # Its own group carries the self rules, and the self-rules policy audits it through the NodeClass.
    from gpu_fabric.policies.security_groups import efa_security_group_self_rules, efa_security_groups

    resources = [Resource(r.type, r.name, r.urn, r.inputs, r.parent, dict(r.dependencies)) for r in result.resources]
    assert [g.name for g in efa_security_groups(resources)] == ["p5en-efa-sg"]
    assert run_policies([efa_security_group_self_rules], resources) == []
    no_ingress = [r for r in resources if r.type != "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"]
    assert run_policies([efa_security_group_self_rules], no_ingress) != []


@pytest.mark.parametrize("changes, path", [
    ({"efa_layout": "legacy"}, "efaLayout"),
    ({"node_count": 0}, "node_count"),
    ({"node_count": 5001}, "node_count"),
    ({"node_count": True}, "node_count"),
    ({"object_name": "Not_A_Name"}, "object_name"),
    ({"karpenter": {"node_role": "nodes", "version": "1.9.0"}}, "karpenter"),
])
def test_the_component_refuses_bad_arguments_at_the_property(changes, path):
    from gpu_fabric.resources.karpenter_pool import plan_karpenter_pool

    with pytest.raises(ConfigError) as raised:
        plan_karpenter_pool(_component_args(**changes), BundledInstanceCatalog(), default_name="p5en")
    assert any(p.startswith(path) for p, _ in raised.value.pairs), raised.value.pairs


def test_the_shared_validator_applies_kueues_cel_rules_too():
    require_crds()
    from support.crd_validation import KUEUE_DIR

    require_crds(KUEUE_DIR)
    queue = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "q"},
             "spec": {"resourceGroups": [{"coveredResources": ["nvidia.com/gpu", "cpu"],
                                          "flavors": [{"name": "f", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 8}]}]}]}}
    problems = crd_problems(queue)
    assert problems and all("resourceGroups" in p for p in problems), problems
    queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"].append({"name": "cpu", "nominalQuota": 4})
    assert crd_problems(queue) == []


def test_a_provisioner_mistake_is_reported_with_every_other_field_error():
    config = values()
    aws = config["pools"][0]["aws"]
    aws.pop("vpcId")
    aws["scaling"] = {"minSize": 1, "maxSize": 2}
    paths = [p for p, _ in _problems(config)]
    assert "pools[0].aws.vpcId" in paths and "pools[0].aws.scaling" in paths


def test_the_pack_over_the_analyzer_protocol_passes_the_example_and_refuses_a_mixed_node_pool(rendered, analyzer):  # noqa: F811
    """As the engine calls it: every number a double, property dependencies as URN lists."""
    from pulumi.runtime.proto import analyzer_pb2
    from support.policy_pack import struct

    def request(resources):
        return analyzer_pb2.AnalyzeStackRequest(resources=[
            analyzer_pb2.AnalyzerResource(
                type=r.type, properties=struct(r.inputs), urn=r.urn, name=r.name, parent=r.parent,
                propertyDependencies={key: analyzer_pb2.AnalyzerPropertyDependencies(urns=list(urns))
                                      for key, urns in r.dependencies.items()})
            for r in resources])

    response = analyzer.AnalyzeStack(request(rendered.resources))
    assert [d.message for d in response.diagnostics if d.enforcementLevel == analyzer_pb2.MANDATORY] == []
    mixed = []
    for r in rendered.resources:
        if r.type == NODE_POOL_TYPE:
            inputs = copy.deepcopy(r.inputs)
            inputs["spec"]["template"]["spec"]["requirements"][0]["values"].append("p5.48xlarge")
            r = dataclasses.replace(r, inputs=inputs)
        mixed.append(r)
    response = analyzer.AnalyzeStack(request(mixed))
    found = [d.message for d in response.diagnostics if d.policyName == "karpenter-efa-pool"]
    assert any("instanceTypes p5.48xlarge" in m for m in found), [d.message for d in response.diagnostics]


def test_a_deliberate_subset_of_efa_cards_passes_only_when_the_pack_allows_fewer(rendered):
    def eight_cards(props):
        props["spec"]["networkInterfaces"] = props["spec"]["networkInterfaces"][:9]  # interface + 8 efa-only
    resources = _edit(_resources(rendered), EC2_NODE_CLASS_TYPE, eight_cards)
    assert any("needs 16" in v for v in _violations(resources))
    allowed = run_policies([karpenter_efa_pool], resources, {"karpenter-efa-pool": {"allowFewerEfaInterfaces": True}})
    assert allowed == []
