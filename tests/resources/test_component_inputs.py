"""Components composed with other resources' Outputs: what reaches the children, and what is refused."""

import asyncio
import hashlib
from typing import Any

import pulumi
import pulumi_aws as aws
import pytest
from pulumi.runtime.mocks import MockMonitor

from gpu_fabric.resources.efa_node_group import EfaNodeGroup
from gpu_fabric.resources.fabric import GpuFabric
from gpu_fabric.resources.inputs import InvalidInputError
from gpu_fabric.resources.kueue_pool import KueuePool
from gpu_fabric.resources.model_deployment import ModelDeployment
from gpu_fabric.aws.catalog.bundled import BundledInstanceCatalog
from support.stack_configs import as_args, seed_values, stack_values
from test_efa_node_group import FakeCatalog

SEED_POOL = seed_values()["pools"][0]


ID_PREFIXES = {"aws:ec2/securityGroup:SecurityGroup": "sg-", "aws:ec2/subnet:Subnet": "subnet-"}


def resource_id(type_: str, name: str) -> str:
    """EC2-shaped ids (``sg-0a1b...``) for EC2 resources, ``<name>-id`` otherwise."""
    prefix = ID_PREFIXES.get(type_)
    return f"{prefix}{hashlib.sha256(name.encode()).hexdigest()[:17]}" if prefix else f"{name}-id"


class Mocks(pulumi.runtime.Mocks):
    """Inputs as outputs, plus the attributes AWS computes that the test reads."""

    def __init__(self) -> None:
        self.inputs: dict[str, dict[str, Any]] = {}

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        self.inputs[args.name] = dict(args.inputs)
        outputs = dict(args.inputs)
        if args.typ == "aws:iam/role:Role":
            outputs["arn"] = f"arn:aws:iam::123456789012:role/{args.name}"
        if args.typ == "aws:ec2/launchTemplate:LaunchTemplate":
            outputs["latestVersion"] = 1
        return resource_id(args.typ, args.name), outputs

    def call(self, args: pulumi.runtime.MockCallArgs):
        return {}


class Monitor(MockMonitor):
    """Keeps each registration's URN, type and dependencies."""

    def __init__(self, mocks: Mocks) -> None:
        super().__init__(mocks)
        self.registrations: dict[str, tuple[str, list[str]]] = {}

    def RegisterResource(self, request):
        response = super().RegisterResource(request)
        self.registrations[request.name] = (response.urn, list(request.dependencies))
        return response


@pytest.fixture
def mocks() -> Mocks:
    recording = Mocks()
    recording.monitor = Monitor(recording)  # type: ignore[attr-defined]
    pulumi.runtime.set_mocks(recording, preview=False, monitor=recording.monitor)  # type: ignore[attr-defined]
    return recording


def run(program) -> None:
    """Run ``program`` under the mocks; a refusal it meets is raised here.

    Pulumi's test helper raises a refused registration's error but leaves the registration's own future
    unretrieved. Collected later -- at the latest when the test worker exits, after the run's summary --
    asyncio would print its traceback. The loop's handler leaves out exactly those reports: a future whose
    exception is a component's refusal; anything else is reported as asyncio reports it.
    """
    loop = asyncio.get_event_loop()
    if loop.get_exception_handler() is not _unretrieved_refusals_left_out:
        loop.set_exception_handler(_unretrieved_refusals_left_out)
    pulumi.runtime.test(program)()


