"""EfaNodeGroup under Pulumi's mock runtime: the inputs of every registered resource."""

from __future__ import annotations

import base64
import email
import tomllib
from dataclasses import dataclass, field
from typing import Any, Sequence

import pulumi
import pytest
import yaml
from pulumi.runtime.mocks import MockMonitor

from gpu_fabric.aws import snake_case
from gpu_fabric.aws.node_group import NodeGroupInputError, plan_node_group
from gpu_fabric.aws.catalog.types import UnknownInstanceTypeError
from gpu_fabric.aws.efa import ADDRESS_KEYS
from gpu_fabric.resources.efa_node_group import EfaNodeGroup
from gpu_fabric.resources.inputs import InvalidInputError
from gpu_fabric.config.node_group import AwsNodeGroupSpec
from gpu_fabric.config.base import ConfigError
from gpu_fabric.config.topology import KubeletTopology


def network_info(cards: int, per_card: int, efa: int | None) -> dict:
    info: dict[str, Any] = {
        "EfaSupported": efa is not None,
        "MaximumNetworkCards": cards,
        "MaximumNetworkInterfaces": cards * per_card,
        "NetworkCards": [{"NetworkCardIndex": card, "MaximumNetworkInterfaces": per_card} for card in range(cards)],
    }
    if efa is not None:
        info["EfaInfo"] = {"MaximumEfaInterfaces": efa}
    return info


ITEMS = {
    "p5.48xlarge": {"InstanceType": "p5.48xlarge", "NetworkInfo": network_info(32, 2, 32)},
    "p5e.48xlarge": {"InstanceType": "p5e.48xlarge", "NetworkInfo": network_info(32, 2, 32)},
    "p6-b300.48xlarge": {"InstanceType": "p6-b300.48xlarge", "NetworkInfo": network_info(17, 4, 16)},
    "g5.xlarge": {"InstanceType": "g5.xlarge", "NetworkInfo": network_info(1, 4, None)},
}


class FakeCatalog:
    """DescribeInstanceTypes items written by hand, so the tests need neither boto3 nor the table."""

    def describe(self, instance_types: Sequence[str]) -> dict[str, dict]:
        unknown = [name for name in instance_types if name not in ITEMS]
        if unknown:
            raise UnknownInstanceTypeError(unknown, "fake catalog")
        return {name: ITEMS[name] for name in instance_types}


@dataclass
class Registration:
    type: str
    name: str
    inputs: dict
    custom: bool
    ignore_changes: list[str] = field(default_factory=list)
    parent: str = ""


class RecordingMocks(pulumi.runtime.Mocks):
    def __init__(self) -> None:
        self.registrations: dict[str, Registration] = {}

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        self.registrations[args.name] = Registration(args.typ, args.name, dict(args.inputs), args.custom)
        outputs = dict(args.inputs)
        if args.typ == "aws:ec2/launchTemplate:LaunchTemplate":
            outputs["latestVersion"] = 1
        if args.typ == "aws:ec2/placementGroup:PlacementGroup":
            outputs.setdefault("name", f"{args.name}-auto")
        if args.typ == "aws:eks/nodeGroup:NodeGroup":
            outputs.setdefault("nodeGroupName", f"{args.name}-auto")
        return f"{args.name}-id", outputs

    def call(self, args: pulumi.runtime.MockCallArgs):
        return {}


class RecordingMonitor(MockMonitor):
    """Adds what MockResourceArgs leaves out: ignoreChanges and the parent of each registration."""

    def __init__(self, mocks: RecordingMocks) -> None:
        super().__init__(mocks)
        self.options: dict[str, tuple[list[str], str]] = {}

    def RegisterResource(self, request):
        self.options[request.name] = (list(request.ignoreChanges), request.parent)
        return super().RegisterResource(request)


@pytest.fixture
def mocks() -> RecordingMocks:
    recording = RecordingMocks()
    monitor = RecordingMonitor(recording)
    pulumi.runtime.set_mocks(recording, preview=False, monitor=monitor)
    recording.monitor = monitor
    return recording


