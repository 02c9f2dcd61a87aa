"""The stack-deployed Device Manager: its ServiceAccount, least-privilege RBAC, mounts, and the policy."""

import pytest

from gpu_fabric.kube.device_plugins import gpustack_device_manager_daemonsets
from gpu_fabric.gpustack.device_manager_access import CLUSTER_RULES, NAMESPACED_RULES, rules_excess, rules_missing
from gpu_fabric.program.render import render_stack
from gpu_fabric.resources.fabric import GpuFabric

from support.policy_helpers import Resource
from support.stack_configs import as_args, seed_values, seed_with_stack_device_manager


NAME = "gpustack-operator-device-manager"


@pytest.fixture(scope="module")
def stack():
    values = seed_with_stack_device_manager()
    result = render_stack("x", config={}, program=lambda: GpuFabric("fabric", as_args(values)))
    return [Resource(r.type, r.name, r.urn, r.inputs, r.parent, r.dependencies) for r in result.resources]


def objects(resources, kind):
    return [r for r in resources if r.type.startswith("kubernetes:") and r.type.rsplit(":", 1)[-1] == kind
            and "device-manager" in r.name]


def only(resources, kind):
    found = objects(resources, kind)
    assert len(found) == 1, [r.name for r in found]
    return found[0].props


def test_service_account_roles_and_bindings_reference_each_other(stack):
    account = only(stack, "ServiceAccount")
    assert account["metadata"]["name"] == NAME and account["metadata"]["namespace"] == "gpu-ops"
    subject = {"kind": "ServiceAccount", "name": NAME, "namespace": "gpu-ops"}
    cluster_binding, binding = only(stack, "ClusterRoleBinding"), only(stack, "RoleBinding")
    assert cluster_binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                          "name": only(stack, "ClusterRole")["metadata"]["name"]}
    assert binding["roleRef"]["kind"] == "Role" and binding["roleRef"]["name"] == only(stack, "Role")["metadata"]["name"]
    assert cluster_binding["subjects"] == [subject] and binding["subjects"] == [subject]
    assert only(stack, "Role")["metadata"]["namespace"] == binding["metadata"]["namespace"] == "gpu-ops"
    assert {only(stack, kind)["metadata"]["name"] for kind in ("ClusterRole", "Role", "RoleBinding")} == {NAME}


def test_roles_grant_exactly_what_the_code_uses(stack):
    cluster_rules, rules = only(stack, "ClusterRole")["rules"], only(stack, "Role")["rules"]
    assert {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]} in cluster_rules
    assert {"apiGroups": ["nfd.k8s-sigs.io"], "resources": ["nodefeatures"],
            "verbs": ["get", "create", "update", "delete"]} in rules
    granted = {(g, r, v) for rule in cluster_rules for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]}
    assert not any(r in ("leases", "events", "secrets", "*") or v in ("*", "escalate", "bind") for _, r, v in granted)
    assert rules_excess("ClusterRole", cluster_rules) == [] and rules_excess("Role", rules) == []
    assert rules_missing(cluster_rules, rules) == []
    assert all(rule.needed_by.startswith("pkg/") for rule in (*CLUSTER_RULES, *NAMESPACED_RULES))


def test_the_daemonset_runs_as_the_service_account(stack):
    daemonset = next(d.props for d in objects(stack, "DaemonSet") if d.props["metadata"]["name"].startswith(NAME))
    pod = daemonset["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == NAME and daemonset["metadata"]["namespace"] == "gpu-ops"
    assert not any(pod.get(flag) for flag in ("hostPID", "hostIPC", "hostNetwork"))


def test_names_are_deterministic():
    def render():
        values = seed_values()
        values["devicePlugins"] = {"deviceManager": {"deployedBy": "stack"}}
        result = render_stack("x", config={}, program=lambda: GpuFabric("fabric", as_args(values)))
        return [(r.urn, r.inputs) for r in result.resources if "device-manager" in r.name]

    first = render()
    assert first == render()
    assert {inputs["metadata"]["name"] for _, inputs in first if "metadata" in inputs} == {NAME, f"{NAME}-nvidia"}


def test_mounts_are_read_only_where_the_device_manager_only_reads():
    (amd,) = gpustack_device_manager_daemonsets(manufacturers=["amd"])
    pod = amd["spec"]["template"]["spec"]
    paths = {v["name"]: v["hostPath"]["path"] for v in pod["volumes"]}
    read_only = {paths[m["name"]] for m in pod["containers"][0]["volumeMounts"] if m.get("readOnly")}
    assert read_only == {"/etc/cdi", "/var/run/cdi", "/opt/rocm"}
