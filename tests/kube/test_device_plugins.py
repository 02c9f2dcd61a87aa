"""Builders of the device-plugin DaemonSets, tested as data and against Kubernetes' schemas."""

from __future__ import annotations

import copy

import kubernetes_validate
import pytest

from gpu_fabric.kube.device_plugins import (
    efa_device_plugin_daemonset,
    gpustack_device_manager_daemonsets,
    tolerations_for_taints,
)
from gpu_fabric.kube.coverage import ADVERTISES_ANNOTATION, PCI_VENDOR_IDS, advertised_resources

KUBERNETES_VERSIONS = ("1.33", "1.37")
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "true", "effect": "NO_SCHEDULE"}
EFA_TAINT = {"key": "aws.amazon.com/efa", "effect": "NoSchedule"}


def _pod_spec(daemonset):
    return daemonset["spec"]["template"]["spec"]


def _all_daemonsets():
    yield efa_device_plugin_daemonset()
    yield efa_device_plugin_daemonset(tolerations_from_taints=[GPU_TAINT, EFA_TAINT], extra_labels={"team": "ml"})
    yield from gpustack_device_manager_daemonsets(manufacturers=sorted(PCI_VENDOR_IDS), tolerations_from_taints=[GPU_TAINT])
    yield from gpustack_device_manager_daemonsets(manufacturers=["nvidia"], shared=False, partitioned=False, sliced=False)


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_every_daemonset_validates_strictly(version):
    for daemonset in _all_daemonsets():
        kubernetes_validate.validate(daemonset, version, strict=True)


def test_strict_validation_catches_a_misspelt_field():
    # Guards the test above: strict mode must reject keys the schema does not know.
    broken = efa_device_plugin_daemonset()
    _pod_spec(broken)["hostNetwrok"] = True
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, "1.33", strict=True)


