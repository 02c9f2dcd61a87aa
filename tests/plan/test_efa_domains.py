"""EFA domains: pools joined by transfer legs, and the placement rules EC2 puts on them."""

import copy
import shutil

import pytest

from gpu_fabric.cli import main
from gpu_fabric.plan.efa_domains.derivation import DomainPool, derive_domains
from gpu_fabric.plan.efa_domains.description import describe_domain
from gpu_fabric.plan.efa_domains.from_config import domains_from_config
from gpu_fabric.config.base import ConfigError
from gpu_fabric.resources.inputs import InvalidInputError
from gpu_fabric.validation.configuration import load_config
from gpu_fabric.gpustack.admission_pipeline import analyze

from support.policy_helpers import rendered
from support.stack_configs import PROJECT_DIR, stack_values


H100, C6IN = "gpustack--nvidia-h100-linux-amd64", "gpustack--generic-linux-amd64"


def aws_efa():
    return copy.deepcopy(stack_values("aws-efa"))


def refusal(values):
    with pytest.raises(ConfigError) as caught:
        load_config(values)
    return dict(caught.value.pairs)


def test_aws_efa_is_one_domain_joining_the_gpu_and_the_mooncake_pools():
    analysis = domains_from_config(load_config(aws_efa()))
    assert analysis.findings == ()
    [domain] = analysis.domains
    assert (domain.fabric, domain.pool_names, domain.availability_zone) == ("efa", (C6IN, H100), "us-east-1a")
    kinds = [(leg.kind, leg.source.path, leg.target.path) for leg in domain.legs]
    assert kinds == [
        ("direct", "modelDeployments[0].roles[0]", "modelDeployments[0].roles[1]"),
        ("cache", "modelDeployments[0].roles[0]", "kvCacheBackends[0].connection.managed.members[0]"),
        ("cache", "modelDeployments[0].roles[1]", "kvCacheBackends[0].connection.managed.members[0]"),
    ]
    assert {leg.target.pool for leg in domain.legs if leg.kind == "cache"} == {C6IN}


def test_a_pool_no_leg_reaches_is_in_no_domain():
    values = aws_efa()
    spare = copy.deepcopy(values["pools"][1])
    spare["name"] = "gpustack--generic-spare-linux-amd64"
    spare["aws"]["instanceTypes"] = ["c5n.18xlarge"]
    spare["interfacesPerNode"] = 1
    values["pools"].append(spare)
    analysis = domains_from_config(load_config(values))
    assert analysis.domain_of("gpustack--generic-spare-linux-amd64") is None
    assert analysis.domain_of(H100).pool_names == (C6IN, H100)


def test_moving_the_mooncake_pool_to_another_az_is_refused_naming_both_pools_and_the_leg():
    values = aws_efa()
    values["pools"][1]["aws"]["availabilityZone"] = "us-east-1b"
    problems = refusal(values)
    message = problems["pools[1].aws.availabilityZone"]
    assert "pools[0].aws.availabilityZone" in message and "us-east-1a" in message and "us-east-1b" in message
    assert "cache leg (EFA)" in message and "kvCacheBackends[0].connection.managed.members[0]" in message
    assert "EFA traffic can't cross Availability Zones" in message
    assert len(problems) == 1  # one finding per pair of pools, not one per leg


