"""deviceAllocation: dra pools: what load_config (so render, check and lint --stack) refuses, at its path."""

from __future__ import annotations

import copy

import pytest

from gpu_fabric.config.base import ConfigError
from gpu_fabric.plan.dra_pools import DraPool, dra_manifests
from gpu_fabric.validation.configuration import load_config
from support.stack_configs import stack_values


def values() -> dict:
    return copy.deepcopy(stack_values("dra-efa"))


def refusal(config: dict) -> ConfigError:
    with pytest.raises(ConfigError) as raised:
        load_config(config, aws_region="us-east-1")
    return raised.value


def paths(error: ConfigError) -> dict[str, str]:
    return dict(error.pairs)


def test_the_example_loads_and_plans_one_template_per_count() -> None:
    config = load_config(values(), aws_region="us-east-1")
    assert [m["metadata"]["name"] for m in dra_manifests(config)] == ["p5en-h200-1gpu", "p5en-h200-8gpu"]


@pytest.mark.parametrize("version", ["1.33", "1.30"])
def test_a_cluster_below_1_34_refuses_the_dra_pool_at_the_clusters_version(version: str) -> None:
    config = values()
    config["cluster"]["kubernetesVersion"] = version
    error = refusal(config)
    assert error.exit_code == 1
    assert "resource.k8s.io/v1" in paths(error)["cluster.kubernetesVersion"]


def test_the_kubernetes_version_is_required_with_a_dra_pool_only() -> None:
    config = values()
    del config["cluster"]
    message = paths(refusal(config))["cluster.kubernetesVersion"]
    assert "pool p5en-h200 allocates devices through DRA" in message
    load_config(stack_values("aws-efa"))  # no dra pool: no version needed, as before


def test_nodes_pinned_below_1_34_are_refused() -> None:
    config = values()
    config["pools"][0]["aws"]["kubernetesVersion"] = "1.33"
    assert "1.33" in paths(refusal(config))["pools[0].aws.kubernetesVersion"]


def karpenter(config: dict, version: str | None) -> dict:
    aws = config["pools"][0]["aws"]
    del aws["nodeRoleArn"], aws["scaling"]
    aws["provisioner"] = "karpenter"
    aws["karpenter"] = {"nodeRole": "nodes", **({"version": version} if version else {})}
    return config


@pytest.mark.parametrize("version, refused", [("1.14.1", True), (None, True), ("1.15.0", False), ("1.16.2", False)])
def test_karpenter_launches_a_dra_pool_from_1_15(version: str | None, refused: bool) -> None:
    config = karpenter(values(), version)
    if not refused:
        load_config(config, aws_region="us-east-1")
        return
    assert "1.15" in paths(refusal(config))["pools[0].aws.karpenter.version"]


def auto_mode(version: str) -> dict:
    config = values()
    pool = config["pools"][0]
    del pool["aws"]
    pool["nodeLabels"]["node.kubernetes.io/instance-type"] = "p5en.48xlarge"
    config["cluster"] = {"kubernetesVersion": version, "eksAutoMode": True}
    return config


def test_eks_auto_mode_launches_a_dra_pool_from_1_36() -> None:
    assert "1.36" in paths(refusal(auto_mode("1.35")))["pools[0].deviceAllocation"]
    load_config(auto_mode("1.36"), aws_region="us-east-1")


def test_an_instance_type_of_unknown_pcie_layout_is_refused() -> None:
    config = values()
    config["pools"][0]["aws"]["instanceTypes"] = ["p6-b200.48xlarge"]
    config["pools"][0]["interfacesPerNode"] = 8
    assert "PCIe layout of p6-b200.48xlarge" in paths(refusal(config))["pools[0].aws.instanceTypes"]


def test_a_claim_above_32_devices_is_refused_with_the_largest_that_fits() -> None:
    config = values()
    config["pools"][0]["aws"]["instanceTypes"] = ["p5.48xlarge"]
    config["pools"][0]["interfacesPerNode"] = 32
    message = paths(refusal(config))["pools[0].gpusPerClaim"]
    assert "40 devices" in message and "at most 6 GPUs" in message
    config["pools"][0]["gpusPerClaim"] = [4]
    load_config(config, aws_region="us-east-1")


def test_counts_that_are_not_the_layouts_are_refused() -> None:
    config = values()
    config["pools"][0]["acceleratorsPerNode"] = 4
    config["pools"][0]["gpusPerClaim"] = [1, 4]
    assert "8 GPUs" in paths(refusal(config))["pools[0].acceleratorsPerNode"]


def test_an_external_efa_plugin_reaching_the_dra_pool_is_refused_at_its_settings() -> None:
    config = values()
    config["devicePlugins"] = {"efa": {"deploy": False, "providedBy": {
        "source": "EKS add-on", "nodeSelector": {"vpc.amazonaws.com/efa.present": "true"},
        "tolerations": [{"operator": "Exists"}]}}}
    assert "oversubscription" in paths(refusal(config))["devicePlugins.efa.providedBy"]


def test_the_stacks_own_efa_plugin_serves_plugin_pools_beside_a_dra_pool() -> None:
    from gpu_fabric.plan.fabric_plan import efa_plugin_args

    config = values()
    plugin_pool = copy.deepcopy(stack_values("aws-efa")["pools"][1])
    config["pools"].append(plugin_pool)
    loaded = load_config(config, aws_region="us-east-1")
    args = efa_plugin_args(loaded)
    assert args is not None and args["exclude_dra_nodes"] is True
    assert [pool["name"] for pool in args["pools"]] == [plugin_pool["name"]]


