"""``gpu-fabric check --preview``: policies run over values unknown at preview, none crashes or passes silently."""

import copy

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pulumi.runtime.rpc import UNKNOWN

from support.bad_input import run_cli
from gpu_fabric.policies import ALL_POLICIES, POLICIES_BY_NAME
from gpu_fabric.plan.resource_view import LAUNCH_TEMPLATE_TYPE, Resource
from gpu_fabric.policies.runner import NotApplicable, run_policies, run_policy
from gpu_fabric.program.render import render_stack
from support.stack_configs import PROJECT_DIR, stack_values


def preview(stack="aws-efa"):
    values = {f"gpu-fabric:{k}": v for k, v in stack_values(stack).items()} | {"aws:region": "us-east-1"}
    return render_stack(stack, PROJECT_DIR, config=values, preview=True)


def as_resources(result):
    return [Resource(r.type, r.name, r.urn, r.inputs, r.parent, r.dependencies) for r in result.resources]


def test_preview_leaves_ids_and_computed_names_unknown():
    resources = {r.type: r for r in preview().resources}
    node_group = resources["aws:eks/nodeGroup:NodeGroup"].inputs
    assert node_group["launchTemplate"]["id"] == UNKNOWN and node_group["launchTemplate"]["version"] == UNKNOWN
    template = [r for r in preview().resources if r.type == LAUNCH_TEMPLATE_TYPE and "placement" in r.inputs][0]
    assert template.inputs["placement"]["groupName"] == UNKNOWN
    assert all(i["securityGroups"][0] == UNKNOWN for i in template.inputs["networkInterfaces"])
    # What the configuration makes known stays known.
    assert node_group["clusterName"] == "llm-serving" and node_group["subnetIds"] == ["subnet-0a1b2c3d4e5f60718"]


def test_check_preview_of_the_examples_runs_every_policy_cleanly():
    outcome = run_cli("check", "--preview", "--project", str(PROJECT_DIR))
    assert outcome.code == 0, outcome.describe()
    assert "the pack failed" not in outcome.out and "can't run policy" not in outcome.out
    from gpu_fabric.program.render import example_stacks

    assert outcome.out.count("(preview over gRPC: ids and names of new resources unknown)") == len(example_stacks(PROJECT_DIR))


def test_a_known_mistake_is_still_refused_at_preview():
    resources = as_resources(preview())
    broken = []
    for resource in resources:
        if resource.type == LAUNCH_TEMPLATE_TYPE:
            props = copy.deepcopy(dict(resource.props))
            props["metadataOptions"] = {**props["metadataOptions"], "httpTokens": "optional"}
            resource = Resource(resource.type, resource.name, resource.urn, props, resource.parent)
        broken.append(resource)
    violations = run_policy(POLICIES_BY_NAME["launch-template-imdsv2"], broken)
    assert violations and all(v.mandatory for v in violations)


def test_an_instance_type_missing_from_the_table_is_not_applicable_with_the_reason():
    template = Resource(LAUNCH_TEMPLATE_TYPE, "lt", "urn:lt", {
        "instanceType": "p99.96xlarge",
        "networkInterfaces": [{"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "efa", "securityGroups": [UNKNOWN]}],
    })
    skipped: list[NotApplicable] = []
    assert run_policy(POLICIES_BY_NAME["efa-launch-template-interfaces"], [template], not_applicable=skipped) == []
    assert skipped == [NotApplicable("efa-launch-template-interfaces",
                                     "instance-type rules not checked: p99.96xlarge is not in the bundled instance table",
                                     "urn:lt")]


PREVIEW_RESOURCES = as_resources(preview())


def leaves(value, prefix=()):
    if isinstance(value, dict):
        return [p for key, item in value.items() for p in leaves(item, (*prefix, key))]
    if isinstance(value, list):
        return [p for index, item in enumerate(value) for p in leaves(item, (*prefix, index))]
    return [prefix]


LEAVES = [(index, path) for index, r in enumerate(PREVIEW_RESOURCES) for path in leaves(dict(r.props)) if path]


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(LEAVES), min_size=1, max_size=25, unique=True))
def test_no_policy_crashes_on_unknowns_anywhere(chosen):
    resources = [Resource(r.type, r.name, r.urn, copy.deepcopy(dict(r.props)), r.parent, r.property_dependencies)
                 for r in PREVIEW_RESOURCES]
    for index, path in chosen:
        target = resources[index].props
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = UNKNOWN
    violations = run_policies(ALL_POLICIES, resources)
    assert not [v for v in violations if v.message.startswith("policy failed")], violations


