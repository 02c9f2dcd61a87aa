"""The one stack with every part: EFA node groups, device plugins, topology, and whole-config checks."""

import pytest

from gpu_fabric.program.render import render_stack
from gpu_fabric.resources.fabric import GpuFabric
from gpu_fabric.config.base import ConfigError
from gpu_fabric.validation.configuration import load_config
from support.stack_configs import as_args, PROJECT_DIR, seed_values, stack_values


def by_type(resources, type_):
    return [r for r in resources if r.type == type_]


@pytest.fixture(scope="module")
def aws_efa():
    return render_stack("aws-efa", PROJECT_DIR).resources


def test_aws_efa_registers_a_node_group_per_pool_with_the_planned_interfaces(aws_efa):
    templates = {r.name: r.inputs for r in by_type(aws_efa, "aws:ec2/launchTemplate:LaunchTemplate")}
    p5 = templates["fabric-gpustack--nvidia-h100-linux-amd64-nodes-lt"]
    interfaces = p5["networkInterfaces"]
    assert len([i for i in interfaces if i["interfaceType"] != "interface"]) == 32
    assert [i["interfaceType"] for i in interfaces if i["networkCardIndex"] == 0] == ["interface", "efa-only"]
    assert p5["metadataOptions"]["httpTokens"] == "required"
    c6in = templates["fabric-gpustack--generic-linux-amd64-nodes-lt"]
    assert len([i for i in c6in["networkInterfaces"] if i["interfaceType"] == "efa-only"]) == 2

    groups = {r.name: r.inputs for r in by_type(aws_efa, "aws:eks/nodeGroup:NodeGroup")}
    p5_group = groups["fabric-gpustack--nvidia-h100-linux-amd64-nodes-ng"]
    assert p5_group["labels"]["vpc.amazonaws.com/efa.present"] == "true"
    assert p5_group["taints"] == [{"key": "nvidia.com/gpu", "effect": "NO_SCHEDULE"}]


def test_aws_efa_plugin_tolerates_the_gpu_taint_and_selects_by_label(aws_efa):
    plugin = by_type(aws_efa, "kubernetes:apps/v1:DaemonSet")[0].inputs
    pod = plugin["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"vpc.amazonaws.com/efa.present": "true"}
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]


def test_aws_efa_kubernetes_provider_authenticates_with_aws_eks_get_token(aws_efa):
    provider = by_type(aws_efa, "pulumi:providers:kubernetes")[0]
    assert '"command": "aws"' in provider.inputs["kubeconfig"] and "get-token" in provider.inputs["kubeconfig"]
    # Everything Kubernetes goes through that provider, not the ambient kubeconfig.
    deployment = by_type(aws_efa, "kubernetes:worker.gpustack.ai/v1alpha1:ModelDeployment")[0]
    assert deployment.inputs["spec"]["kvTransfer"] == {"protocol": "EFA"}


def test_mooncake_pool_uses_bottlerocket_with_topology_settings(aws_efa):
    template = next(r for r in by_type(aws_efa, "aws:ec2/launchTemplate:LaunchTemplate") if "generic" in r.name)
    import base64
    user_data = base64.b64decode(template.inputs["userData"]).decode()
    assert 'topology-manager-policy = "restricted"' in user_data


def test_efa_pool_without_plugin_coverage_is_refused_with_its_path():
    values = stack_values("aws-efa")
    values["pools"][0]["aws"]["labels"] = {}
    values["devicePlugins"] = {"efa": {"deploy": True}}
    values["pools"].append({"name": "gpustack--nvidia-l4-linux-amd64", "fabric": "efa", "acceleratorsPerNode": 1,
                            "interfacesPerNode": 1, "nodeCount": 1})
    with pytest.raises(ConfigError) as caught:
        load_config(values)
    problems = dict(caught.value.pairs)
    assert "vpc.amazonaws.com/efa.present" in problems["pools[2]"]


def test_node_group_interface_count_must_match_the_plan():
    values = stack_values("aws-efa")
    values["pools"][0]["interfacesPerNode"] = 16
    values["modelDeployments"][0]["roles"][0]["resources"]["interface"] = "16"
    values["modelDeployments"][0]["roles"][1]["resources"]["interface"] = "16"
    with pytest.raises(ConfigError) as caught:
        render_stack("x", config={}, program=lambda: GpuFabric("fabric", as_args(values)))
    assert "pools[0].interfacesPerNode: the node group's plan attaches 32 EFA interfaces per node (p5.48xlarge), not 16; set interfacesPerNode: 32" in str(caught.value)


def test_non_efa_instance_type_is_refused_before_registration():
    values = stack_values("aws-efa")
    # A CPU type without EFA, so the CPU pool's name and count still agree with the instance (pool-instance-facts).
    values["pools"][1]["aws"]["instanceTypes"] = ["m5.xlarge"]
    # The Mooncake members follow the pool, or the EFA domain check refuses the selector first.
    values["kvCacheBackends"][0]["connection"]["managed"]["members"][0]["nodeSelector"] = {
        "node.kubernetes.io/instance-type": "m5.xlarge"}
    with pytest.raises(ConfigError) as caught:
        render_stack("x", config={}, program=lambda: GpuFabric("fabric", as_args(values)))
    assert "pools[1].aws.instanceTypes" in str(caught.value) and "m5.xlarge" in str(caught.value)


def test_aws_node_group_needs_an_efa_pool():
    values = stack_values("aws-efa")
    values["pools"][0]["fabric"] = "rdma"
    with pytest.raises(ConfigError) as caught:
        load_config(values)
    assert "aws node group provides EFA nodes" in str(caught.value)


def test_device_manager_deployed_by_the_stack_serves_the_rdma_pool():
    values = seed_values()
    values["devicePlugins"] = {"deviceManager": {"deployedBy": "stack", "imageTag": "v0.9.0"}}
    resources = render_stack("x", config={}, program=lambda: GpuFabric("fabric", as_args(values))).resources
    # The seed pool's kubelet topology agent is a DaemonSet too; the device plugins advertise resources.
    daemonsets = [d for d in by_type(resources, "kubernetes:apps/v1:DaemonSet")
                  if "gpu-fabric.io/advertises" in d.inputs["metadata"].get("annotations", {})]
    assert [d.inputs["metadata"]["name"] for d in daemonsets] == ["gpustack-operator-device-manager-nvidia"]
    assert daemonsets[0].inputs["spec"]["template"]["spec"]["nodeSelector"] == {
        "feature.node.kubernetes.io/pci-10de.present": "true"}


def test_standalone_pool_needs_something_to_meter():
    values = seed_values()
    values["queueOwner"] = "standalone"
    values["pools"].append({"name": "gpustack--generic-linux-amd64", "fabric": "none", "acceleratorsPerNode": 0, "nodeCount": 1})
    with pytest.raises(ConfigError) as caught:
        load_config(values)
    assert "pools[1]" in dict(caught.value.pairs)


def test_pool_topology_defaults_to_restricted_container():
    pool = load_config(seed_values()).pools[0]
    assert (pool.topology.policy, pool.topology.scope) == ("restricted", "container")
