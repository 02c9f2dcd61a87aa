"""The ``device-manager-least-privilege`` policy: GPUStack's Device Manager runs with the least privilege that works."""

import pytest

from gpu_fabric.policies import ALL_POLICIES
from gpu_fabric.policies.device_manager import device_manager_least_privilege
from gpu_fabric.policies.security import kubelet_host_access
from gpu_fabric.program.render import render_stack
from gpu_fabric.resources.fabric import GpuFabric

from support.policy_helpers import Resource, assert_no_violations, assert_violation, of_type, replace_props, run
from support.stack_configs import as_args, seed_with_stack_device_manager


NAME = "gpustack-operator-device-manager"


@pytest.fixture(scope="module")
def stack():
    values = seed_with_stack_device_manager()
    result = render_stack("x", config={}, program=lambda: GpuFabric("fabric", as_args(values)))
    return [Resource(r.type, r.name, r.urn, r.inputs, r.parent, r.dependencies) for r in result.resources]


def test_the_pack_passes_the_stack_deploying_the_device_manager(stack):
    assert_no_violations(device_manager_least_privilege, stack)
    assert_no_violations(kubelet_host_access, stack)
    mandatory = [p for p in ALL_POLICIES if p.enforcement_level.value == "mandatory"]
    assert [v.message for p in mandatory for v in run(p, stack)] == []


def test_binding_the_device_manager_to_cluster_admin_is_refused(stack):
    widened = replace_props(stack, of_type(":ClusterRoleBinding"),
                            lambda p: p["roleRef"].update(name="cluster-admin"))
    assert_violation(device_manager_least_privilege, widened, "to ClusterRole cluster-admin, which the stack does not define")


def test_a_widened_role_is_refused(stack):
    widened = replace_props(stack, of_type(":ClusterRole"),
                            lambda p: p["rules"].append({"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list"]}))
    assert_violation(device_manager_least_privilege, widened, "grants get secrets, list secrets")
    wildcard = replace_props(stack, of_type(":Role"), lambda p: p["rules"][0].update(verbs=["*"]))
    assert_violation(device_manager_least_privilege, wildcard, "grants * nodefeatures.nfd.k8s-sigs.io")


def test_a_narrowed_role_is_refused_too(stack):
    narrowed = replace_props(stack, of_type(":ClusterRole"), lambda p: p["rules"].pop(0))
    assert_violation(device_manager_least_privilege, narrowed, "lacks cluster-wide get nodes")


def test_a_missing_service_account_is_refused(stack):
    without = [r for r in stack if not (r.type.endswith(":ServiceAccount") and "device-manager" in r.name)]
    assert_violation(device_manager_least_privilege, without, f"ServiceAccount {NAME} is not created by the stack")


def test_widened_host_access_is_refused(stack):
    daemonset = of_type(":DaemonSet", "device-manager")
    host_pid = replace_props(stack, daemonset, lambda p: p["spec"]["template"]["spec"].update(hostPID=True))
    assert_violation(device_manager_least_privilege, host_pid, "hostPID: true")

    def writable_cdi(props):
        for mount in props["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]:
            mount.pop("readOnly", None)

    assert_violation(device_manager_least_privilege, replace_props(stack, daemonset, writable_cdi), "mounts /etc/cdi writable")
    extra = replace_props(stack, daemonset, lambda p: p["spec"]["template"]["spec"]["volumes"].append(
        {"name": "root", "hostPath": {"path": "/"}}))
    assert_violation(device_manager_least_privilege, extra, "hostPath /")
