"""One advertiser per NIC, at versions that count the NICs right.

``load_config`` (the stack's own EFA plugin), the ``fabric-advertisers`` policy and ``lint --stack``
all run ``gpu_fabric.kube.advertisers.advertiser_findings``.
"""


import pytest

from gpu_fabric.config.base import ConfigError
from gpu_fabric.kube.advertisers import (
    DEVICE_MANAGER,
    EFA_DRA_DRIVER,
    EFA_PLUGIN,
    RDMA_SHARED_PLUGIN,
    SRIOV_PLUGIN,
    advertiser_findings,
    efa_plugin_floor,
    image_version,
    mofed_setting,
    nic_advertisers,
)
from gpu_fabric.kube.device_plugins import efa_device_plugin_daemonset
from gpu_fabric.kube.workloads import fabric_pool_of
from gpu_fabric.validation.configuration import load_config

from support.stack_configs import b200_values, stack_values


NVIDIA_PLUGIN_IMAGE = "nvcr.io/nvidia/k8s-device-plugin"


def test_efa_plugin_v0_5_8_on_p6_b200_is_refused_at_the_image_tag():
    with pytest.raises(ConfigError) as caught:
        load_config(b200_values("v0.5.8"))
    found = dict(caught.value.pairs)
    assert "v0.5.8 on pool gpustack--nvidia-b200-linux-amd64 (p6-b200.48xlarge) is below v0.5.10" in \
        found["devicePlugins.efa.imageTag"]
    assert "10 instead of 8" in found["devicePlugins.efa.imageTag"]


@pytest.mark.parametrize("tag", ["v0.5.10", "v0.5.21-eksbuild.13", None])
def test_efa_plugin_at_or_above_the_floor_is_accepted(tag):
    load_config(b200_values(tag))  # None: the default tag v0.5.20


def test_floors_per_instance_family():
    assert efa_plugin_floor("p6-b200.48xlarge")[0] == (0, 5, 10)
    assert efa_plugin_floor("p6-b300.48xlarge")[0] == (0, 5, 6)
    assert efa_plugin_floor("p6e-gb200.36xlarge")[0] == (0, 5, 6)
    assert efa_plugin_floor("p5.48xlarge") is None  # no floor stated by the sources


@pytest.mark.parametrize("image, version", [
    ("602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/aws-efa-k8s-device-plugin:v0.5.21-eksbuild.13", (0, 5, 21)),
    ("registry.local:5000/aws-efa-k8s-device-plugin:v0.5.8", (0, 5, 8)),
    ("registry.local:5000/aws-efa-k8s-device-plugin", None),
    ("nvcr.io/nvidia/k8s-device-plugin:latest", None),
    ("nvcr.io/nvidia/k8s-device-plugin@sha256:0123", None),
])
def test_image_versions(image, version):
    assert image_version(image) == version


@pytest.mark.parametrize("container, enabled", [
    ({"image": f"{NVIDIA_PLUGIN_IMAGE}:v0.19.1"}, True),            # the default of v0.19.0-v0.19.2
    ({"image": f"{NVIDIA_PLUGIN_IMAGE}:v0.19.3"}, False),           # reverted (PR #1837)
    ({"image": f"{NVIDIA_PLUGIN_IMAGE}:v0.17.0"}, False),
    ({"image": f"{NVIDIA_PLUGIN_IMAGE}:v0.19.1", "args": ["--mofed-enabled=false"]}, False),
    ({"image": f"{NVIDIA_PLUGIN_IMAGE}:v0.19.1", "env": [{"name": "MOFED_ENABLED", "value": "false"}]}, False),
    ({"image": f"{NVIDIA_PLUGIN_IMAGE}:v0.19.3", "args": ["--mofed-enabled"]}, True),
    ({"image": f"{NVIDIA_PLUGIN_IMAGE}:latest"}, None),
])
def test_mofed_setting(container, enabled):
    assert mofed_setting(container)[0] is enabled


def _efa_plugin(tag: str = "v0.5.20") -> dict:
    """The stack's EFA plugin builder, tolerating the GPU pool's taint as GpuFabric makes it."""
    return efa_device_plugin_daemonset(image_tag=tag, tolerations_from_taints=[{"key": "nvidia.com/gpu", "effect": "NO_SCHEDULE"}])


def _daemonset(name: str, image: str, **pod) -> dict:
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name, "namespace": "kube-system"},
            "spec": {"template": {"spec": {"containers": [{"name": name, "image": image}],
                                           "tolerations": [{"operator": "Exists"}], **pod}}}}


@pytest.mark.parametrize("image, advertiser", [
    ("602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/aws-efa-k8s-device-plugin:v0.5.20", EFA_PLUGIN),
    ("602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/aws-dranet:v1.0.0", EFA_DRA_DRIVER),
    ("ghcr.io/k8snetworkplumbingwg/sriov-network-device-plugin:v3.9.0", SRIOV_PLUGIN),
    ("ghcr.io/mellanox/k8s-rdma-shared-dev-plugin:v1.5.2", RDMA_SHARED_PLUGIN),
])
def test_advertisers_are_recognised_by_image(image, advertiser):
    assert nic_advertisers(_daemonset("x", image)) == [advertiser]


def test_nvidia_plugin_is_not_an_efa_plugin():
    assert nic_advertisers(_daemonset("nvidia", f"{NVIDIA_PLUGIN_IMAGE}:v0.19.3")) == []


def test_device_manager_recognised_by_the_builders_annotation():
    manager = _daemonset("dm", "gpustack/gpustack-operator:v0.9.0")
    manager["spec"]["template"]["spec"]["containers"][0]["args"] = ["device-manager"]
    assert nic_advertisers(manager) == [DEVICE_MANAGER]


@pytest.fixture(scope="module")
def efa_pools():
    return [fabric_pool_of(pool) for pool in load_config(stack_values("aws-efa")).pools]


def test_two_advertisers_on_one_pool_are_refused(efa_pools):
    plugin = _efa_plugin()
    dranet = _daemonset("aws-dranet", "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/aws-dranet:v1.0.0")
    findings = [f for f in advertiser_findings(efa_pools, [plugin, dranet]) if f.rule_id == "one-advertiser-per-nic"]
    assert {f.pool for f in findings} == {pool.name for pool in efa_pools}
    assert "oversubscribes" in findings[0].message and EFA_DRA_DRIVER in findings[0].message
    assert not advertiser_findings(efa_pools, [plugin])


def test_an_advertiser_whose_selector_misses_the_pool_does_not_count(efa_pools):
    plugin = _efa_plugin()
    elsewhere = _daemonset("sriov", "ghcr.io/k8snetworkplumbingwg/sriov-network-device-plugin:v3.9.0",
                           nodeSelector={"feature.node.kubernetes.io/network-sriov.capable": "true"})
    assert not advertiser_findings(efa_pools, [plugin, elsewhere])