def create(name: str, args: Any, **keywords) -> dict[str, Any]:
    """Create the component under the mocks and wait for every registration; returns its outputs."""
    outputs: dict[str, Any] = {}

    @pulumi.runtime.test
    def program():
        # The test data keeps the stack file's camelCase; the component's argument keys are snake_case.
        component = EfaNodeGroup(name, {snake_case(k): v for k, v in args.items()}, catalog=FakeCatalog(), **keywords)
        return pulumi.Output.all(
            component.node_group_name, component.launch_template_id, component.security_group_id,
            component.placement_group_name, component.interface_plan,
        ).apply(lambda values: outputs.update(zip(("node_group", "launch_template", "security_group", "placement_group", "plan"), values)))

    program()
    return outputs


def registered(mocks: RecordingMocks, name: str) -> Registration:
    registration = mocks.registrations[name]
    registration.ignore_changes, registration.parent = mocks.monitor.options[name]
    return registration


ARGS = {
    "clusterName": "fabric",
    "vpcId": "vpc-1",
    "instanceTypes": ["p5.48xlarge"],
    "availabilityZone": "us-east-1a",
    "subnetId": "subnet-1",
    "nodeRoleArn": "arn:aws:iam::123456789012:role/nodes",
    "securityGroupIds": ["sg-cluster"],
    "scaling": {"minSize": 2, "maxSize": 8, "desiredSize": 4},
    "labels": {"gpu-fabric.io/pool": "h100"},
    "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}],
    "tags": {"team": "ml"},
    "poolLabels": {"gpu-fabric.io/fabric": "efa"},
}
CHILDREN = ("h100-efa-sg", "h100-efa-sg-self-ingress", "h100-efa-sg-self-egress", "h100-lt", "h100-ng")


def interface_triples(launch_template: Registration) -> list[tuple[int, int, str]]:
    return [
        (int(i["networkCardIndex"]), int(i["deviceIndex"]), i["interfaceType"]) for i in launch_template.inputs["networkInterfaces"]
    ]


# -- happy paths -----------------------------------------------------------------------------------


