"""KubeletTopologyAgent: the seed stack's rendered agent, rolling on settings changes, refusals, and its policy."""

from __future__ import annotations

import pytest
import yaml

from gpu_fabric.kube.device_plugins import efa_device_plugin_daemonset
from gpu_fabric.kube.topology_agent import DIGEST_ANNOTATION, agent_name, agent_modules, topology_agent_for_pool
from gpu_fabric.kube.coverage import daemonset_schedules_on
from gpu_fabric.kube.host_access import host_access_findings, topology_agent_excess
from gpu_fabric.program.render import render_stack
from gpu_fabric.config.base import ConfigError
from gpu_fabric.validation.configuration import load_config
from gpu_fabric.config.topology import KubeletTopology
from gpu_fabric.kube.topology import kubelet_config_dropin_yaml

from support.stack_configs import seed_values, stack_values
from support.topology_agent import objects, seed_agent, with_topology


A10G = "gpustack--nvidia-a10g-linux-amd64"


@pytest.fixture(scope="module")
def seed() -> dict[str, dict]:
    return seed_agent()


def test_seed_renders_the_agent_on_exactly_the_pools_nodes(seed: dict[str, dict]) -> None:
    assert set(seed) == {"ConfigMap", "Lease", "ServiceAccount", "Role", "RoleBinding", "ClusterRole",
                         "ClusterRoleBinding", "DaemonSet"}
    daemonset = seed["DaemonSet"]
    pod = daemonset["spec"]["template"]["spec"]
    pool = load_config(stack_values("seed-rdma")).pools[0]
    assert pod["nodeSelector"] == pool.effective_node_labels() == {
        "feature.gpustack.ai/rdma.capable": "true", "kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux"}
    assert daemonset_schedules_on(daemonset, pool.effective_node_labels(), pool.taint_dicts()) == (True, "")
    # Not on a node the pool's labels do not describe (a CPU-only node, say).
    assert not daemonset_schedules_on(daemonset, {"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"})[0]
    assert daemonset["spec"]["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}


def test_seed_agent_carries_the_walkthroughs_dropin(seed: dict[str, dict]) -> None:
    data = seed["ConfigMap"]["data"]
    dropin = yaml.safe_load(data["50-gpu-fabric-topology.conf"])
    assert dropin == {"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
                      "topologyManagerPolicy": "restricted", "topologyManagerScope": "container", "cpuManagerPolicy": "none"}
    assert {key: data[key] for key in agent_modules()} == agent_modules()
    assert seed["ConfigMap"]["immutable"] is True
    volumes = {v["name"]: v for v in seed["DaemonSet"]["spec"]["template"]["spec"]["volumes"]}
    assert volumes["settings"]["configMap"]["name"] == seed["ConfigMap"]["metadata"]["name"]


def test_seed_agent_has_exactly_the_host_access_a_restart_needs(seed: dict[str, dict]) -> None:
    pod = seed["DaemonSet"]["spec"]["template"]["spec"]
    assert pod["hostPID"] is True and "hostNetwork" not in pod and "hostIPC" not in pod
    host_paths = sorted(v["hostPath"]["path"] for v in pod["volumes"] if "hostPath" in v)
    assert host_paths == ["/etc/kubernetes", "/run/systemd/private", "/var/lib/kubelet"]
    (container,) = pod["containers"]
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert container["securityContext"]["privileged"] is False
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["readinessProbe"]["exec"]["command"][-1] == "probe"
    assert topology_agent_excess(pod) == []
    rules = seed["ClusterRole"]["rules"]
    assert rules == [{"apiGroups": [""], "resources": ["nodes/configz"], "verbs": ["get"]},
                     {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}]
    (lease_rule,) = seed["Role"]["rules"]
    assert lease_rule["resourceNames"] == [seed["Lease"]["metadata"]["name"]] and "create" not in lease_rule["verbs"]
    env = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}
    assert env["LEASE_NAME"] == seed["Lease"]["metadata"]["name"]


