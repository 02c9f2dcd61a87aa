"""The ``kubelet-host-access`` policy of ``gpu_fabric.policies.security``: only the topology agent reaches the kubelet, and no further than it needs."""

from __future__ import annotations

import copy

import pytest
from pulumi_policy import EnforcementLevel

from gpu_fabric.kube.device_plugins import efa_device_plugin_daemonset, gpustack_device_manager_daemonsets
from gpu_fabric.kube.host_access import kubelet_access
from gpu_fabric.policies import kubelet_host_access
from gpu_fabric.program.render import render_stack

from support.policy_helpers import assert_metadata, assert_no_violations, assert_violation, k8s, rendered
from support.stack_configs import PROJECT_DIR, as_args, seed_values


def objects(values: dict) -> dict[str, dict]:
    """The agent's Kubernetes objects of a rendered configuration, by kind."""
    from gpu_fabric.resources.fabric import GpuFabric

    result = render_stack("test", config={}, program=lambda: GpuFabric("fabric", as_args(values)))
    found = {}
    for manifest in result.kubernetes_objects():
        annotations = manifest["metadata"].get("annotations") or {}
        if annotations.get("gpu-fabric.io/component") == "kubelet-topology-agent":
            assert manifest["kind"] not in found
            found[manifest["kind"]] = manifest
    return found


@pytest.fixture(scope="module")
def seed() -> dict[str, dict]:
    result = render_stack("seed-rdma", PROJECT_DIR)
    return {m["kind"]: m for m in result.kubernetes_objects()
            if (m["metadata"].get("annotations") or {}).get("gpu-fabric.io/component") == "kubelet-topology-agent"}


def test_the_pack_recognises_the_seed_agent(seed: dict[str, dict]) -> None:
    assert_metadata(kubelet_host_access, EnforcementLevel.MANDATORY)
    assert_no_violations(kubelet_host_access, rendered("seed-rdma"))
    assert_no_violations(kubelet_host_access, rendered("aws-efa"))


def with_topology(topology: dict | None) -> dict:
    values = seed_values()
    values["pools"][0]["topologyAgent"] = True
    if topology is not None:
        values["pools"][0]["topology"] = topology
    return values


def agent_daemonset() -> dict:
    return copy.deepcopy(objects(with_topology(None))["DaemonSet"])


@pytest.mark.parametrize(("widen", "fragment"), [
    (lambda pod: pod.update(hostNetwork=True), "hostNetwork: true"),
    (lambda pod: pod["containers"][0]["securityContext"].update(privileged=True), "privileged"),
    (lambda pod: pod["containers"][0]["securityContext"]["capabilities"].update(add=["SYS_ADMIN"]), "adds capabilities"),
    (lambda pod: pod["volumes"].append({"name": "root", "hostPath": {"path": "/"}}), "hostPath /"),
])
def test_a_widened_agent_is_refused(widen, fragment: str) -> None:
    daemonset = agent_daemonset()
    widen(daemonset["spec"]["template"]["spec"])
    assert_violation(kubelet_host_access, [k8s(daemonset)], fragment)


@pytest.mark.parametrize("pod_change", [
    lambda pod: pod.update(hostPID=True),
    lambda pod: pod.setdefault("volumes", []).append({"name": "k", "hostPath": {"path": "/etc/kubernetes/kubelet.conf.d"}}),
    lambda pod: pod.setdefault("volumes", []).append({"name": "v", "hostPath": {"path": "/var"}}),
    lambda pod: pod.setdefault("volumes", []).append({"name": "s", "hostPath": {"path": "/run/systemd/private"}}),
])
def test_any_other_workload_reaching_the_kubelet_is_refused(pod_change) -> None:
    daemonset = efa_device_plugin_daemonset()
    pod_change(daemonset["spec"]["template"]["spec"])
    assert_violation(kubelet_host_access, [k8s(daemonset)], "only gpu-fabric's kubelet topology agent is expected to")


def test_device_plugins_sharing_the_kubelets_plugin_sockets_pass() -> None:
    plugins = [efa_device_plugin_daemonset(), *gpustack_device_manager_daemonsets(manufacturers=["nvidia", "amd"])]
    assert_no_violations(kubelet_host_access, [k8s(d) for d in plugins])
    for plugin in plugins:
        assert kubelet_access(plugin["spec"]["template"]["spec"]) == []