def test_p5_node_group(mocks: RecordingMocks) -> None:
    outputs = create("h100", ARGS)

    component = registered(mocks, "h100")
    assert component.type == "gpu-fabric:index:EfaNodeGroup" and not component.custom
    for child in (*CHILDREN, "h100-placement"):
        assert registered(mocks, child).parent.endswith("$gpu-fabric:index:EfaNodeGroup::h100")

    launch_template = registered(mocks, "h100-lt")
    assert launch_template.type == "aws:ec2/launchTemplate:LaunchTemplate"
    assert interface_triples(launch_template) == [(0, 0, "interface"), (0, 1, "efa-only")] + [
        (card, 0, "efa-only") for card in range(1, 32)
    ]
    for interface in launch_template.inputs["networkInterfaces"]:
        assert interface["securityGroups"] == ["h100-efa-sg-id", "sg-cluster"]
        assert "subnetId" not in interface and not set(ADDRESS_KEYS) & set(interface)
    assert "vpcSecurityGroupIds" not in launch_template.inputs
    assert launch_template.inputs["instanceType"] == "p5.48xlarge"
    assert launch_template.inputs["metadataOptions"] == {"httpTokens": "required", "httpEndpoint": "enabled", "httpPutResponseHopLimit": 2}
    (root,) = launch_template.inputs["blockDeviceMappings"]
    assert root["deviceName"] == "/dev/xvda"
    assert root["ebs"] == {"encrypted": "true", "volumeType": "gp3", "deleteOnTermination": "true", "volumeSize": 200}
    assert launch_template.inputs["placement"] == {"groupName": "h100-placement-auto"}

    placement = registered(mocks, "h100-placement")
    assert placement.type == "aws:ec2/placementGroup:PlacementGroup" and placement.inputs["strategy"] == "cluster"

    security_group = registered(mocks, "h100-efa-sg")
    assert security_group.inputs["vpcId"] == "vpc-1"
    assert not any(key.startswith("kubernetes.io/cluster/") for key in security_group.inputs["tags"])
    assert "ingress" not in security_group.inputs and "egress" not in security_group.inputs
    for rule_name, rule_type in (
        ("h100-efa-sg-self-ingress", "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"),
        ("h100-efa-sg-self-egress", "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"),
    ):
        rule = registered(mocks, rule_name)
        assert rule.type == rule_type
        assert rule.inputs["ipProtocol"] == "-1"
        assert rule.inputs["securityGroupId"] == rule.inputs["referencedSecurityGroupId"] == "h100-efa-sg-id"
        assert not {"cidrIpv4", "cidrIpv6"} & set(rule.inputs)

    node_group = registered(mocks, "h100-ng")
    assert node_group.type == "aws:eks/nodeGroup:NodeGroup"
    assert node_group.ignore_changes == ["scalingConfig.desiredSize"]
    assert node_group.inputs["clusterName"] == "fabric"
    assert node_group.inputs["subnetIds"] == ["subnet-1"]
    assert node_group.inputs["amiType"] == "AL2023_x86_64_NVIDIA" and node_group.inputs["capacityType"] == "ON_DEMAND"
    assert node_group.inputs["launchTemplate"] == {"id": "h100-lt-id", "version": "1"}
    assert node_group.inputs["labels"] == {
        "gpu-fabric.io/fabric": "efa",
        "gpu-fabric.io/pool": "h100",
        "vpc.amazonaws.com/efa.present": "true",
    }
    assert node_group.inputs["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}]
    assert node_group.inputs["scalingConfig"] == {"minSize": 2, "maxSize": 8, "desiredSize": 4}
    assert "instanceTypes" not in node_group.inputs

    assert outputs["node_group"] == "h100-ng-auto" and outputs["launch_template"] == "h100-lt-id"
    assert outputs["security_group"] == "h100-efa-sg-id" and outputs["placement_group"] == "h100-placement-auto"
    assert len(outputs["plan"]) == 33 and outputs["plan"][0] == {"card": 0, "device": 0, "type": "interface"}


def test_user_data_carries_topology_and_labels(mocks: RecordingMocks) -> None:
    create("h100", {**ARGS, "topology": {"policy": "single-numa-node", "scope": "pod"}})
    user_data = base64.b64decode(registered(mocks, "h100-lt").inputs["userData"]).decode()
    (part,) = [p for p in email.message_from_string(user_data).get_payload() if p.get_content_type() == "application/node.eks.aws"]
    node_config = yaml.safe_load(part.get_payload())
    kubelet = node_config["spec"]["kubelet"]
    assert KubeletTopology.from_kubelet_config(kubelet["config"]) == KubeletTopology(policy="single-numa-node", scope="pod")
    assert "--node-labels=gpu-fabric.io/fabric=efa,gpu-fabric.io/pool=h100,vpc.amazonaws.com/efa.present=true" in kubelet["flags"]
    assert "--register-with-taints=nvidia.com/gpu=present:NoSchedule" in kubelet["flags"]


def test_p6_b300_bottlerocket_node_group(mocks: RecordingMocks) -> None:
    create("b300", {**ARGS, "instanceTypes": ["p6-b300.48xlarge"], "amiType": "BOTTLEROCKET_x86_64_NVIDIA"})
    launch_template = registered(mocks, "b300-lt")
    # 16 EFAs on cards 1..16; card 0 carries only the primary ENA.
    assert interface_triples(launch_template) == [(0, 0, "interface")] + [(card, 0, "efa-only") for card in range(1, 17)]
    assert [m["deviceName"] for m in launch_template.inputs["blockDeviceMappings"]] == ["/dev/xvda", "/dev/xvdb"]
    assert all(m["ebs"]["encrypted"] == "true" and m["ebs"]["volumeType"] == "gp3" for m in launch_template.inputs["blockDeviceMappings"])
    settings = tomllib.loads(base64.b64decode(launch_template.inputs["userData"]).decode())
    assert KubeletTopology.from_bottlerocket_settings(settings) == KubeletTopology.fabric_default()
    assert settings["settings"]["kubernetes"]["node-labels"]["vpc.amazonaws.com/efa.present"] == "true"
    assert registered(mocks, "b300-ng").inputs["amiType"] == "BOTTLEROCKET_x86_64_NVIDIA"


def test_existing_placement_group_is_referenced_not_created(mocks: RecordingMocks) -> None:
    outputs = create("h100", {**ARGS, "placementGroup": {"mode": "existing", "name": "pg-shared"}})
    assert "h100-placement" not in mocks.registrations
    assert registered(mocks, "h100-lt").inputs["placement"] == {"groupName": "pg-shared"}
    assert outputs["placement_group"] == "pg-shared"


@pytest.mark.parametrize(
    ("changes", "market_type"),
    [
        ({"capacityReservationId": "cr-1"}, None),
        ({"capacityType": "CAPACITY_BLOCK", "capacityReservationId": "cr-1"}, "capacity-block"),
    ],
)
def test_reserved_capacity_uses_no_placement_group(mocks: RecordingMocks, changes: dict, market_type: str | None) -> None:
    outputs = create("h100", {**ARGS, **changes})
    assert "h100-placement" not in mocks.registrations
    launch_template = registered(mocks, "h100-lt").inputs
    assert "placement" not in launch_template
    assert launch_template["capacityReservationSpecification"] == {"capacityReservationTarget": {"capacityReservationId": "cr-1"}}
    assert launch_template.get("instanceMarketOptions", {}).get("marketType") == market_type
    assert registered(mocks, "h100-ng").inputs["capacityType"] == changes.get("capacityType", "ON_DEMAND")
    assert outputs["placement_group"] is None


def test_several_agreeing_types_go_on_the_node_group(mocks: RecordingMocks) -> None:
    create("h100", {**ARGS, "instanceTypes": ["p5.48xlarge", "p5e.48xlarge"]})
    assert "instanceType" not in registered(mocks, "h100-lt").inputs
    assert registered(mocks, "h100-ng").inputs["instanceTypes"] == ["p5.48xlarge", "p5e.48xlarge"]


def test_snake_case_keys_are_accepted(mocks: RecordingMocks) -> None:
    snake = {
        "cluster_name": "fabric",
        "vpc_id": "vpc-1",
        "instance_types": ["p5.48xlarge"],
        "availability_zone": "us-east-1a",
        "subnet_id": "subnet-1",
        "node_role_arn": "arn:aws:iam::123456789012:role/nodes",
        "scaling": {"min_size": 2, "max_size": 2},
        "pool_labels": {"gpu-fabric.io/pool": "h100"},
    }
    create("from-snake", snake)
    assert registered(mocks, "from-snake-ng").inputs["labels"]["gpu-fabric.io/pool"] == "h100"


# -- bad inputs register nothing -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "error", "expected"),
    [
        # Every refusal is an InvalidInputError (a pulumi.InputPropertiesError and a ConfigError) naming the property.
        ({"instanceTypes": ["g5.xlarge"]}, InvalidInputError, "instanceTypes: g5.xlarge does not support EFA"),
        ({"instanceTypes": ["p5.48xlarge", "p6-b300.48xlarge"]}, InvalidInputError, "p6-b300.48xlarge"),
        ({"instanceTypes": ["x9.huge"]}, InvalidInputError, "x9.huge"),
        ({"subnetId": ["subnet-1", "subnet-2"]}, ConfigError, "subnetId"),
        ({"capacityReservationId": "cr-1", "placementGroup": {"mode": "create"}}, ConfigError, "placementGroup.mode"),
        ({"topology": {"cpuManagerPolicy": "static"}}, ConfigError, "reservedSystemCPUs"),
        ({"labels": {"vpc.amazonaws.com/efa.present": "false"}}, InvalidInputError, "efa.present"),
        (
            {"amiType": "BOTTLEROCKET_x86_64_NVIDIA", "topology": {"cpuManagerPolicy": "static", "reservedSystemCPUs": "0", "cpuManagerPolicyOptions": {"align-by-socket": "true"}}},
            ValueError,
            "align-by-socket",
        ),
    ],
)
def test_bad_input_raises_and_registers_nothing(mocks: RecordingMocks, changes: dict, error: type, expected: str) -> None:
    with pytest.raises(error, match=expected):
        create("bad", {**ARGS, **changes})
    assert mocks.registrations == {}


def test_az_without_the_type_registers_nothing(mocks: RecordingMocks) -> None:
    with pytest.raises(InvalidInputError, match="us-east-1a does not offer p5.48xlarge"):
        create("bad", ARGS, offered_availability_zones={"p5.48xlarge": ["us-east-1b"]})
    assert mocks.registrations == {}


def test_plan_node_group_names_disagreeing_types() -> None:
    spec_fields = {key: value for key, value in ARGS.items() if key != "poolLabels"}
    spec = AwsNodeGroupSpec.model_validate({**spec_fields, "instanceTypes": ["p5.48xlarge", "p6-b300.48xlarge"]})
    with pytest.raises(NodeGroupInputError) as caught:
        plan_node_group(spec, FakeCatalog().describe(spec.instance_types))
    assert "p5.48xlarge" in str(caught.value) and "p6-b300.48xlarge" in str(caught.value)
