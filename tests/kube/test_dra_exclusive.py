"""On a dra pool the DRA drivers alone hand out GPUs and EFA: device plugins and their keys are refused there."""

from __future__ import annotations

import copy
from pathlib import Path

import yaml

from gpu_fabric.kube.device_plugins import efa_device_plugin_daemonset
from gpu_fabric.kube.dra_exclusive import (
    DRA_POOL_DEVICE_PLUGIN,
    DRA_POOL_PLUGIN_KEYS,
    device_plugin_findings,
    plugin_keys_of,
    workload_plugin_key_findings,
)
from gpu_fabric.kube.pool_view import pool_view_of
from gpu_fabric.kube.workload_rules import TRANSFER_HAS_FABRIC_KEY
from gpu_fabric.kube.workloads import judge_workloads
from gpu_fabric.validation.configuration import load_config
from gpu_fabric.validation.fabric_facts import stack_fabric_pools
from support.stack_configs import PROJECT_DIR, stack_values

RIGHT = PROJECT_DIR / "tests" / "fixtures" / "workloads" / "vllm-efa-right.yaml"


def dra_config():
    return load_config(stack_values("dra-efa"))


def nvidia_plugin(**pod_spec) -> dict:
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "nvdp", "namespace": "kube-system"},
            "spec": {"template": {"spec": {"containers": [{"name": "p", "image": "nvcr.io/nvidia/k8s-device-plugin:v0.19.3"}],
                                           **pod_spec}}}}


def test_plugin_keys_are_read_from_the_annotation_or_the_image() -> None:
    assert plugin_keys_of(efa_device_plugin_daemonset()) == ["vpc.amazonaws.com/efa"]
    assert plugin_keys_of(nvidia_plugin()) == ["nvidia.com/gpu"]
    assert plugin_keys_of({"kind": "DaemonSet", "spec": {"template": {"spec": {"containers": [{"image": "dranet:v1"}]}}}}) == []


def test_a_plugin_tolerating_the_dra_pool_is_refused_one_kept_off_is_not() -> None:
    views = [pool_view_of(pool) for pool in dra_config().pools]
    found = device_plugin_findings(views, [nvidia_plugin(tolerations=[{"operator": "Exists"}])])
    assert [f.rule for f in found] == [DRA_POOL_DEVICE_PLUGIN] and found[0].pool == "p5en-h200"
    assert device_plugin_findings(views, [nvidia_plugin()]) == []  # the pool's nvidia.com/gpu taint keeps it off
    assert device_plugin_findings(views, [efa_device_plugin_daemonset(
        tolerations_from_taints=[{"key": "nvidia.com/gpu", "effect": "NoSchedule"}], exclude_dra_nodes=True)]) == []


def test_a_workload_requesting_plugin_keys_on_the_dra_pool_is_refused() -> None:
    views = [pool_view_of(pool) for pool in dra_config().pools]
    deployment = yaml.safe_load(RIGHT.read_text())
    deployment["spec"]["template"]["spec"]["nodeSelector"] = {"gpu-fabric.io/pool": "p5en-h200"}
    found = workload_plugin_key_findings([deployment], views)
    assert [f.rule for f in found] == [DRA_POOL_PLUGIN_KEYS]
    assert "nvidia.com/gpu, vpc.amazonaws.com/efa" in found[0].message
    assert str(found[0].path) == "spec.template.spec.containers"


def claiming(deployment: dict) -> dict:
    claimed = copy.deepcopy(deployment)
    pod = claimed["spec"]["template"]["spec"]
    pod["nodeSelector"] = {"gpu-fabric.io/pool": "p5en-h200"}
    pod["resourceClaims"] = [{"name": "devices", "resourceClaimTemplateName": "p5en-h200-8gpu"}]
    pod["containers"][0]["resources"] = {"claims": [{"name": "devices"}], "limits": {"hugepages-2Mi": "5120Mi"}}
    return claimed


def test_nixl_with_a_claim_on_the_dra_pool_is_no_tcp_fallback() -> None:
    pools = stack_fabric_pools(dra_config())
    deployment = yaml.safe_load(RIGHT.read_text())
    report = judge_workloads([claiming(deployment)], pools)
    assert [f for f in report.findings if f.rule is TRANSFER_HAS_FABRIC_KEY] == []
    without_claim = claiming(deployment)
    del without_claim["spec"]["template"]["spec"]["containers"][0]["resources"]["claims"]
    found = [f for f in judge_workloads([without_claim], pools).findings if f.rule is TRANSFER_HAS_FABRIC_KEY]
    assert found and "ResourceClaim" in found[0].message
    assert workload_plugin_key_findings([claiming(deployment)], [pool_view_of(p) for p in dra_config().pools]) == []