TEAM_PROGRAM = '''
from pathlib import Path

import pulumi_aws as aws
import yaml

from gpu_fabric import GpuFabric
from gpu_fabric.aws import snake_case

config = yaml.safe_load((Path(__file__).parent / "Pulumi.team.yaml").read_text())["config"]
values = {key.split(":", 1)[1]: value for key, value in config.items() if key.startswith("gpu-fabric:")}
values.pop("kubernetes")
# The team's own resources; the offline mocks have no table entry for any of them.
vpc = aws.ec2.Vpc("vpc", cidr_block="10.0.0.0/16")
subnet = aws.ec2.Subnet("subnet", vpc_id=vpc.id, cidr_block="10.0.0.0/24")
cluster = aws.eks.Cluster("cluster", role_arn="arn:aws:iam::123456789012:role/eks",
                          vpc_config={"subnet_ids": [subnet.id]})
role = aws.iam.Role("nodes", assume_role_policy="{}")
for pool in values["pools"]:
    pool["aws"].update(clusterName=cluster.name, vpcId=vpc.id, subnetId=subnet.id, nodeRoleArn=role.arn)
GpuFabric("fabric", {snake_case(key): value for key, value in values.items()})
'''


def test_check_over_a_teams_program_whose_aws_resources_have_no_mock_table(tmp_path):
    stacks = tmp_path / "stacks"
    stacks.mkdir()
    (tmp_path / "Pulumi.yaml").write_text((PROJECT_DIR / "Pulumi.yaml").read_text())
    (stacks / "Pulumi.team.yaml").write_text((PROJECT_DIR / "stacks" / "Pulumi.aws-efa.yaml").read_text())
    (stacks / "__main__.py").write_text(TEAM_PROGRAM)
    outcome = run_cli("check", "--project", str(tmp_path), "--stack", "team")
    assert outcome.code == 0, outcome.describe()
    assert "Output object at" not in outcome.out + outcome.err and "resolved to no value" not in outcome.err
    # The node groups join the team's cluster by its (offline) name, in its subnet.
    assert "node group fabric-gpustack--nvidia-h100-linux-amd64-nodes-ng (us-east-1a, subnet-" in outcome.out


def test_offline_answers_for_aws_resources_gpu_fabric_does_not_create():
    from pulumi.runtime.rpc import UNKNOWN as ENGINE_UNKNOWN

    from gpu_fabric.program.mocks import offline_id, provider_outputs

    cluster = provider_outputs("aws:eks/cluster:Cluster", "c", {"roleArn": "arn:aws:iam::1:role/x"})
    assert cluster["name"] == "c" and cluster["arn"] == "arn:aws:eks:offline:000000000000:cluster/c"
    assert cluster["endpoint"] == ENGINE_UNKNOWN and "roleArn" not in cluster  # computed only, given inputs kept
    assert provider_outputs("aws:iam/role:Role", "r", {})["arn"] == "arn:aws:iam::000000000000:role/r"
    assert offline_id("aws:ec2/subnet:Subnet", "s").startswith("subnet-") and len(offline_id("aws:ec2/subnet:Subnet", "s")) == 24
    assert provider_outputs("kubernetes:core/v1:ConfigMap", "cm", {}) == {}