def test_a_model_deployment_requesting_plugin_keys_on_a_dra_pool_is_refused() -> None:
    config = values()
    config["modelDeployments"] = [{
        "name": "llm", "namespace": "team-a", "model": {"name": "x/y"}, "engine": {"name": "vLLM", "image": "r/i:1"},
        "roles": [{"name": "server", "kind": "Server", "replicas": 1, "instanceType": "p5en-h200",
                   "resources": {"accelerator": "8"}}]}]
    error = refusal(config)
    assert "nvidia.com/gpu" in paths(error)["modelDeployments[0].roles[0].resources.accelerator"]
    assert error.exit_code == 1


def test_efa_transfer_legs_and_mooncake_members_on_a_dra_pool_are_refused() -> None:
    # The aws-efa example with its GPU pool allocating through DRA: the roles' interfaces and the members'
    # fabricInterfaceCount would request vpc.amazonaws.com/efa, which nothing advertises there.
    config = copy.deepcopy(stack_values("aws-efa"))
    gpu, members = config["pools"]
    gpu.update(deviceAllocation="dra", interfacesPerNode=16)
    gpu["aws"]["instanceTypes"] = ["p5en.48xlarge"]
    members.update(deviceAllocation="dra", manufacturer="nvidia", acceleratorsPerNode=8, interfacesPerNode=16)
    members["aws"]["instanceTypes"] = ["p5en.48xlarge"]
    config["cluster"] = {"kubernetesVersion": "1.34"}
    config["kvCacheBackends"][0]["connection"]["managed"]["members"][0]["nodeSelector"] = {
        "node.kubernetes.io/instance-type": "p5en.48xlarge"}
    for role in config["modelDeployments"][0]["roles"]:
        role["resources"] = {"interface": "16"}
    found = paths(refusal(config))
    assert "vpc.amazonaws.com/efa" in found["modelDeployments[0].roles[0].resources.interface"]
    assert "vpc.amazonaws.com/efa" in found["kvCacheBackends[0].connection.managed.members[0].fabricInterfaceCount"]


def test_field_rules_of_a_dra_pool() -> None:
    config = values()
    config["pools"][0]["deviceAllocation"] = "plugin"
    assert "dra pools only" in paths(refusal(config))["pools[0].gpusPerClaim"]
    config = values()
    config["pools"][0]["gpusPerClaim"] = [9]
    assert "do not fit" in paths(refusal(config))["pools[0].gpusPerClaim[0]"]
    config = values()
    config["pools"][0]["manufacturer"] = "amd"
    assert "allocates NVIDIA GPUs" in paths(refusal(config))["pools[0].manufacturer"]


def test_the_policy_and_load_config_read_one_pool_view() -> None:
    config = load_config(values(), aws_region="us-east-1")
    pool = DraPool.of_input(config.pools[0].model_dump(by_alias=True, exclude_none=True))
    assert pool is not None
    assert (pool.instance_types, pool.provisioner, pool.gpu_counts) == (("p5en.48xlarge",), "managedNodeGroup", (1, 8))
    assert DraPool.of_input(load_config(stack_values("aws-efa")).pools[0].model_dump(by_alias=True)) is None


def test_claim_sizes_that_do_not_tile_the_pcie_roots_are_refused_with_the_sizes_that_do() -> None:
    """Issue 36: [1, 3, 8] on p5en strands GPUs; [3, 8] on p4d (2 GPUs + 1 EFA per root) splits a root."""
    config = values()
    config["pools"][0]["gpusPerClaim"] = [1, 3, 8]
    message = paths(refusal(config))["pools[0].gpusPerClaim"]
    assert "claims of 3 GPUs do not tile a node of 8" in message and "1, 2, 4, 8" in message
    config["pools"][0]["aws"]["instanceTypes"] = ["p4d.24xlarge"]
    config["pools"][0]["interfacesPerNode"] = 4
    config["pools"][0]["gpusPerClaim"] = [3, 8]
    message = paths(refusal(config))["pools[0].gpusPerClaim"]
    assert "splits a PCIe root of p4d.24xlarge" in message and "without its EFA device" in message and "2, 4, 8" in message
    config["pools"][0]["gpusPerClaim"] = [2, 8]
    load_config(config, aws_region="us-east-1")


def test_a_dra_pool_under_gpustacks_queues_is_refused_naming_standalone() -> None:
    """Issue 36: the operator never creates a ClusterQueue for the pool, so its LocalQueues meter nothing."""
    config = values()
    config["queueOwner"] = "gpustack"
    message = paths(refusal(config))["pools[0].deviceAllocation"]
    assert "queueOwner: standalone" in message and "unmetered" in message


def test_an_own_nodes_dra_pool_without_the_device_allocation_label_is_refused_at_render() -> None:
    """Issue 36: the stack's EFA plugin (deployed for a plugin pool beside) keeps off nodes labelled
    gpu-fabric.io/device-allocation: dra; nodes the stack does not provision carry it only if nodeLabels say so.
    The pack refused this already; render now refuses it too, naming the label."""
    config = values()
    own = config["pools"][0]
    del own["aws"]
    del config["kubernetes"]
    own["nodeLabels"] = {"gpu-fabric.io/pool": "p5en-h200", "node.kubernetes.io/instance-type": "p5en.48xlarge"}
    plugin = copy.deepcopy(stack_values("aws-efa"))["pools"][0]
    plugin["aws"]["clusterName"] = "llm-serving"
    config["pools"].append(plugin)
    message = paths(refusal(config))["devicePlugins.efa"]
    assert "would run on pool p5en-h200" in message
    assert "add that label to the pool's nodeLabels" in message and "gpu-fabric.io/device-allocation: dra" in message
    own["nodeLabels"]["gpu-fabric.io/device-allocation"] = "dra"
    load_config(config, aws_region="us-east-1")