def test_render_exits_2_naming_both_pools_when_the_domain_spans_two_azs(tmp_path, capsys):
    shutil.copytree(PROJECT_DIR / "stacks", tmp_path / "stacks")
    stack_file = tmp_path / "stacks" / "Pulumi.aws-efa.yaml"
    text = stack_file.read_text()
    first = text.index("availabilityZone: us-east-1a")
    second = text.index("availabilityZone: us-east-1a", first + 1)
    stack_file.write_text(text[:second] + "availabilityZone: us-east-1b" + text[second + len("availabilityZone: us-east-1a"):])
    assert main(["render", "--stack", "aws-efa", "--project", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "pools[1].aws.availabilityZone" in err and "pools[0].aws.availabilityZone" in err
    assert not (tmp_path / "out").exists()  # nothing rendered


def test_pools_of_one_domain_in_different_vpcs_are_refused():
    values = aws_efa()
    values["pools"][1]["aws"]["vpcId"] = "vpc-0ffffffffffffffff"
    problems = refusal(values)
    assert "EFA traffic can't cross VPCs" in problems["pools[1].aws.vpcId"]
    assert "pools[0].aws.vpcId" in problems["pools[1].aws.vpcId"]


def test_different_subnets_of_one_az_are_allowed_as_ec2_documents():
    values = aws_efa()
    values["pools"][1]["aws"]["subnetId"] = "subnet-0fedcba9876543210"
    analysis = domains_from_config(load_config(values))
    assert analysis.findings == ()
    assert {p.subnet_id for p in analysis.domains[0].pools} == {"subnet-0a1b2c3d4e5f60718", "subnet-0fedcba9876543210"}


def test_member_selector_matching_no_efa_pool_is_refused_with_both_ends():
    values = aws_efa()
    values["kvCacheBackends"][0]["connection"]["managed"]["members"][0]["nodeSelector"] = {
        "node.kubernetes.io/instance-type": "c7i.48xlarge"}
    problems = refusal(values)
    message = problems["kvCacheBackends[0].connection.managed.members[0].nodeSelector"]
    assert "use EFA transport" in message and "selects no efa pool" in message
    assert "modelDeployments[0].roles[0]" in message and "modelDeployments[0].roles[1]" in message


def test_domain_mixing_efa_and_rdma_pools_is_refused_with_both_pools():
    values = aws_efa()
    values["pools"].append({"name": "gpustack--nvidia-a10g-linux-amd64", "fabric": "rdma", "acceleratorsPerNode": 4,
                            "interfacesPerNode": 2, "nodeCount": 1})
    # Every Linux node: the EFA pools and the RDMA pool.
    values["kvCacheBackends"][0]["connection"]["managed"]["members"][0]["nodeSelector"] = {"kubernetes.io/os": "linux"}
    problems = refusal(values)
    [path] = [p for p in problems if p.startswith("pools[2]")]
    assert "cannot mix EFA and RDMA pools" in problems[path]
    assert "pools[0]" in problems[path] or "pools[1]" in problems[path]


def test_p4d_and_other_instance_types_in_one_domain_are_refused():
    values = aws_efa()
    values["pools"][0]["aws"]["instanceTypes"] = ["p4d.24xlarge"]
    values["pools"][0]["interfacesPerNode"] = 4
    for role in values["modelDeployments"][0]["roles"]:
        role["resources"]["interface"] = "4"
    problems = refusal(values)
    message = problems["pools[1].aws.instanceTypes"]
    assert "P4d/P4de/DL1" in message and "pools[0].aws.instanceTypes" in message


def test_domains_are_deterministic_and_described_as_paths():
    config = load_config(aws_efa())
    first, second = domains_from_config(config), domains_from_config(config)
    assert first == second
    lines = describe_domain(first.domains[0], "security group fabric-efa-domain-x-sg")
    assert lines[0] == f"EFA domain {C6IN}: 2 pool(s), us-east-1a, security group fabric-efa-domain-x-sg"
    assert (f"KVCacheBackend mooncake-efa members[0] -> pool {C6IN} -> node group fabric-{C6IN}-nodes-ng "
            "(us-east-1a, subnet-0a1b2c3d4e5f60718, 2 EFA)") in "\n".join(lines)


def test_object_paths_name_manifests_when_no_configuration_exists():
    backend = {"apiVersion": "worker.gpustack.ai/v1", "kind": "KVCacheBackend", "metadata": {"name": "mc"},
               "spec": {"transport": {"protocol": "EFA"}, "connection": {"managed": {"leader": {}, "members": [
                   {"nodeSelector": {"node.kubernetes.io/instance-type": "c6in.32xlarge"}, "medium": "DRAM",
                    "capacityPerMember": "1Gi"}]}}}}
    pools = [
        DomainPool("cpu", "efa", "KueuePool cpu", {}, ("c6in.32xlarge", "c5n.18xlarge"), "us-east-1b"),
        DomainPool("other", "efa", "KueuePool other", {}, ("c6in.32xlarge",), "us-east-1a"),
    ]
    analysis = derive_domains(pools, analyze([backend]))
    # A pool of several types is selected by one of its types; members of one backend join their pools.
    assert analysis.domains[0].pool_names == ("cpu", "other")
    [finding] = analysis.findings
    assert finding.path == "KueuePool other.aws.availabilityZone"
    assert "KVCacheBackend mc spec.connection.managed.members[0]" in finding.message


@pytest.fixture(scope="module")
def aws_efa_resources():
    return rendered("aws-efa")


def test_check_and_render_print_each_domain_as_a_path(tmp_path, capsys):
    assert main(["check", "--stack", "aws-efa"]) == 0
    printed = capsys.readouterr().out
    assert f"EFA domain {C6IN}: 2 pool(s), us-east-1a, " in printed
    assert (f"  cache  ModelDeployment team-a/llama-pd role prefill -> pool {H100} -> node group "
            f"fabric-{H100}-nodes-ng (us-east-1a, subnet-0a1b2c3d4e5f60718, 32 EFA)\n"
            f"     <-> KVCacheBackend mooncake-efa members[0] -> pool {C6IN} -> node group "
            f"fabric-{C6IN}-nodes-ng (us-east-1a, subnet-0a1b2c3d4e5f60718, 2 EFA)") in printed
    assert main(["render", "--stack", "seed-rdma", "--out", str(tmp_path / "seed")]) == 0
    printed = capsys.readouterr().out
    assert "RDMA domain gpustack--nvidia-a10g-linux-amd64: 1 pool(s)" in printed
    assert "role prefill -> pool gpustack--nvidia-a10g-linux-amd64 -> nodes outside this stack" in printed


def test_a_type_that_cannot_join_a_cluster_placement_group_is_refused_unless_placement_is_none():
    from gpu_fabric.aws.node_group import NodeGroupInputError, plan_node_group
    from gpu_fabric.aws.catalog.bundled import BundledInstanceCatalog
    from gpu_fabric.config.node_group import AwsNodeGroupSpec

    aws = {**aws_efa()["pools"][1]["aws"], "instanceTypes": ["vt1.24xlarge"]}
    infos = BundledInstanceCatalog().describe(["vt1.24xlarge"])
    assert infos["vt1.24xlarge"]["PlacementGroupInfo"]["SupportedStrategies"] == ["partition", "spread"]
    for mode in ("create", "domain"):
        with pytest.raises(NodeGroupInputError) as caught:
            plan_node_group(AwsNodeGroupSpec.model_validate({**aws, "placementGroup": {"mode": mode}}), infos)
        assert f"vt1.24xlarge cannot launch into a cluster placement group" in str(caught.value)
    assert plan_node_group(AwsNodeGroupSpec.model_validate({**aws, "placementGroup": {"mode": "none"}}), infos)


def test_a_domain_placement_group_conflicts_with_a_capacity_reservation():
    values = aws_efa()
    values["pools"][1]["aws"].update(capacityReservationId="cr-0123456789abcdef0", placementGroup={"mode": "domain"})
    problems = refusal(values)
    assert "'domain' conflicts with capacityReservationId" in str(problems)


def test_efa_domain_component_registers_one_untagged_self_referencing_group_and_an_optional_placement_group():
    from gpu_fabric.program.render import render_stack
    from gpu_fabric.resources.efa_domain import EfaDomain

    def program():
        EfaDomain("d", {"domain": "gpus", "vpc_id": "vpc-1", "tags": {"team": "ml"}, "placement_group": True})

    resources = {r.name: r for r in render_stack("x", config={}, program=program).resources}
    group = resources["d-sg"].inputs
    assert group["vpcId"] == "vpc-1" and group["tags"]["gpu-fabric.io/efa-security-group"] == "gpus"
    assert not [key for key in group["tags"] if key.startswith("kubernetes.io/cluster/")]
    for rule in ("d-sg-self-ingress", "d-sg-self-egress"):
        inputs = resources[rule].inputs
        assert inputs["ipProtocol"] == "-1" and inputs["securityGroupId"] == inputs["referencedSecurityGroupId"]
        assert resources[rule].dependencies["securityGroupId"] == (resources["d-sg"].urn,)
    assert resources["d-placement"].inputs["strategy"] == "cluster"
    with pytest.raises(InvalidInputError, match="vpc_id: required"):
        render_stack("x", config={}, program=lambda: EfaDomain("d", {"domain": "gpus"}))


def test_efa_info_prints_a_stacks_domains_and_their_instance_types(capsys):
    assert main(["efa-info", "--stack", "aws-efa", "--offline"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith(f"EFA domain {C6IN}: 2 pool(s), us-east-1a, security group fabric-efa-domain-{C6IN}-sg\n")
    assert f"node group fabric-{H100}-nodes-ng (us-east-1a, subnet-0a1b2c3d4e5f60718, 32 EFA)" in printed
    assert "\nc6in.32xlarge\n" in printed and "\np5.48xlarge\n" in printed
    assert main(["efa-info", "--stack", "absent", "--offline"]) == 2
    assert main(["efa-info"]) == 2


SG_TYPE = "aws:ec2/securityGroup:SecurityGroup"


def _render(values):
    from gpu_fabric.program.render import render_stack
    from gpu_fabric.resources.fabric import GpuFabric, fabric_args

    config = load_config(values)
    return render_stack("x", config={}, program=lambda: GpuFabric("fabric", fabric_args(config), validated=config)).resources


def test_aws_efa_puts_one_stack_created_self_referencing_group_on_every_efa_interface_of_both_node_groups(
        aws_efa_resources):
    [group] = [r for r in aws_efa_resources if r.type == SG_TYPE]
    assert group.name == f"fabric-efa-domain-{C6IN}-sg"
    assert not [k for k in group.props["tags"] if k.startswith("kubernetes.io/cluster/")]
    rules = [r for r in aws_efa_resources if r.type.startswith("aws:vpc/securityGroup")]
    assert sorted(r.type.rsplit(":", 1)[1] for r in rules) == ["SecurityGroupEgressRule", "SecurityGroupIngressRule"]
    for rule in rules:
        assert rule.props["ipProtocol"] == "-1"
        assert rule.property_dependencies["securityGroupId"] == rule.property_dependencies["referencedSecurityGroupId"] \
            == (group.urn,)
    templates = [r for r in aws_efa_resources if r.type.endswith("LaunchTemplate")]
    assert len(templates) == 2
    for template in templates:
        assert group.urn in template.property_dependencies["networkInterfaces"]
        efa = [i for i in template.props["networkInterfaces"] if i["interfaceType"] != "interface"]
        assert efa and all(i["securityGroups"][0] == f"{group.name}-id" for i in efa)  # the mock's id of the group


def test_a_pool_outside_any_domain_keeps_its_own_security_group():
    values = aws_efa()
    spare = copy.deepcopy(values["pools"][1])
    spare.update(name="gpustack--generic-spare-linux-amd64", interfacesPerNode=1)
    spare["aws"]["instanceTypes"] = ["c5n.18xlarge"]
    values["pools"].append(spare)
    groups = sorted(r.name for r in _render(values) if r.type == SG_TYPE)
    assert groups == [f"fabric-efa-domain-{C6IN}-sg", "fabric-gpustack--generic-spare-linux-amd64-nodes-efa-sg"]


def test_placement_mode_domain_shares_one_cluster_placement_group():
    values = aws_efa()
    for pool in values["pools"]:
        pool["aws"]["placementGroup"] = {"mode": "domain"}
    resources = _render(values)
    [placement] = [r for r in resources if r.type == "aws:ec2/placementGroup:PlacementGroup"]
    assert placement.name == f"fabric-efa-domain-{C6IN}-placement" and placement.inputs["strategy"] == "cluster"
    for template in (r for r in resources if r.type.endswith("LaunchTemplate")):
        assert template.dependencies["placement"] == (placement.urn,)
    assert main(["check", "--stack", "aws-efa"]) == 0


def test_efa_node_group_alone_refuses_the_domain_placement_mode():
    from gpu_fabric.program.render import render_stack
    from gpu_fabric.resources.efa_node_group import EfaNodeGroup

    aws = {k: v for k, v in load_config(aws_efa()).pools[1].aws.model_dump(exclude_none=True).items()}
    aws["placement_group"] = {"mode": "domain"}
    with pytest.raises(ConfigError, match="only GpuFabric knows"):
        render_stack("x", config={}, program=lambda: EfaNodeGroup("alone", aws))
