"""The ``kubelet-host-access`` policy of ``gpu_fabric.policies.security``: only the topology agent reaches the kubelet, and no further than it needs."""

from __future__ import annotations

import copy

import pytest
from pulumi_policy import EnforcementLevel

from gpu_fabric.kube.device_plugins import efa_device_plugin_daemonset, gpustack_device_manager_daemonsets
from gpu_fabric.kube.host_access import kubelet_access
from gpu_fabric.policies import kubelet_host_access

from support.policy_helpers import assert_metadata, assert_no_violations, assert_violation, k8s, rendered
from support.topology_agent import objects, seed_agent, with_topology


@pytest.fixture(scope="module")
def seed() -> dict[str, dict]:
    return seed_agent()


def test_the_pack_recognises_the_seed_agent(seed: dict[str, dict]) -> None:
    assert_metadata(kubelet_host_access, EnforcementLevel.MANDATORY)
    assert_no_violations(kubelet_host_access, rendered("seed-rdma"))
    assert_no_violations(kubelet_host_access, rendered("aws-efa"))


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
