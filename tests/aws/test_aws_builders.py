"""AwsNodeGroupSpec and the pure AWS input builders (engine camelCase shapes)."""

from __future__ import annotations

import inspect

import pulumi_aws as aws
import pytest
from pydantic import ValidationError

from gpu_fabric.aws import snake_case, to_pulumi_kwargs
from gpu_fabric.aws.node_group import (
    EFA_PRESENT_LABEL,
    NODE_GROUP_IGNORE_CHANGES,
    NodeGroupInputError,
    block_device_mappings,
    efa_security_group_inputs,
    efa_self_egress_rule_inputs,
    efa_self_ingress_rule_inputs,
    instance_type_findings,
    launch_template_inputs,
    node_group_inputs,
    placement_group_inputs,
)
from gpu_fabric.aws.efa import ADDRESS_KEYS, PlannedInterface, validate_plan
from gpu_fabric.config.node_group import AwsNodeGroupSpec, RootVolumeSpec
from gpu_fabric.config.base import ConfigError

# p5.48xlarge, recommended layout, written out by hand: primary ENA, efa-only at 0/1, efa-only on
# device 0 of cards 1..31.
P5_PLAN = [PlannedInterface(0, 0, "interface"), PlannedInterface(0, 1, "efa-only")] + [
    PlannedInterface(card, 0, "efa-only") for card in range(1, 32)
]
P5_INFO = {
    "InstanceType": "p5.48xlarge",
    "NetworkInfo": {
        "EfaSupported": True,
        "EfaInfo": {"MaximumEfaInterfaces": 32},
        "MaximumNetworkCards": 32,
        "NetworkCards": [{"NetworkCardIndex": card, "MaximumNetworkInterfaces": 2} for card in range(32)],
    },
}

BASE_SPEC = {
    "clusterName": "fabric",
    "vpcId": "vpc-1",
    "instanceTypes": ["p5.48xlarge"],
    "availabilityZone": "us-east-1a",
    "subnetId": "subnet-1",
    "nodeRoleArn": "arn:aws:iam::123456789012:role/nodes",
    "scaling": {"minSize": 2, "maxSize": 4},
}


def spec(**changes) -> AwsNodeGroupSpec:
    return AwsNodeGroupSpec.model_validate({**BASE_SPEC, **changes})


def spec_error(**changes) -> str:
    with pytest.raises(ValidationError) as caught:
        spec(**changes)
    return str(ConfigError.from_validation_error(caught.value, ("pools", 0, "aws")))


def lt(**changes) -> dict:
    arguments = dict(
        name="h100",
        instance_type="p5.48xlarge",
        plan=P5_PLAN,
        security_group_ids=["sg-efa", "sg-cluster"],
        user_data_b64="dXNlcmRhdGE=",
    )
    arguments.update(changes)
    return launch_template_inputs(**arguments)


# -- spec ------------------------------------------------------------------------------------------


def test_spec_defaults() -> None:
    parsed = spec()
    assert parsed.ami_type == "AL2023_x86_64_NVIDIA" and parsed.ami_family == "al2023"
    assert parsed.capacity_type == "ON_DEMAND"
    assert parsed.placement_group.mode == "create"
    assert parsed.efa_layout == "recommended"
    assert parsed.root_volume.size_gib == 200
    assert parsed.scaling.initial_size == 2
    assert spec(rootVolume={"sizeGiB": 500}).root_volume.size_gib == 500


def test_subnet_list_is_refused_with_a_clear_message() -> None:
    message = spec_error(subnetId=["subnet-1", "subnet-2"])
    assert "pools[0].aws.subnetId" in message and "exactly one subnet" in message
    assert "exactly one subnet" in spec_error(subnetIds=["subnet-1"])


@pytest.mark.parametrize(
    "changes",
    [{"capacityReservationId": "cr-1"}, {"capacityType": "CAPACITY_BLOCK", "capacityReservationId": "cr-1"}],
)
def test_reservations_imply_no_placement_group(changes: dict) -> None:
    assert spec(**changes).placement_group.mode == "none"


