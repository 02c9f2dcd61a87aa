"""The component provider other languages use: its schema, constructs with camelCase inputs, and gRPC."""

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import grpc
import pulumi
import pytest
from pulumi.runtime.proto import provider_pb2, provider_pb2_grpc

from gpu_fabric.aws.catalog.bundled import BundledInstanceCatalog
from gpu_fabric.aws.catalog.selection import use_catalog
from gpu_fabric.program.mocks import OfflineMocks
from gpu_fabric.program.provider import COMPONENTS, PACKAGE_NAME, component_provider, schema
from support.stack_configs import seed_values, stack_values

PROJECT_DIR = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "provider-schema.json"
REGENERATE = "GPU_FABRIC_WRITE_GOLDEN"


def test_schema_matches_the_golden_snapshot() -> None:
    # A change to any component's API shows up in a PR as a diff of this file.
    served = json.dumps(schema(), indent=2, sort_keys=True) + "\n"
    if os.environ.get(REGENERATE):
        GOLDEN.write_text(served)
    assert GOLDEN.read_text() == served, f"the provider schema changed; review it and rerun with {REGENERATE}=1"


def test_schema_lists_every_component_under_the_package() -> None:
    assert sorted(schema()["resources"]) == sorted(f"{PACKAGE_NAME}:index:{c.__name__}" for c in COMPONENTS)
    assert all(resource["isComponent"] for resource in schema()["resources"].values())


CROSS_RESOURCE_INPUTS = {
    "EfaNodeGroup": ["clusterName", "vpcId", "availabilityZone", "subnetId", "nodeRoleArn", "capacityReservationId",
                     "releaseVersion", "kubernetesVersion"],
    "EfaDevicePlugin": ["namespace", "imageRepository", "imageTag"],
    "GpuStackDeviceManager": ["namespace", "image", "imageTag"],
}


@pytest.mark.parametrize("component, inputs", CROSS_RESOURCE_INPUTS.items())
def test_cross_resource_inputs_are_not_plain(component: str, inputs: list[str]) -> None:
    properties = schema()["resources"][f"{PACKAGE_NAME}:index:{component}"]["inputProperties"]
    assert [name for name in inputs if properties[name].get("plain")] == []


def test_nested_cross_resource_values_are_not_plain_and_count_deciding_values_are() -> None:
    types = schema()["types"]
    node_group = schema()["resources"][f"{PACKAGE_NAME}:index:EfaNodeGroup"]["inputProperties"]
    assert "plain" not in node_group["securityGroupIds"]["items"]
    assert "plain" not in types[f"{PACKAGE_NAME}:index:RootVolumeArgs"]["properties"]["kmsKeyId"]
    assert "plain" not in types[f"{PACKAGE_NAME}:index:RoleArgs"]["properties"]["image"]
    assert node_group["instanceTypes"]["plain"] is True
    kueue = schema()["resources"][f"{PACKAGE_NAME}:index:KueuePool"]["inputProperties"]
    assert kueue["namespaces"]["plain"] is True


REQUIRED = {
    "EfaNodeGroup": ["availabilityZone", "clusterName", "instanceTypes", "nodeRoleArn", "scaling", "subnetId", "vpcId"],
    "KueuePool": ["namespaces", "pool"],
    "ModelDeployment": ["deployment"],
    "GpuFabric": ["namespaces", "pools"],
    "KubeletTopologyAgent": ["pool"],
}


@pytest.mark.parametrize("component, required", REQUIRED.items())
def test_mandatory_inputs_are_required(component: str, required: list[str]) -> None:
    assert sorted(schema()["resources"][f"{PACKAGE_NAME}:index:{component}"]["requiredInputs"]) == required


def test_outputs_carry_the_node_groups_children_as_resource_references() -> None:
    outputs = schema()["resources"][f"{PACKAGE_NAME}:index:EfaNodeGroup"]["properties"]
    assert outputs["nodeGroup"]["$ref"].endswith("#/resources/aws:eks%2FnodeGroup:NodeGroup")
    assert outputs["launchTemplate"]["$ref"].endswith("#/resources/aws:ec2%2FlaunchTemplate:LaunchTemplate")
    assert outputs["interfacePlan"]["items"]["$ref"] == f"#/types/{PACKAGE_NAME}:index:NetworkInterfacePlan"