def test_a_settings_change_changes_the_pod_template() -> None:
    restricted = objects(with_topology(None))
    single = objects(with_topology({"policy": "single-numa-node"}))
    template_before = restricted["DaemonSet"]["spec"]["template"]
    template_after = single["DaemonSet"]["spec"]["template"]
    assert template_before != template_after
    assert template_before["metadata"]["annotations"][DIGEST_ANNOTATION] != template_after["metadata"]["annotations"][DIGEST_ANNOTATION]
    assert restricted["ConfigMap"]["metadata"]["name"] != single["ConfigMap"]["metadata"]["name"]
    assert yaml.safe_load(single["ConfigMap"]["data"]["50-gpu-fabric-topology.conf"])["topologyManagerPolicy"] == "single-numa-node"
    # Names of everything else stay: only the pods and their settings roll.
    assert restricted["Lease"] == single["Lease"] and restricted["ClusterRole"] == single["ClusterRole"]


def test_equal_settings_render_identically() -> None:
    assert objects(with_topology(None)) == objects(with_topology({"policy": "restricted", "scope": "container"}))


def test_long_pool_names_still_make_valid_label_values() -> None:
    name = agent_name("gpustack--nvidia-rtx-pro-6000-blackwell-server-edition-linux-amd64")
    assert len(name) <= 63 and name != agent_name("gpustack--nvidia-rtx-pro-6000-blackwell-server-edition-linux-arm64")


def problems(values: dict) -> dict[str, str]:
    with pytest.raises(ConfigError) as caught:
        load_config(values)
    return dict(caught.value.pairs)


def test_a_pool_the_stack_provisions_cannot_opt_in() -> None:
    values = stack_values("aws-efa")
    values["pools"][0]["topologyAgent"] = True
    found = problems(values)
    assert "user data already carries the topology" in found["pools[0].topologyAgent"]


def test_settings_the_kubelet_would_reject_are_refused_with_their_path() -> None:
    values = with_topology({"policy": "single-numa-node", "cpuManagerPolicy": "static", "reservedSystemCPUs": "0-1",
                            "cpuManagerPolicyOptions": {"align-by-socket": True}})
    found = problems(values)
    (path,) = found
    assert path == "pools[0].topology"
    assert "align-by-socket is refused by the kubelet with TopologyManager policy 'single-numa-node'" in found[path]
    values = with_topology({"cpuManagerPolicyOptions": {"full-pcpus-only": True}})
    assert "only to cpuManagerPolicy 'static'" in problems(values)["pools[0].topology"]


def test_an_agent_must_not_reach_other_pools_or_every_node() -> None:
    values = with_topology(None)
    values["pools"][0]["nodeLabels"] = {}
    assert "every such node in the cluster" in problems(values)["pools[0].nodeLabels"]

    values = with_topology(None)
    values["pools"].append({"name": "gpustack--nvidia-l40s-linux-amd64", "fabric": "rdma", "acceleratorsPerNode": 8,
                            "interfacesPerNode": 2, "nodeCount": 1,
                            "nodeLabels": {"feature.gpustack.ai/rdma.capable": "true", "gpu": "l40s"}})
    found = problems(values)
    assert "also run on the nodes of pool gpustack--nvidia-l40s-linux-amd64" in found["pools[0].topologyAgent"]


@pytest.mark.parametrize(("agent", "path", "fragment"), [
    ({"hostPaths": ["/"]}, "pools[0].topologyAgent.hostPaths", "other than /"),
    ({"hostPaths": ["etc/kubernetes"]}, "pools[0].topologyAgent.hostPaths", "absolute"),
    ({"hostPaths": ["/etc/kubernetes", "/etc/kubernetes/kubelet"]}, "pools[0].topologyAgent.hostPaths", "inside"),
    ({"kubeletUnit": "kubelet"}, "pools[0].topologyAgent.kubeletUnit", "systemd service unit"),
    ({"imagee": "python:3.13-slim"}, "pools[0].topologyAgent.imagee", "unknown field"),
])
def test_bad_agent_settings_name_their_path(agent: dict, path: str, fragment: str) -> None:
    values = seed_values()
    values["pools"][0]["topologyAgent"] = agent
    assert fragment in problems(values)[path]


