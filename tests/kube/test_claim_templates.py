"""ResourceClaimTemplates of dra pools: one GPU/EFA request pair per PCIe root, valid resource.k8s.io/v1."""

import copy

import kubernetes_validate
import pytest

from gpu_fabric.config.constants import DEVICE_ALLOCATION_LABEL
from gpu_fabric.kube.claim_templates import (
    EFA_DEVICE_CLASS,
    GPU_DEVICE_CLASS,
    PCIE_ROOT_ATTRIBUTE,
    claim_template,
    claim_templates,
    root_groups,
)
from gpu_fabric.kube.coverage import daemonset_schedules_on
from gpu_fabric.kube.device_plugins import efa_device_plugin_daemonset
from gpu_fabric.kube.kueue import cluster_queue, device_class_mappings, pool_quotas
from gpu_fabric.validation.configuration import load_config
from support.stack_configs import stack_values


@pytest.mark.parametrize("version", ["1.34", "1.35", "1.36"])
def test_a_claim_template_validates_against_resource_k8s_io_v1(version: str) -> None:
    template = claim_template("p5en-h200", "team-a", 8, 1, 2)
    kubernetes_validate.validate(template, version, strict=True)


def test_a_misspelt_claim_field_is_refused_by_the_same_schema() -> None:
    # The validation above can fail: the strict schema refuses a field resource.k8s.io/v1 does not have.
    template = claim_template("p5en-h200", "team-a", 1, 1, 2)
    broken = copy.deepcopy(template)
    broken["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClass"] = GPU_DEVICE_CLASS
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, "1.34", strict=True)


def test_p5en_pairs_each_gpu_with_the_two_efa_on_its_root() -> None:
    devices = claim_template("p5en-h200", "team-a", 8, 1, 2)["spec"]["spec"]["devices"]
    requests = {request["name"]: request["exactly"] for request in devices["requests"]}
    assert len(requests) == 16 and len(devices["constraints"]) == 8
    for i in range(8):
        assert requests[f"gpu-{i}"] == {"deviceClassName": GPU_DEVICE_CLASS, "allocationMode": "ExactCount", "count": 1}
        assert requests[f"efa-{i}"] == {"deviceClassName": EFA_DEVICE_CLASS, "allocationMode": "ExactCount", "count": 2}
        assert devices["constraints"][i] == {"requests": [f"gpu-{i}", f"efa-{i}"], "matchAttribute": PCIE_ROOT_ATTRIBUTE}


def test_p4d_takes_whole_roots_first() -> None:
    assert root_groups(3, 2, 1) == [(2, 1), (1, 1)]
    assert root_groups(8, 2, 1) == [(2, 1)] * 4


def test_templates_go_to_every_tenant_namespace_once_per_count() -> None:
    names = [(t["metadata"]["namespace"], t["metadata"]["name"]) for t in claim_templates("p", ["b", "a", "a"], [8, 1, 8], 1, 2)]
    assert names == [("a", "p-1gpu"), ("a", "p-8gpu"), ("b", "p-1gpu"), ("b", "p-8gpu")]


def test_the_dra_example_meters_deviceclasses_and_exports_their_mapping() -> None:
    config = load_config(stack_values("dra-efa"))
    pool = config.pools[0]
    assert pool_quotas(pool) == [(GPU_DEVICE_CLASS, 16), (EFA_DEVICE_CLASS, 32)]
    covered = cluster_queue(pool, config.namespaces)["spec"]["resourceGroups"][0]["coveredResources"]
    assert covered == [GPU_DEVICE_CLASS, EFA_DEVICE_CLASS]
    assert device_class_mappings(config) == [
        {"name": EFA_DEVICE_CLASS, "deviceClassNames": [EFA_DEVICE_CLASS]},
        {"name": GPU_DEVICE_CLASS, "deviceClassNames": [GPU_DEVICE_CLASS]}]


def test_no_mapping_without_a_dra_pool_or_when_gpustack_owns_the_queues() -> None:
    assert device_class_mappings(load_config(stack_values("aws-efa"))) == []
    values = stack_values("dra-efa")
    values["queueOwner"] = "gpustack"
    # load_config refuses a dra pool under GPUStack's queues (dra-pool-queue-owner); the mapping stays empty anyway.
    from gpu_fabric.config.fabric import FabricConfig

    assert device_class_mappings(FabricConfig.model_validate(values)) == []


def test_the_stacks_efa_plugin_keeps_off_dra_nodes() -> None:
    plugin = efa_device_plugin_daemonset(exclude_dra_nodes=True)
    efa = {"vpc.amazonaws.com/efa.present": "true"}
    assert daemonset_schedules_on(plugin, efa)[0]
    assert not daemonset_schedules_on(plugin, {**efa, DEVICE_ALLOCATION_LABEL: "dra"})[0]
    assert "affinity" not in efa_device_plugin_daemonset()["spec"]["template"]["spec"]


def test_a_dra_pool_node_group_labels_its_nodes() -> None:
    pool = load_config(stack_values("dra-efa")).pools[0]
    assert pool.node_group_labels()[DEVICE_ALLOCATION_LABEL] == "dra"
    assert pool.effective_node_labels()[DEVICE_ALLOCATION_LABEL] == "dra"