# -- construct, as a TypeScript or YAML program's engine asks for it ----------------------------------


class Mocks(OfflineMocks):
    """The offline render's mocks (computed names and versions), keeping each registration's inputs by name and type."""

    def __init__(self) -> None:
        self.recorded: list[tuple[str, str, dict[str, Any], bool]] = []
        super().__init__(self.recorded)

    @property
    def inputs(self) -> dict[str, dict[str, Any]]:
        return {name: inputs for _, name, inputs, _ in self.recorded}

    @property
    def types(self) -> dict[str, str]:
        return {type_: name for type_, name, _, _ in self.recorded}


@pytest.fixture
def mocks() -> Mocks:
    recording = Mocks()
    pulumi.runtime.set_mocks(recording, preview=False)
    use_catalog(BundledInstanceCatalog())
    return recording


def construct(component: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """Construct through the provider with schema (camelCase) inputs; return the resolved state."""
    state: dict[str, Any] = {}

    @pulumi.runtime.test
    def program():
        result = component_provider().construct("x", f"{PACKAGE_NAME}:index:{component}", inputs)
        keys = sorted(result.state)
        return pulumi.Output.all(result.urn, *(result.state[k] for k in keys)).apply(
            lambda values: state.update({"urn": values[0], **dict(zip(keys, values[1:]))}))

    program()
    return state


EFA_POOL = stack_values("aws-efa")["pools"][0]
SEED = seed_values()


def test_efa_node_group_from_camel_case_inputs(mocks: Mocks) -> None:
    aws = EFA_POOL["aws"]
    state = construct("EfaNodeGroup", {**{k: v for k, v in aws.items() if k != "placementGroup"},
                                       "rootVolume": {"sizeGib": 300}, "poolLabels": {"team": "ml"}})
    assert state["urn"].endswith(f"{PACKAGE_NAME}:index:EfaNodeGroup::x")
    assert state["nodeGroupName"] and state["launchTemplateId"] == "x-lt-id"
    assert state["interfacePlan"][0] == {"card": 0, "device": 0, "type": "interface"}
    assert mocks.inputs["x-lt"]["blockDeviceMappings"][0]["ebs"]["volumeSize"] == 300
    node_group = mocks.inputs[mocks.types["aws:eks/nodeGroup:NodeGroup"]]
    assert node_group["labels"]["team"] == "ml" and node_group["clusterName"] == aws["clusterName"]


def test_kueue_pool_from_camel_case_inputs(mocks: Mocks) -> None:
    pool = {"name": "gpustack--nvidia-a10g-linux-amd64", "fabric": "rdma", "acceleratorsPerNode": 4,
            "interfacesPerNode": 2, "nodeCount": 2}
    state = construct("KueuePool", {"pool": pool, "namespaces": ["team-a"], "queueOwner": "standalone"})
    assert state["localQueueNames"] == {"team-a": "gpustack-fnv64-c4680bb149644f1c"}
    assert state["clusterQueueName"] == "gpustack--nvidia-a10g-linux-amd64" and state["flavorName"]


def test_kv_cache_and_model_deployment_from_camel_case_inputs(mocks: Mocks) -> None:
    state = construct("KVCache", {"backends": SEED["kvCacheBackends"]})
    assert state["backendNames"] == ["mooncake-dram"]
    deployment = construct("ModelDeployment", {"deployment": SEED["modelDeployments"][0]})
    assert deployment["deploymentName"] == SEED["modelDeployments"][0]["name"]
    assert deployment["resourceGrants"]["prefill"] == {"device.gpustack.ai/rdma": 2}


def test_device_plugins_from_camel_case_inputs(mocks: Mocks) -> None:
    pool = {"name": "p5", "fabric": "efa", "labels": {"vpc.amazonaws.com/efa.present": "true"}, "manufacturer": "nvidia"}
    assert construct("EfaDevicePlugin", {"pools": [pool], "imageTag": "v0.5.6"})["daemonsetName"]
    rdma = {**pool, "fabric": "rdma", "labels": {"feature.node.kubernetes.io/pci-10de.present": "true"}}
    manager = construct("GpuStackDeviceManager", {"pools": [rdma], "releaseName": "ops"})
    assert manager["daemonsetNames"] == ["ops-device-manager-nvidia"]


def test_gpu_fabric_from_camel_case_inputs(mocks: Mocks) -> None:
    # The stack file's `topologyAgent: true` is the schema's TopologyAgentSettingsArgs object `{}` (all defaults).
    inputs = {**SEED, "pools": [{**pool, "topologyAgent": {}} if pool.get("topologyAgent") is True else pool
                                for pool in SEED["pools"]]}
    state = construct("GpuFabric", inputs)
    assert state["localQueues"] == {"gpustack--nvidia-a10g-linux-amd64": {"team-a": "gpustack-fnv64-c4680bb149644f1c"}}
    assert state["modelDeploymentNames"] == [f"team-a/{SEED['modelDeployments'][0]['name']}"]


def test_kubelet_topology_agent_from_camel_case_inputs(mocks: Mocks) -> None:
    pool = {"name": "a10g", "labels": {"gpu-fabric.io/pool": "a10g"}, "topology": {"cpuManagerPolicy": "none"}}
    assert construct("KubeletTopologyAgent", {"pool": pool})["settingsDigest"]


def test_a_missing_required_input_names_the_property(mocks: Mocks) -> None:
    with pytest.raises(pulumi.InputPropertyError) as caught:
        construct("KueuePool", {"namespaces": ["team-a"]})
    assert caught.value.property_path == "pool"


# -- gRPC, as the engine starts the plugin ------------------------------------------------------------


def test_provider_serves_its_schema_over_grpc() -> None:
    # The engine runs `python __main__.py <engine address>` in the plugin folder and reads the port.
    process = subprocess.Popen([sys.executable, "__main__.py", "127.0.0.1:1"], cwd=PROJECT_DIR / "provider",
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline() if process.stdout else ""
        assert line.strip().isdigit(), process.stderr.read() if process.stderr else line
        with grpc.insecure_channel(f"127.0.0.1:{int(line)}") as channel:
            grpc.channel_ready_future(channel).result(timeout=30)
            stub = provider_pb2_grpc.ResourceProviderStub(channel)
            served = json.loads(stub.GetSchema(provider_pb2.GetSchemaRequest(version=0), timeout=30).schema)
        assert served == schema()
    finally:
        process.terminate()
        process.wait(timeout=30)


# -- Construct over gRPC: every refusal an INVALID_ARGUMENT naming the camelCase property -------------


class RecordingMonitor:
    """The engine's resource monitor and log, as far as a Construct that is refused needs them (no resource may register)."""

    def __init__(self) -> None:
        from pulumi.runtime.proto import resource_pb2, resource_pb2_grpc

        monitor = self

        class Servicer(resource_pb2_grpc.ResourceMonitorServicer):
            def SupportsFeature(self, request, context):
                return resource_pb2.SupportsFeatureResponse(hasSupport=False)

            def GetDeploymentInfo(self, request, context):
                context.abort(grpc.StatusCode.UNIMPLEMENTED, "not served by this test's monitor")

            def RegisterResource(self, request, context):
                monitor.registered.append(request.type)
                context.abort(grpc.StatusCode.FAILED_PRECONDITION, "this test's monitor registers nothing")

        from google.protobuf import empty_pb2
        from pulumi.runtime.proto import engine_pb2_grpc

        class Engine(engine_pb2_grpc.EngineServicer):
            def Log(self, request, context):
                monitor.logged.append(request.message)
                return empty_pb2.Empty()

        from concurrent import futures

        self.registered: list[str] = []
        self.logged: list[str] = []
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        resource_pb2_grpc.add_ResourceMonitorServicer_to_server(Servicer(), self.server)
        engine_pb2_grpc.add_EngineServicer_to_server(Engine(), self.server)
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()


@pytest.fixture(scope="module")
def provider_stub():
    """The provider started as the engine starts it, with a monitor to talk to; always stopped afterwards."""
    monitor = RecordingMonitor()
    process = subprocess.Popen([sys.executable, "__main__.py", f"127.0.0.1:{monitor.port}"], cwd=PROJECT_DIR / "provider",
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline() if process.stdout else ""
        assert line.strip().isdigit(), process.stderr.read() if process.stderr else line
        with grpc.insecure_channel(f"127.0.0.1:{int(line)}") as channel:
            grpc.channel_ready_future(channel).result(timeout=30)
            yield provider_pb2_grpc.ResourceProviderStub(channel), monitor
    finally:
        process.terminate()
        process.wait(timeout=30)
        monitor.server.stop(None)


def construct_over_grpc(provider_stub, token: str, inputs: dict[str, Any]) -> grpc.RpcError:
    """Construct ``token`` with ``inputs`` (a protobuf Struct: unknowns as the engine's sentinel); the refusal."""
    from google.protobuf import struct_pb2

    stub, monitor = provider_stub
    properties = struct_pb2.Struct()
    properties.update(inputs)
    request = provider_pb2.ConstructRequest(
        project="p", stack="s", name="x", type=token, inputs=properties, dryRun=True,
        monitorEndpoint=f"127.0.0.1:{monitor.port}")
    with pytest.raises(grpc.RpcError) as caught:
        stub.Construct(request, timeout=60)
    assert monitor.registered == [], "a refused Construct registered resources"
    return caught.value


def property_errors(error: grpc.RpcError) -> dict[str, str]:
    """The InputPropertiesError details of a refusal: property path -> reason."""
    from pulumi.runtime.proto import errors_pb2, status_pb2

    metadata = dict(error.trailing_metadata() or ())
    status = status_pb2.Status.FromString(metadata.get("grpc-status-details-bin", b""))
    found: dict[str, str] = {}
    for detail in status.details:
        errors = errors_pb2.InputPropertiesError()
        if detail.Unpack(errors):
            found.update({e.property_path: e.reason for e in errors.errors})
    return found


UNKNOWN_SENTINEL = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
NODE_GROUP = f"{PACKAGE_NAME}:index:EfaNodeGroup"
NODE_GROUP_INPUTS = {k: v for k, v in EFA_POOL["aws"].items() if k != "placementGroup"}


@pytest.mark.parametrize("inputs, path", [
    ({**NODE_GROUP_INPUTS, "instanceTypes": UNKNOWN_SENTINEL}, "instanceTypes"),
    ({**NODE_GROUP_INPUTS, "instanceTypes": [UNKNOWN_SENTINEL]}, "instanceTypes[0]"),
    ({**NODE_GROUP_INPUTS, "scaling": UNKNOWN_SENTINEL}, "scaling"),
])
def test_construct_with_an_unknown_where_the_schema_says_plain(provider_stub, inputs, path) -> None:
    error = construct_over_grpc(provider_stub, NODE_GROUP, inputs)
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, error.details()
    assert "must be plain" in property_errors(error)[path]
    assert "Traceback" not in error.details() and ".py" not in error.details()


def test_construct_with_items_of_the_wrong_type(provider_stub) -> None:
    error = construct_over_grpc(provider_stub, NODE_GROUP, {**NODE_GROUP_INPUTS, "instanceTypes": ["p5.48xlarge", 7]})
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert property_errors(error) == {"instanceTypes[1]": "must be a string, got float"}


def test_construct_of_an_unknown_type_token_lists_the_known_ones(provider_stub) -> None:
    error = construct_over_grpc(provider_stub, f"{PACKAGE_NAME}:index:EfaNodeGrup", NODE_GROUP_INPUTS)
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "EfaNodeGrup" in error.details() and NODE_GROUP in error.details() and "KeyError" not in error.details()


def test_a_validation_refusal_names_the_camel_case_property(provider_stub) -> None:
    scaling = {**NODE_GROUP_INPUTS["scaling"], "minSize": 5, "maxSize": 1}
    error = construct_over_grpc(provider_stub, NODE_GROUP, {**NODE_GROUP_INPUTS, "scaling": scaling})
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, error.details()
    errors = property_errors(error)
    assert errors and all(path.startswith("scaling") and "_" not in path for path in errors), errors
    assert "Traceback" not in error.details()


def test_an_unknown_cross_resource_value_is_deferred_and_the_known_ones_still_refused(provider_stub) -> None:
    # clusterName comes from another resource (unknown at preview): deferred, not "must be plain";
    # the instance type is known and refused where the schema names it.
    inputs = {**NODE_GROUP_INPUTS, "clusterName": UNKNOWN_SENTINEL, "instanceTypes": ["g5.xlarge"]}
    error = construct_over_grpc(provider_stub, NODE_GROUP, inputs)
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, error.details()
    assert property_errors(error) == {"instanceTypes": "g5.xlarge does not support EFA (NetworkInfo.EfaSupported is false) [configuration]"}