@pytest.mark.parametrize(
    ("taint", "toleration"),
    [
        (
            {"key": "nvidia.com/gpu", "value": "true", "effect": "NO_SCHEDULE"},
            {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"},
        ),
        (
            {"key": "dedicated", "value": "infer", "effect": "NO_EXECUTE"},
            {"key": "dedicated", "operator": "Equal", "value": "infer", "effect": "NoExecute"},
        ),
        (
            {"key": "spot", "effect": "PREFER_NO_SCHEDULE"},
            {"key": "spot", "operator": "Exists", "effect": "PreferNoSchedule"},
        ),
        (
            {"key": "aws.amazon.com/efa", "value": "", "effect": "NoSchedule"},
            {"key": "aws.amazon.com/efa", "operator": "Exists", "effect": "NoSchedule"},
        ),
    ],
)
def test_taint_becomes_toleration(taint, toleration):
    assert tolerations_for_taints([taint]) == [toleration]


def test_tolerations_are_distinct_and_sorted():
    taints = [GPU_TAINT, EFA_TAINT, {**GPU_TAINT, "effect": "NoSchedule"}, {"key": "a", "effect": "NoExecute"}]
    assert [t["key"] for t in tolerations_for_taints(taints)] == ["a", "aws.amazon.com/efa", "nvidia.com/gpu"]


@pytest.mark.parametrize("taint", [{"key": "x", "effect": "Sometimes"}, {"key": "x"}, {"effect": "NoSchedule"}])
def test_malformed_taint_is_refused(taint):
    with pytest.raises(ValueError):
        tolerations_for_taints([taint])


def test_efa_plugin_selects_by_label_never_by_instance_type():
    pod = _pod_spec(efa_device_plugin_daemonset())
    assert pod["nodeSelector"] == {"vpc.amazonaws.com/efa.present": "true"}
    assert "affinity" not in pod


def test_efa_plugin_tolerates_pool_taints_and_critical_addons():
    pod = _pod_spec(efa_device_plugin_daemonset(tolerations_from_taints=[GPU_TAINT, EFA_TAINT, GPU_TAINT]))
    assert pod["tolerations"] == [
        {"key": "CriticalAddonsOnly", "operator": "Exists"},
        {"key": "aws.amazon.com/efa", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"},
    ]


def test_efa_plugin_runs_with_least_privilege():
    pod = _pod_spec(efa_device_plugin_daemonset())
    (container,) = pod["containers"]
    assert container["securityContext"] == {
        "privileged": False,
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "readOnlyRootFilesystem": True,
    }
    assert pod["automountServiceAccountToken"] is False
    assert pod["hostNetwork"] is True
    assert "hostPID" not in pod and "hostIPC" not in pod


def test_efa_plugin_shape():
    daemonset = efa_device_plugin_daemonset(namespace="efa", image_tag="v0.5.6", extra_labels={"team": "ml"})
    pod = _pod_spec(daemonset)
    (container,) = pod["containers"]
    assert daemonset["metadata"]["namespace"] == "efa"
    assert container["image"].endswith("/eks/aws-efa-k8s-device-plugin:v0.5.6")
    assert pod["priorityClassName"] == "system-node-critical"
    assert daemonset["spec"]["updateStrategy"]["type"] == "RollingUpdate"
    assert {v["hostPath"]["path"] for v in pod["volumes"]} == {"/var/lib/kubelet/device-plugins", "/dev/infiniband"}
    assert {m["mountPath"] for m in container["volumeMounts"]} == {"/var/lib/kubelet/device-plugins", "/dev/infiniband"}
    assert container["resources"]["requests"] == {"cpu": "10m", "memory": "20Mi"}
    assert "memory" in container["resources"]["limits"]
    labels = daemonset["metadata"]["labels"]
    assert labels == {"team": "ml", "app.kubernetes.io/name": "aws-efa-k8s-device-plugin", "app.kubernetes.io/managed-by": "gpu-fabric"}
    assert daemonset["spec"]["template"]["metadata"]["labels"] == labels
    assert daemonset["spec"]["selector"]["matchLabels"] == {"app.kubernetes.io/name": "aws-efa-k8s-device-plugin"}
    assert daemonset["metadata"]["annotations"] == {ADVERTISES_ANNOTATION: "vpc.amazonaws.com/efa"}


def test_efa_default_image_is_recent_enough_for_p6():
    (container,) = _pod_spec(efa_device_plugin_daemonset())["containers"]
    tag = container["image"].rsplit(":", 1)[1]
    assert tuple(int(part) for part in tag.lstrip("v").split(".")) >= (0, 5, 6)


def test_extra_labels_cannot_override_selector_labels():
    daemonset = efa_device_plugin_daemonset(extra_labels={"app.kubernetes.io/name": "other"})
    assert daemonset["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/name"] == "aws-efa-k8s-device-plugin"


def test_builders_are_deterministic_and_share_no_mutable_parts():
    first = efa_device_plugin_daemonset(tolerations_from_taints=[EFA_TAINT, GPU_TAINT])
    second = efa_device_plugin_daemonset(tolerations_from_taints=[GPU_TAINT, EFA_TAINT])
    assert first == second
    snapshot = copy.deepcopy(first)
    first["metadata"]["labels"]["mutated"] = "yes"
    assert first["spec"]["template"]["metadata"]["labels"] == snapshot["spec"]["template"]["metadata"]["labels"]
    assert gpustack_device_manager_daemonsets(manufacturers=["nvidia", "amd"]) == gpustack_device_manager_daemonsets(
        manufacturers=["amd", "nvidia", "amd"]
    )


@pytest.mark.parametrize(("manufacturer", "vendor"), sorted(PCI_VENDOR_IDS.items()))
def test_device_manager_per_manufacturer(manufacturer, vendor):
    (daemonset,) = gpustack_device_manager_daemonsets(manufacturers=[manufacturer], release_name="gs")
    pod = _pod_spec(daemonset)
    assert daemonset["metadata"]["name"] == f"gs-device-manager-{manufacturer}"
    assert daemonset["metadata"]["labels"]["gpustack.ai/manufacturer"] == manufacturer
    assert daemonset["spec"]["selector"]["matchLabels"]["gpustack.ai/manufacturer"] == manufacturer
    assert pod["nodeSelector"] == {f"feature.node.kubernetes.io/pci-{vendor}.present": "true"}
    if manufacturer in ("nvidia", "mthreads"):
        assert pod["runtimeClassName"] == manufacturer
    else:
        assert "runtimeClassName" not in pod


def test_device_manager_container():
    (daemonset,) = gpustack_device_manager_daemonsets(manufacturers=["nvidia"], secure_port=30443, extra_args=["--foo"])
    pod = _pod_spec(daemonset)
    (main,) = pod["containers"]
    (init,) = pod["initContainers"]
    assert main["image"].startswith("gpustack/gpustack-operator:")
    assert main["args"] == [
        "gpustack-operator", "device-manager", "serve", "-v=2", "--secure-port=30443", "--manufacturer=nvidia", "--foo",
    ]
    assert init["name"] == "stage-libs"
    assert main["securityContext"]["privileged"] is True
    assert "hostPID" not in pod and "hostIPC" not in pod
    assert pod["priorityClassName"] == "system-cluster-critical"
    downward = {e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in main["env"] if "valueFrom" in e}
    assert downward == {
        "KUBERNETES_POD_IP": "status.podIP",
        "KUBERNETES_POD_NAME": "metadata.name",
        "KUBERNETES_POD_NAMESPACE": "metadata.namespace",
        "KUBERNETES_NODE_NAME": "spec.nodeName",
    }
    for probe, path in (("readinessProbe", "/readyz"), ("livenessProbe", "/livez")):
        assert main[probe]["httpGet"] == {"path": path, "port": "https", "scheme": "HTTPS"}
    assert main["ports"] == [{"name": "https", "containerPort": 30443}]
    mounts = {m["mountPath"]: m.get("readOnly", False) for m in main["volumeMounts"]}
    for path in ("/dev", "/sys", "/tmp", "/run/containerd", "/var/lib/gpustack", "/var/lib/kubelet/device-plugins", "/etc/containerd"):
        assert mounts[path] is False
    assert mounts["/etc/cdi"] is True and mounts["/var/run/cdi"] is True
    volume_names = {v["name"] for v in pod["volumes"]}
    assert {m["name"] for m in main["volumeMounts"]} <= volume_names


def test_vendor_driver_trees_are_mounted_read_only():
    (daemonset,) = gpustack_device_manager_daemonsets(manufacturers=["amd"])
    mounts = {m["mountPath"]: m.get("readOnly", False) for m in _pod_spec(daemonset)["containers"][0]["volumeMounts"]}
    assert mounts["/opt/rocm"] is True


@pytest.mark.parametrize(
    ("switches", "expected_args", "advertised"),
    [
        ({}, [], {"device.gpustack.ai/rdma", "device.gpustack.ai/rdma.shared", "device.gpustack.ai/rdma.partitioned"}),
        ({"shared": False}, ["--no-shared"], {"device.gpustack.ai/rdma", "device.gpustack.ai/rdma.partitioned"}),
        ({"partitioned": False, "sliced": False}, ["--no-partitioned", "--no-sliced"], {"device.gpustack.ai/rdma", "device.gpustack.ai/rdma.shared"}),
        ({"shared": False, "partitioned": False}, ["--no-shared", "--no-partitioned"], {"device.gpustack.ai/rdma"}),
    ],
)
def test_device_manager_mode_switches(switches, expected_args, advertised):
    (daemonset,) = gpustack_device_manager_daemonsets(manufacturers=["nvidia"], **switches)
    args = _pod_spec(daemonset)["containers"][0]["args"]
    assert args[6:] == expected_args
    assert advertised_resources(daemonset) == advertised
    # The image-and-args recognition agrees with the declared annotation.
    undeclared = copy.deepcopy(daemonset)
    del undeclared["metadata"]["annotations"]
    assert advertised_resources(undeclared) == advertised


def test_unknown_manufacturer_is_refused_with_the_allowed_ones():
    with pytest.raises(ValueError, match="intel.*expected one of amd, ascend, cambricon"):
        gpustack_device_manager_daemonsets(manufacturers=["nvidia", "intel"])


def test_device_manager_needs_a_manufacturer():
    with pytest.raises(ValueError):
        gpustack_device_manager_daemonsets(manufacturers=[])


def test_custom_resources_are_copied_not_shared():
    resources = {"requests": {"cpu": "50m", "memory": "64Mi"}}
    daemonset = efa_device_plugin_daemonset(resources=resources)
    container = _pod_spec(daemonset)["containers"][0]
    assert container["resources"] == resources
    container["resources"]["requests"]["cpu"] = "1"
    assert resources["requests"]["cpu"] == "50m"
