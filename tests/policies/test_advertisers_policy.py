"""The ``fabric-advertisers`` policy: one advertiser per pool's NICs, at versions that count them right, over a stack's resources."""


from gpu_fabric.kube.device_plugins import efa_device_plugin_daemonset
from gpu_fabric.policies.advertisers import fabric_advertisers

from support.policy_helpers import assert_metadata, assert_no_violations, assert_violation, component, k8s
from support.stack_configs import b200_values, stack_values


NVIDIA_PLUGIN_IMAGE = "nvcr.io/nvidia/k8s-device-plugin"


def _efa_plugin(tag: str = "v0.5.20") -> dict:
    """The stack's EFA plugin builder, tolerating the GPU pool's taint as GpuFabric makes it."""
    return efa_device_plugin_daemonset(image_tag=tag, tolerations_from_taints=[{"key": "nvidia.com/gpu", "effect": "NO_SCHEDULE"}])


def _daemonset(name: str, image: str, **pod) -> dict:
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name, "namespace": "kube-system"},
            "spec": {"template": {"spec": {"containers": [{"name": name, "image": image}],
                                           "tolerations": [{"operator": "Exists"}], **pod}}}}


def _kueue_pools():
    return [component("gpu-fabric:index:KueuePool", {"pool": pool}, pool["name"]) for pool in stack_values("aws-efa")["pools"]]


def test_the_pack_refuses_mofed_on_and_a_second_advertiser():
    assert_metadata(fabric_advertisers)
    nvidia = k8s(_daemonset("nvidia-device-plugin", f"{NVIDIA_PLUGIN_IMAGE}:v0.19.1"))
    assert_violation(fabric_advertisers, [*_kueue_pools(), nvidia], "MOFED support is on", urn=nvidia.urn)
    fixed = k8s(_daemonset("nvidia-device-plugin", f"{NVIDIA_PLUGIN_IMAGE}:v0.19.1"))
    fixed.props["spec"]["template"]["spec"]["containers"][0]["args"] = ["--mofed-enabled=false"]
    assert_no_violations(fabric_advertisers, [*_kueue_pools(), fixed, k8s(_efa_plugin())])
    dranet = k8s(_daemonset("aws-dranet", "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/aws-dranet:v1.0.0"))
    assert_violation(fabric_advertisers, [*_kueue_pools(), k8s(_efa_plugin()), dranet],
                     "oversubscribes them silently")


def test_the_pack_refuses_an_old_efa_plugin_on_p6_b200():
    pools = [component("gpu-fabric:index:KueuePool", {"pool": pool}, pool["name"]) for pool in b200_values(None)["pools"]]
    old = k8s(_efa_plugin("v0.5.8"))
    assert_violation(fabric_advertisers, [*pools, old], "is below v0.5.10", urn=old.urn)
    assert_no_violations(fabric_advertisers, [*pools, k8s(_efa_plugin("v0.5.10"))])
