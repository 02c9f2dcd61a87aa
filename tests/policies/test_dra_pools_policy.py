"""Policy ``dra-pools``: the rules load_config applies to dra pools, reported at preview from the stack's resources."""

from __future__ import annotations

import pytest

from gpu_fabric.policies.dra_pools import dra_pools
from support.policy_helpers import (
    assert_metadata,
    assert_no_violations,
    assert_violation,
    k8s,
    of_type,
    rendered,
    replace_props,
)


@pytest.fixture(scope="module")
def dra_efa():
    """``dra-efa``: a p5en pool allocating through DRA."""
    return rendered("dra-efa")


def test_metadata() -> None:
    assert_metadata(dra_pools)


def test_the_example_passes(dra_efa) -> None:
    assert_no_violations(dra_pools, dra_efa)


def test_a_stack_without_a_dra_pool_has_nothing_to_say() -> None:
    assert_no_violations(dra_pools, rendered("aws-efa"))


def nvidia_plugin() -> dict:
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "nvidia-device-plugin", "namespace": "kube-system"},
            "spec": {"selector": {"matchLabels": {"app": "nvdp"}}, "template": {
                "metadata": {"labels": {"app": "nvdp"}},
                "spec": {"tolerations": [{"operator": "Exists"}],
                         "containers": [{"name": "nvdp", "image": "nvcr.io/nvidia/k8s-device-plugin:v0.19.3"}]}}}}


def test_an_nvidia_device_plugin_on_the_dra_pool_is_refused(dra_efa) -> None:
    plugin = k8s(nvidia_plugin())
    assert_violation(dra_pools, [*dra_efa, plugin], "advertises nvidia.com/gpu and would run on pool p5en-h200", plugin.urn)


def test_a_plugin_kept_off_dra_nodes_passes(dra_efa) -> None:
    manifest = nvidia_plugin()
    manifest["spec"]["template"]["spec"]["nodeSelector"] = {"gpu-fabric.io/device-allocation": "plugin"}
    assert_no_violations(dra_pools, [*dra_efa, k8s(manifest)])


def test_a_cluster_below_1_34_is_refused_on_the_pool(dra_efa) -> None:
    resources = replace_props(dra_efa, of_type("GpuFabric"), lambda props: props.update(cluster={"kubernetesVersion": "1.33"}))
    assert_violation(dra_pools, resources, "pool.deviceAllocation: the cluster runs Kubernetes 1.33")


def test_karpenter_without_dra_support_is_refused(dra_efa) -> None:
    def karpenter(props: dict) -> None:
        props["pool"]["aws"].update(provisioner="karpenter", karpenter={"nodeRole": "nodes", "version": "1.14.1"})

    resources = replace_props(dra_efa, of_type("KueuePool"), karpenter)
    assert_violation(dra_pools, resources, "pool.aws.karpenter.version: Karpenter 1.14.1 never provisions")


def test_a_pod_requesting_plugin_keys_on_the_dra_pool_is_refused(dra_efa) -> None:
    pod = k8s({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "nccl", "namespace": "team-a"}, "spec": {
        "nodeSelector": {"gpu-fabric.io/pool": "p5en-h200"}, "tolerations": [{"operator": "Exists"}],
        "containers": [{"name": "nccl", "image": "nccl:1", "resources": {"limits": {"vpc.amazonaws.com/efa": "16"}}}]}})
    assert_violation(dra_pools, [*dra_efa, pod], "requests vpc.amazonaws.com/efa on pool p5en-h200", pod.urn)


def test_a_dra_pool_under_gpustacks_queues_is_refused_at_preview(dra_efa) -> None:
    """Issue 36: the rule load_config runs, read from the KueuePool's queueOwner input."""
    gpustack = replace_props(dra_efa, of_type(":KueuePool"), lambda props: props.update(queueOwner="gpustack"))
    assert_violation(dra_pools, gpustack, "pool.deviceAllocation: dra pool p5en-h200 under queueOwner: gpustack")