def test_create_placement_group_with_a_reservation_is_refused_naming_the_field() -> None:
    message = spec_error(capacityReservationId="cr-1", placementGroup={"mode": "create"})
    assert "placementGroup.mode" in message


def test_existing_placement_group_needs_a_name() -> None:
    assert "name is required" in spec_error(placementGroup={"mode": "existing"})
    assert spec(placementGroup={"mode": "existing", "name": "pg-1"}).placement_group.name == "pg-1"


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"capacityType": "CAPACITY_BLOCK"}, "capacityReservationId is required"),
        ({"capacityType": "SPOT", "capacityReservationId": "cr-1"}, "SPOT"),
        ({"capacityType": "CAPACITY_BLOCK", "capacityReservationId": "cr-1", "placementGroup": {"mode": "existing", "name": "pg"}}, "CAPACITY_BLOCK"),
        ({"scaling": {"minSize": 3, "maxSize": 2}}, "minSize <= desiredSize <= maxSize"),
        ({"scaling": {"minSize": 1, "maxSize": 2, "desiredSize": 5}}, "minSize <= desiredSize <= maxSize"),
        ({"instanceTypes": []}, "instanceTypes"),
        ({"amiType": "AL2_x86_64_GPU"}, "amiType"),
        ({"tags": {"kubernetes.io/cluster/fabric": "owned"}}, "kubernetes.io/cluster/fabric"),
        ({"efaCardIndices": [1, 1]}, "efaCardIndices"),
        ({"taints": [{"key": "x", "effect": "NoSchedule"}]}, "effect"),
        ({"subnetIDs": "subnet-1"}, "unknown field"),
    ],
)
def test_invalid_specs_are_refused(changes: dict, expected: str) -> None:
    assert expected in spec_error(**changes)


def test_required_fields_are_named() -> None:
    with pytest.raises(ValidationError) as caught:
        AwsNodeGroupSpec.model_validate({key: value for key, value in BASE_SPEC.items() if key not in ("nodeRoleArn", "vpcId")})
    message = str(ConfigError.from_validation_error(caught.value))
    assert "nodeRoleArn" in message and "vpcId" in message


# -- launch template -------------------------------------------------------------------------------


def test_interfaces_carry_every_security_group_and_no_addresses() -> None:
    interfaces = lt()["networkInterfaces"]
    assert len(interfaces) == 33
    for interface in interfaces:
        assert interface["securityGroups"] == ["sg-efa", "sg-cluster"]
        assert interface["deleteOnTermination"] == "true"
        assert "subnetId" not in interface
        assert not set(ADDRESS_KEYS) & set(interface)
    assert (interfaces[0]["networkCardIndex"], interfaces[0]["deviceIndex"], interfaces[0]["interfaceType"]) == (0, 0, "interface")
    assert {(i["networkCardIndex"], i["deviceIndex"], i["interfaceType"]) for i in interfaces[1:]} == {
        (0, 1, "efa-only"),
        *((card, 0, "efa-only") for card in range(1, 32)),
    }
    # The colleague's plan validator accepts the launch-template shape as is.
    assert validate_plan(P5_INFO, interfaces) == []


def test_launch_template_security_basics() -> None:
    inputs = lt()
    assert "vpcSecurityGroupIds" not in inputs and "securityGroupNames" not in inputs
    assert inputs["metadataOptions"] == {"httpTokens": "required", "httpEndpoint": "enabled", "httpPutResponseHopLimit": 2}
    assert inputs["blockDeviceMappings"] == [
        {"deviceName": "/dev/xvda", "ebs": {"encrypted": "true", "volumeType": "gp3", "deleteOnTermination": "true", "volumeSize": 200}}
    ]
    assert inputs["instanceType"] == "p5.48xlarge"
    assert inputs["userData"] == "dXNlcmRhdGE="
    assert {spec["resourceType"] for spec in inputs["tagSpecifications"]} == {"instance", "volume", "network-interface"}
    assert "placement" not in inputs and "capacityReservationSpecification" not in inputs and "instanceMarketOptions" not in inputs


