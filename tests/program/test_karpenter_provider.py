"""``KarpenterEfaPool`` through the multi-language provider: its schema and a construct with camelCase inputs."""

from typing import Any

from gpu_fabric.aws.karpenter import EC2_NODE_CLASS_TYPE, NODE_POOL_TYPE
from gpu_fabric.program.provider import PACKAGE_NAME, schema
from support.stack_configs import stack_values
from test_provider import Mocks, construct, mocks  # noqa: F401  (the fixture)

TOKEN = f"{PACKAGE_NAME}:index:KarpenterEfaPool"
KARPENTER_POOL = stack_values("karpenter-efa")["pools"][0]


def test_schema_requires_the_pool_size_and_karpenter_settings_and_takes_cross_resource_values() -> None:
    resource = schema()["resources"][TOKEN]
    assert sorted(resource["requiredInputs"]) == ["availabilityZone", "clusterName", "instanceTypes", "karpenter",
                                                  "nodeCount", "subnetId", "vpcId"]
    properties = resource["inputProperties"]
    cross_resource = ["clusterName", "vpcId", "availabilityZone", "subnetId", "capacityReservationId", "efaSecurityGroupId"]
    assert [name for name in cross_resource if properties[name].get("plain")] == []
    assert properties["instanceTypes"]["plain"] is True and properties["nodeCount"]["plain"] is True
    assert {"nodeClassName", "nodePoolName", "securityGroupId", "interfacePlan"} <= set(resource["properties"])


def test_karpenter_pool_from_camel_case_inputs(mocks: Mocks) -> None:  # noqa: F811
    aws: dict[str, Any] = {k: v for k, v in KARPENTER_POOL["aws"].items() if k not in ("placementGroup", "provisioner")}
    state = construct("KarpenterEfaPool", {**aws, "nodeCount": 3, "objectName": "h200", "poolLabels": {"team": "ml"}})
    assert state["urn"].endswith(f"{TOKEN}::x")
    assert state["nodePoolName"] == "h200" and state["nodeClassName"] == "h200"
    assert len(state["interfacePlan"]) == 17 and state["interfacePlan"][1] == {"card": 0, "device": 1, "type": "efa-only"}
    node_class = mocks.inputs[mocks.types[EC2_NODE_CLASS_TYPE]]
    node_pool = mocks.inputs[mocks.types[NODE_POOL_TYPE]]
    assert node_class["spec"]["role"] == "llm-serving-karpenter-nodes"
    assert node_class["spec"]["placementGroupSelector"] == {"name": "x-placement"}  # mode create by default
    assert node_pool["spec"]["limits"] == {"nodes": 4}  # the size and one drift replacement
    assert node_pool["spec"]["template"]["metadata"]["labels"]["team"] == "ml"