def test_the_component_alone_refuses_settings_before_registering() -> None:
    with pytest.raises(ConfigError, match="cpuManagerPolicyOptions"):
        topology_agent_for_pool({"pool": {"name": A10G, "labels": {"gpu": "a10g"},
                                          "topology": {"cpu_manager_policy_options": {"full-pcpus-only": "true"}}}})
    with pytest.raises(ValueError, match="pool.name"):
        topology_agent_for_pool({"pool": {"labels": {"gpu": "a10g"}}})
    with pytest.raises(ValueError, match="pool.labels: .*select every node of the cluster"):
        topology_agent_for_pool({"pool": {"name": A10G, "labels": {"kubernetes.io/os": "linux"}}})
    with pytest.raises(ValueError, match="pool.labels"):
        topology_agent_for_pool({"pool": {"name": A10G}})


def test_the_component_registers_nothing_when_refused() -> None:
    from gpu_fabric.resources.kubelet_topology_agent import KubeletTopologyAgent

    def program() -> None:
        KubeletTopologyAgent("agent", {"pool": {"name": A10G, "labels": {"gpu": "a10g"},
                                               "topology": {"policy": "strict"}}})

    with pytest.raises(ValueError, match="policy"):
        render_stack("test", config={}, program=program)


def test_the_component_alone_renders_what_the_stack_renders() -> None:
    from gpu_fabric.resources.kubelet_topology_agent import KubeletTopologyAgent

    pool = load_config(with_topology(None)).pools[0]
    args = {"pool": {"name": pool.name, "labels": pool.effective_node_labels(), "taints": pool.taint_dicts(),
                     "topology": {"policy": "restricted", "scope": "container"}}}
    result = render_stack("test", config={}, program=lambda: KubeletTopologyAgent("agent", args))
    alone = {m["kind"]: m for m in result.kubernetes_objects()}
    assert alone == objects(with_topology(None))
    assert yaml.safe_load(alone["ConfigMap"]["data"]["50-gpu-fabric-topology.conf"]) == yaml.safe_load(
        kubelet_config_dropin_yaml(KubeletTopology.fabric_default()))


def test_taints_of_the_pool_are_tolerated() -> None:
    values = with_topology(None)
    values["pools"][0]["taints"] = [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]
    pod = objects(values)["DaemonSet"]["spec"]["template"]["spec"]
    assert pod["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]


def test_an_agent_annotation_on_a_foreign_workload_does_not_buy_more_access() -> None:
    daemonset = efa_device_plugin_daemonset()
    daemonset["metadata"]["annotations"]["gpu-fabric.io/component"] = "kubelet-topology-agent"
    daemonset["spec"]["template"]["spec"]["hostPID"] = True
    findings = host_access_findings(daemonset, daemonset["spec"]["template"]["spec"])
    messages = [finding.message for finding in findings]
    # Claiming to be the agent only swaps one check for a stricter one: the plugin's host network and
    # its /dev mount are outside the agent's allowance.
    assert any("hostNetwork: true" in message for message in messages)
    assert any("hostPath /dev/infiniband" in message for message in messages)


def test_the_component_outputs_name_its_daemonset() -> None:
    import pulumi

    from gpu_fabric.resources.kubelet_topology_agent import KubeletTopologyAgent

    seen: dict[str, str] = {}

    def program() -> None:
        agent = KubeletTopologyAgent("agent", {"pool": {"name": A10G, "labels": {"gpu": "a10g"}}, "namespace": "node-agents"})
        pulumi.Output.all(agent.daemonset_name, agent.namespace, agent.settings_digest).apply(
            lambda values: seen.update(name=values[0], namespace=values[1], digest=values[2]))

    result = render_stack("test", config={}, program=program)
    (daemonset,) = [m for m in result.kubernetes_objects() if m["kind"] == "DaemonSet"]
    assert seen == {"name": daemonset["metadata"]["name"], "namespace": "node-agents",
                    "digest": daemonset["spec"]["template"]["metadata"]["annotations"][DIGEST_ANNOTATION]}