def test_bottlerocket_encrypts_os_and_data_volumes() -> None:
    mappings = block_device_mappings("bottlerocket", 300, "key-1")
    assert [mapping["deviceName"] for mapping in mappings] == ["/dev/xvda", "/dev/xvdb"]
    assert all(m["ebs"]["encrypted"] == "true" and m["ebs"]["volumeType"] == "gp3" and m["ebs"]["kmsKeyId"] == "key-1" for m in mappings)
    assert "volumeSize" not in mappings[0]["ebs"] and mappings[1]["ebs"]["volumeSize"] == 300
    assert lt(ami_family="bottlerocket", root_volume=RootVolumeSpec(size_gib=300))["blockDeviceMappings"][1]["ebs"]["volumeSize"] == 300


def test_placement_and_capacity_targets() -> None:
    assert lt(placement_group_name="pg-1")["placement"] == {"groupName": "pg-1"}
    reserved = lt(capacity_reservation_id="cr-1")
    assert reserved["capacityReservationSpecification"] == {"capacityReservationTarget": {"capacityReservationId": "cr-1"}}
    assert "instanceMarketOptions" not in reserved
    block = lt(capacity_reservation_id="cr-2", capacity_block=True)
    assert block["instanceMarketOptions"] == {"marketType": "capacity-block"}
    with pytest.raises(NodeGroupInputError, match="capacityReservationId"):
        lt(capacity_block=True)


def test_interfaces_need_a_security_group() -> None:
    with pytest.raises(NodeGroupInputError, match="securityGroupIds"):
        lt(security_group_ids=[])


# -- security group, rules, placement group --------------------------------------------------------


def test_efa_security_group_is_not_cluster_tagged() -> None:
    inputs = efa_security_group_inputs("h100", "vpc-1", {"team": "ml"})
    assert inputs["vpcId"] == "vpc-1"
    assert inputs["tags"] == {"team": "ml", "Name": "h100-efa"}
    assert "ingress" not in inputs and "egress" not in inputs
    with pytest.raises(NodeGroupInputError, match="kubernetes.io/cluster/fabric"):
        efa_security_group_inputs("h100", "vpc-1", {"kubernetes.io/cluster/fabric": "owned"})


@pytest.mark.parametrize("builder", [efa_self_ingress_rule_inputs, efa_self_egress_rule_inputs])
def test_self_rules_allow_all_protocols_to_and_from_itself(builder) -> None:
    rule = builder("sg-efa")
    assert rule["securityGroupId"] == rule["referencedSecurityGroupId"] == "sg-efa"
    assert rule["ipProtocol"] == "-1"
    assert not {"cidrIpv4", "cidrIpv6", "prefixListId"} & set(rule)


def test_placement_group_is_a_cluster_group() -> None:
    assert placement_group_inputs() == {"strategy": "cluster"}
    assert placement_group_inputs("pg-1", {"team": "ml"}) == {"strategy": "cluster", "name": "pg-1", "tags": {"team": "ml"}}


# -- node group ------------------------------------------------------------------------------------


def ng(**changes) -> dict:
    arguments = dict(
        cluster_name="fabric",
        node_role_arn="arn:aws:iam::123456789012:role/nodes",
        subnet_ids=["subnet-1"],
        ami_type="AL2023_x86_64_NVIDIA",
        capacity_type="ON_DEMAND",
        launch_template_id="lt-1",
        launch_template_version="1",
        min_size=2,
        max_size=4,
        desired_size=2,
        labels={"gpu-fabric.io/pool": "h100"},
        taints=[{"key": "nvidia.com/gpu", "effect": "NO_SCHEDULE"}],
    )
    arguments.update(changes)
    return node_group_inputs(**arguments)


def test_node_group_inputs() -> None:
    inputs = ng()
    assert inputs["subnetIds"] == ["subnet-1"]
    assert inputs["launchTemplate"] == {"id": "lt-1", "version": "1"}
    assert inputs["labels"] == {"gpu-fabric.io/pool": "h100", EFA_PRESENT_LABEL: "true"}
    assert inputs["taints"] == [{"key": "nvidia.com/gpu", "effect": "NO_SCHEDULE"}]
    assert inputs["scalingConfig"] == {"minSize": 2, "maxSize": 4, "desiredSize": 2}
    assert "instanceTypes" not in inputs
    assert NODE_GROUP_IGNORE_CHANGES == ("scalingConfig.desiredSize",)


