"""Components under Pulumi's mock runtime: what each registers, with which inputs and parent."""

import pytest

from gpu_fabric.program.render import render_stack
from gpu_fabric.resources.fabric import GpuFabric
from gpu_fabric.resources.kueue_pool import KueuePool
from gpu_fabric.resources.model_deployment import ModelDeployment
from gpu_fabric.config.base import ConfigError
from support.stack_configs import as_args, seed_values

SEED_POOL = seed_values()["pools"][0]


def registered(program):
    return render_stack("test", config={}, program=program).resources


def by_type(resources, type_):
    return [r for r in resources if r.type == type_]


def test_gpu_fabric_registers_the_seed_with_parents():
    resources = registered(lambda: GpuFabric("fabric", as_args(seed_values())))
    fabric = by_type(resources, "gpu-fabric:index:GpuFabric")[0]
    pool = by_type(resources, "gpu-fabric:index:KueuePool")[0]
    deployment_component = by_type(resources, "gpu-fabric:index:ModelDeployment")[0]
    assert pool.parent == fabric.urn and deployment_component.parent == fabric.urn

    queue = by_type(resources, "kubernetes:kueue.x-k8s.io/v1beta2:LocalQueuePatch")[0]
    assert queue.parent == pool.urn
    assert queue.inputs["metadata"]["name"] == "gpustack-fnv64-c4680bb149644f1c"
    assert queue.inputs["spec"] == {"clusterQueue": "gpustack--nvidia-a10g-linux-amd64"}

    model = by_type(resources, "kubernetes:worker.gpustack.ai/v1alpha1:ModelDeployment")[0]
    assert model.parent == deployment_component.urn
    assert model.inputs["spec"]["kvTransfer"] == {"protocol": "RDMA"}
    assert model.inputs["spec"]["roles"][0]["resources"] == {"accelerator": "2", "interface": "2"}

    backend = by_type(resources, "kubernetes:worker.gpustack.ai/v1alpha1:KVCacheBackend")[0]
    assert backend.inputs["spec"]["connection"]["managed"]["members"][0]["fabricInterfaceCount"] == 2
    # No ClusterQueue or flavor: under GPUStack the operator owns them.
    assert not by_type(resources, "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue")


def test_standalone_owner_registers_flavor_cluster_queue_and_owned_local_queues():
    values = seed_values()
    values["queueOwner"] = "standalone"
    resources = registered(lambda: GpuFabric("fabric", as_args(values)))
    types = {r.type for r in resources}
    assert {"kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor", "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue",
            "kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue"} <= types
    queue = by_type(resources, "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue")[0]
    assert "device.gpustack.ai/rdma" in queue.inputs["spec"]["resourceGroups"][0]["coveredResources"]


def test_v1alpha1_is_the_default_and_v1_is_selectable():
    values = seed_values()
    values.pop("gpustackApiVersion", None)
    assert by_type(registered(lambda: GpuFabric("fabric", as_args(values))), "kubernetes:worker.gpustack.ai/v1alpha1:ModelDeployment")
    values["gpustackApiVersion"] = "v1"
    resources = registered(lambda: GpuFabric("fabric", as_args(values)))
    assert by_type(resources, "kubernetes:worker.gpustack.ai/v1:ModelDeployment")


def test_bad_configuration_registers_nothing():
    values = seed_values()
    del values["modelDeployments"][0]["router"]
    with pytest.raises(ConfigError) as caught:
        registered(lambda: GpuFabric("fabric", as_args(values)))
    assert "modelDeployments[0].roles[0].resources.interface" in str(caught.value)


def test_bad_configuration_leaves_no_resource_behind():
    values = seed_values()
    values["pools"][0]["fabric"] = "infiniband"
    recorded = []

    def program():
        try:
            GpuFabric("fabric", as_args(values))
        except ConfigError as error:
            recorded.append(error)

    assert registered(program) == []
    assert "pools[0].fabric" in str(recorded[0])


def test_model_deployment_component_refuses_before_registering():
    deployment = seed_values()["modelDeployments"][0]
    deployment.pop("kvTransfer")
    with pytest.raises(ConfigError) as caught:
        registered(lambda: ModelDeployment("qwen", {"deployment": deployment}))
    assert "deployment.roles[0].resources.interface: no effective RDMA or EFA transfer leg" in str(caught.value)


def test_model_deployment_component_applies_the_operators_schema_and_webhook_rules():
    deployment = seed_values()["modelDeployments"][0]
    deployment["engine"].pop("image")
    with pytest.raises(ConfigError) as caught:  # the default line (0.10.0) requires the runner image
        registered(lambda: ModelDeployment("qwen", {"deployment": deployment}))
    assert "deployment.engine.image: Required value: GPUStack operator 0.10.0 requires engine.image" in str(caught.value)
    with pytest.raises(ConfigError) as caught:  # the pin synthesizes it from the engine's version, which is missing
        registered(lambda: ModelDeployment("qwen", {"deployment": deployment, "gpustack_operator": "main@5cfac77b"}))
    assert 'deployment.engine.version: role "prefill" names no image of its own' in str(caught.value)
    with pytest.raises(ConfigError) as caught:
        registered(lambda: ModelDeployment("qwen", {"deployment": deployment, "gpustack_operator": "0.12.0"}))
    assert "gpustack_operator: '0.12.0' is not a GPUStack operator version gpu-fabric mirrors" in str(caught.value)
    deployment["engine"]["version"] = "0.29.0"
    with pytest.raises(ConfigError) as caught:
        registered(lambda: ModelDeployment("qwen", {"deployment": deployment, "api_version": "v2"}))
    assert "worker.gpustack.ai/v2 is not served" in str(caught.value)


def test_model_deployment_component_exposes_grants():
    grants = []

    def program():
        component = ModelDeployment("qwen", {"deployment": seed_values()["modelDeployments"][0]})
        component.resource_grants.apply(grants.append)

    registered(program)
    assert grants == [{"prefill": {"device.gpustack.ai/rdma": 2}, "decode": {"device.gpustack.ai/rdma": 2}}]


def test_kueue_pool_component_names_children_from_its_own_name():
    resources = registered(lambda: KueuePool("a10g", {"pool": SEED_POOL, "namespaces": ["team-a", "team-b"],
                                                      "queue_owner": "standalone"}))
    names = sorted(r.name for r in resources if r.custom)
    assert names == ["a10g-cluster-queue", "a10g-flavor", "a10g-lq-team-a", "a10g-lq-team-b"]


def test_kueue_pool_component_refuses_bad_namespaces():
    with pytest.raises(ConfigError) as caught:
        registered(lambda: KueuePool("a10g", {"pool": SEED_POOL, "namespaces": ["Team A"]}))
    assert "namespaces[0]" in str(caught.value)