def _unretrieved_refusals_left_out(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    error = context.get("exception")
    if context.get("message") == "Future exception was never retrieved" and error is not None:
        if isinstance(root_cause(error), InvalidInputError):
            return
    loop.default_exception_handler(context)


def node_group_args(**values: Any) -> dict[str, Any]:
    return {"cluster_name": "fabric", "vpc_id": "vpc-1", "instance_types": ["p5.48xlarge"],
            "availability_zone": "us-east-1a", "subnet_id": "subnet-1",
            "node_role_arn": "arn:aws:iam::123456789012:role/nodes", "scaling": {"min_size": 1, "max_size": 2}, **values}


def root_cause(error: BaseException) -> BaseException:
    """Pulumi wraps an exception raised in an apply; the component's own error is at the bottom."""
    while error.__cause__ is not None or error.__context__ is not None:
        error = error.__cause__ or error.__context__  # type: ignore[assignment]
        if isinstance(error, InvalidInputError):
            return error
    return error


def test_node_group_composes_outputs_of_cluster_subnet_role_and_security_group(mocks: Mocks) -> None:
    def program():
        cluster = aws.eks.Cluster("cluster", name="fabric", role_arn="arn:aws:iam::1:role/eks",
                                  vpc_config={"subnet_ids": ["subnet-a"]})
        subnet = aws.ec2.Subnet("subnet", vpc_id="vpc-7", cidr_block="10.0.0.0/24", availability_zone="us-east-1a")
        role = aws.iam.Role("nodes", assume_role_policy="{}")
        cluster_sg = aws.ec2.SecurityGroup("cluster-sg", vpc_id="vpc-7")
        group = EfaNodeGroup("h100", {
            "cluster_name": cluster.name, "vpc_id": subnet.vpc_id, "instance_types": ["p5.48xlarge"],
            "availability_zone": subnet.availability_zone, "subnet_id": subnet.id, "node_role_arn": role.arn,
            "security_group_ids": [cluster_sg.id], "scaling": {"min_size": 1, "max_size": 2},
        }, catalog=FakeCatalog())
        return group.node_group_name

    run(program)
    node_group = mocks.inputs["h100-ng"]
    assert node_group["clusterName"] == "fabric"
    assert node_group["subnetIds"] == [resource_id("aws:ec2/subnet:Subnet", "subnet")]
    assert node_group["nodeRoleArn"] == "arn:aws:iam::123456789012:role/nodes"
    interfaces = mocks.inputs["h100-lt"]["networkInterfaces"]
    assert len(interfaces) == 33
    groups = [resource_id("aws:ec2/securityGroup:SecurityGroup", name) for name in ("h100-efa-sg", "cluster-sg")]
    assert all(interface["securityGroups"] == groups for interface in interfaces)
    assert mocks.inputs["h100-efa-sg"]["vpcId"] == "vpc-7"


def test_an_output_resolving_to_a_bad_value_is_refused_naming_the_property(mocks: Mocks) -> None:
    def program():
        not_a_subnet = pulumi.Output.from_input("subnet-1").apply(lambda _: "sg-0123")
        EfaNodeGroup("h100", node_group_args(subnet_id=not_a_subnet), catalog=FakeCatalog())

    with pytest.raises(Exception) as caught:
        run(program)
    error = root_cause(caught.value)
    assert isinstance(error, pulumi.InputPropertiesError) and isinstance(error, InvalidInputError)
    assert error.errors == [{"property_path": "subnet_id",
                             "reason": "'sg-0123' is not a subnet id (subnet-0123456789abcdef0) [configuration]"}]
    assert "h100-ng" not in mocks.inputs and "h100-lt" in mocks.inputs  # the node group never registers


def test_an_az_output_is_checked_against_the_offerings_when_it_resolves(mocks: Mocks) -> None:
    def program():
        zone = pulumi.Output.from_input("us-east-1f")
        EfaNodeGroup("h100", node_group_args(availability_zone=zone), catalog=FakeCatalog(),
                     offered_availability_zones={"p5.48xlarge": ["us-east-1a"]})

    with pytest.raises(Exception) as caught:
        run(program)
    assert "availabilityZone: us-east-1f does not offer p5.48xlarge" in str(root_cause(caught.value))


@pytest.mark.parametrize("key, value, reason", [
    ("instance_types", ["p5.48xlarge"], "the instance types decide the launch template's EFA interfaces"),
    ("labels", {"team": "ml"}, "labels are written into the user data"),
])
def test_an_output_where_a_plain_value_is_required_is_refused(mocks: Mocks, key: str, value: Any, reason: str) -> None:
    def program():
        EfaNodeGroup("h100", node_group_args(**{key: pulumi.Output.from_input(value)}), catalog=FakeCatalog())

    with pytest.raises(InvalidInputError) as caught:
        run(program)
    assert caught.value.pairs == [(key, f"must be a plain value, not an Output: {reason} [configuration]")]
    assert mocks.inputs == {}


def test_an_output_namespace_of_a_kueue_pool_is_refused_not_a_type_error(mocks: Mocks) -> None:
    def program():
        KueuePool("a10g", {"pool": SEED_POOL, "namespaces": [pulumi.Output.from_input("team-a")]})

    with pytest.raises(InvalidInputError) as caught:
        run(program)
    assert caught.value.pairs == [
        ("namespaces[0]", "must be a plain value, not an Output: each namespace gets its own LocalQueue resource [configuration]")]


def test_a_misspelt_argument_is_refused_with_the_snake_case_name(mocks: Mocks) -> None:
    def program():
        KueuePool("a10g", {"pool": SEED_POOL, "namespaces": ["team-a"], "queueOwner": "standalone"})  # type: ignore[typeddict-unknown-key]

    with pytest.raises(InvalidInputError, match=r"queueOwner: unknown argument of KueuePoolArgs \(did you mean queue_owner\?\)"):
        run(program)


def test_local_queue_names_come_from_the_local_queue_resources(mocks: Mocks) -> None:
    names: list[dict[str, str]] = []

    def program():
        pool = KueuePool("a10g", {"pool": SEED_POOL, "namespaces": ["team-a", "team-b"]})
        return pool.local_queue_names.apply(names.append)

    run(program)
    assert names == [{"team-a": "gpustack-fnv64-c4680bb149644f1c", "team-b": "gpustack-fnv64-c4680bb149644f1c"}]
    assert mocks.inputs["a10g-lq-team-a"]["metadata"]["name"] == "gpustack-fnv64-c4680bb149644f1c"


def test_an_image_output_reaches_the_model_deployment_manifest(mocks: Mocks) -> None:
    deployment = seed_values()["modelDeployments"][0]

    def program():
        deployment["roles"][0]["image"] = pulumi.Output.from_input("registry.example/runner:1")
        ModelDeployment("qwen", {"deployment": deployment})

    run(program)
    assert mocks.inputs["qwen-deployment"]["spec"]["roles"][0]["image"] == "registry.example/runner:1"


def test_a_model_deployment_depends_on_its_exact_cache_objects_not_the_cache_component(mocks: Mocks) -> None:
    values = stack_values("aws-efa")
    # A second, unrelated binding: the deployment must not wait for it.
    first = values["kvCachePoolBindings"][0]
    values["kvCachePoolBindings"].append({**first, "name": "other", "domain": {**first["domain"], "name": "other-domain"}})
    run(lambda: GpuFabric("fabric", as_args(values), catalog=BundledInstanceCatalog()))
    registrations = mocks.monitor.registrations  # type: ignore[attr-defined]
    deployment = next(name for name in registrations if name.startswith("fabric-team-a-"))
    dependencies = set(registrations[deployment][1])
    urn = {name: registrations[name][0] for name in registrations}
    assert {urn["fabric-kv-cache-binding-team-a-shared"], urn["fabric-kv-cache-pool-efa-cache"],
            urn["fabric-kv-cache-backend-mooncake-efa"]} <= dependencies
    assert urn["fabric-kv-cache-binding-team-a-other"] not in dependencies
    assert urn["fabric-kv-cache"] not in dependencies


def test_a_deployment_without_a_cache_reference_waits_for_no_cache_object(mocks: Mocks) -> None:
    run(lambda: GpuFabric("fabric", as_args(seed_values())))
    registrations = mocks.monitor.registrations  # type: ignore[attr-defined]
    deployment = next(name for name in registrations if name.startswith("fabric-team-a-"))
    dependencies = set(registrations[deployment][1])
    assert not {registrations[name][0] for name in registrations if name.startswith("fabric-kv-cache")} & dependencies
    assert registrations["fabric-gpustack--nvidia-a10g-linux-amd64-lq-team-a"][0] in dependencies


# -- findings from a team's own program -----------------------------------------------------------------


def test_an_invalid_field_inside_an_efa_node_group_is_an_input_properties_error(mocks: Mocks) -> None:
    def program():
        EfaNodeGroup("h100", node_group_args(scaling={"min_size": 3, "max_size": 1}), catalog=FakeCatalog())

    with pytest.raises(InvalidInputError) as caught:
        run(program)
    error = caught.value
    assert isinstance(error, pulumi.InputPropertiesError)
    assert error.message.startswith("invalid arguments of EfaNodeGroup:")
    assert [e["property_path"] for e in error.errors] == ["scaling"]
    assert mocks.inputs == {}  # refused before anything registers


def test_a_bottlerocket_node_group_refuses_a_cpu_option_it_has_no_setting_for(mocks: Mocks) -> None:
    topology = {"policy": "restricted", "scope": "container", "cpuManagerPolicy": "static", "reservedSystemCPUs": "0-1",
                "cpuManagerPolicyOptions": {"distribute-cpus-across-cores": "true"}}

    def program():
        EfaNodeGroup("h100", node_group_args(ami_type="BOTTLEROCKET_x86_64_NVIDIA", topology=topology), catalog=FakeCatalog())

    with pytest.raises(InvalidInputError) as caught:
        run(program)
    assert [path for path, _ in caught.value.pairs] == ["topology.cpuManagerPolicyOptions"]
    assert "no Bottlerocket setting" in caught.value.pairs[0][1]


def test_one_output_as_two_pools_cluster_name_is_one_cluster(mocks: Mocks) -> None:
    values = stack_values("aws-efa")
    values.pop("kubernetes")
    names: list[list[str]] = []

    def program():
        cluster = aws.eks.Cluster("cluster", name="llm-serving", role_arn="arn:aws:iam::1:role/eks",
                                  vpc_config={"subnet_ids": ["subnet-a"]})
        for pool in values["pools"]:
            pool["aws"]["clusterName"] = cluster.name
        fabric = GpuFabric("fabric", as_args(values), catalog=BundledInstanceCatalog())
        return pulumi.Output.all(*(group.node_group_name for group in fabric.node_groups.values())).apply(names.append)

    run(program)
    assert len(names[0]) == 2
    assert {mocks.inputs[name]["clusterName"] for name in mocks.inputs if name.endswith("-ng")} == {"llm-serving"}


def test_two_outputs_that_disagree_are_refused_naming_the_properties_not_markers(mocks: Mocks) -> None:
    values = stack_values("aws-efa")
    values.pop("kubernetes")

    def program():
        for index, pool in enumerate(values["pools"]):
            pool["aws"]["clusterName"] = pulumi.Output.from_input(f"cluster-{index}")
        GpuFabric("fabric", as_args(values), catalog=BundledInstanceCatalog())

    with pytest.raises(InvalidInputError) as caught:
        run(program)
    text = str(caught.value)
    assert "invalid arguments of GpuFabric" in text and "gfout" not in text
    assert "<Output given at pools[0].aws.clusterName>" in text and "<Output given at pools[1].aws.clusterName>" in text