def test_node_group_refuses_several_subnets_and_a_false_efa_label() -> None:
    with pytest.raises(NodeGroupInputError, match="exactly one subnet"):
        ng(subnet_ids=["subnet-1", "subnet-2"])
    with pytest.raises(NodeGroupInputError, match=EFA_PRESENT_LABEL):
        ng(labels={EFA_PRESENT_LABEL: "false"})


def test_instance_type_findings_name_the_type_and_zone() -> None:
    g5 = {"InstanceType": "g5.xlarge", "NetworkInfo": {"EfaSupported": False}}
    findings = instance_type_findings(
        ["p5.48xlarge", "g5.xlarge"],
        {"p5.48xlarge": P5_INFO, "g5.xlarge": g5},
        availability_zone="us-east-1a",
        offered_availability_zones={"p5.48xlarge": ["us-east-1b"], "g5.xlarge": ["us-east-1a"]},
    )
    assert findings == [
        "availabilityZone: us-east-1a does not offer p5.48xlarge (offered in: us-east-1b)",
        "instanceTypes: g5.xlarge does not support EFA (NetworkInfo.EfaSupported is false)",
    ]


# -- the one camelCase -> pulumi-aws conversion ----------------------------------------------------


def init_parameters(cls) -> set[str]:
    return set(inspect.signature(cls.__init__).parameters) - {"__self__", "self", "resource_name", "opts", "__props__"}


def test_snake_case() -> None:
    assert snake_case("networkCardIndex") == "network_card_index"
    assert snake_case("ipv4AddressCount") == "ipv4_address_count"
    assert snake_case("httpPutResponseHopLimit") == "http_put_response_hop_limit"


def test_converted_inputs_are_pulumi_aws_arguments() -> None:
    launch_template = to_pulumi_kwargs(lt(placement_group_name="pg", capacity_reservation_id="cr", capacity_block=True, tags={"a.b/c": "d"}))
    assert set(launch_template) <= init_parameters(aws.ec2.LaunchTemplateArgs)
    assert set(launch_template["network_interfaces"][0]) <= init_parameters(aws.ec2.LaunchTemplateNetworkInterfaceArgs)
    assert set(launch_template["metadata_options"]) <= init_parameters(aws.ec2.LaunchTemplateMetadataOptionsArgs)
    assert set(launch_template["block_device_mappings"][0]["ebs"]) <= init_parameters(aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs)
    assert set(launch_template["capacity_reservation_specification"]["capacity_reservation_target"]) <= init_parameters(
        aws.ec2.LaunchTemplateCapacityReservationSpecificationCapacityReservationTargetArgs
    )
    assert launch_template["tags"] == {"a.b/c": "d"}  # tag keys are never converted
    assert launch_template["tag_specifications"][0]["tags"]["a.b/c"] == "d"

    node_group = to_pulumi_kwargs(ng(instance_types=["p5.48xlarge", "p5e.48xlarge"], tags={"x": "y"}))
    assert set(node_group) <= init_parameters(aws.eks.NodeGroupArgs)
    assert node_group["labels"][EFA_PRESENT_LABEL] == "true"
    assert set(node_group["scaling_config"]) == {"min_size", "max_size", "desired_size"}

    assert set(to_pulumi_kwargs(efa_security_group_inputs("h", "vpc"))) <= init_parameters(aws.ec2.SecurityGroupArgs)
    assert set(to_pulumi_kwargs(efa_self_ingress_rule_inputs("sg"))) <= init_parameters(aws.vpc.SecurityGroupIngressRuleArgs)
    assert set(to_pulumi_kwargs(efa_self_egress_rule_inputs("sg"))) <= init_parameters(aws.vpc.SecurityGroupEgressRuleArgs)
    assert set(to_pulumi_kwargs(placement_group_inputs("pg", {"t": "v"}))) <= init_parameters(aws.ec2.PlacementGroupArgs)
