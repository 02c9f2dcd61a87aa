"""The ``device-plugin-coverage`` policy: every fabric pool has the device plugin of its fabric, tolerating its taint, and no plugin selects a pool without it."""

from __future__ import annotations

import pytest
from pulumi_policy import EnforcementLevel

from gpu_fabric.kube.device_plugins import efa_device_plugin_daemonset, gpustack_device_manager_daemonsets
from gpu_fabric.policies import (
    device_plugin_coverage,
    fabric_pool_topology_alignment,
    kueue_fabric_keys_covered,
    model_deployment_unprivileged_roles,
)

from support.policy_helpers import (
    assert_metadata,
    assert_no_violations,
    assert_violation,
    k8s,
    of_type,
    replace_props,
)

H100 = "gpustack--nvidia-h100-linux-amd64"


ADVISORY = {fabric_pool_topology_alignment, kueue_fabric_keys_covered, model_deployment_unprivileged_roles}


@pytest.mark.parametrize("policy", [device_plugin_coverage], ids=lambda p: p.name)
def test_metadata_and_example_stacks_pass(policy, seed, aws_efa):
    assert_metadata(policy, EnforcementLevel.ADVISORY if policy in ADVISORY else EnforcementLevel.MANDATORY)
    assert_no_violations(policy, seed)
    assert_no_violations(policy, aws_efa)


def test_efa_pool_without_plugin_is_refused(aws_efa):
    resources = [r for r in aws_efa if not r.type.endswith(":DaemonSet")]
    pool = next(r for r in resources if r.type == "gpu-fabric:index:KueuePool" and r.props["pool"]["name"] == H100)
    assert_violation(device_plugin_coverage, resources, "no DaemonSet advertises vpc.amazonaws.com/efa", urn=pool.urn)


def test_efa_plugin_that_does_not_tolerate_the_pool_taint_is_refused(aws_efa):
    plugin = k8s(efa_device_plugin_daemonset())  # no tolerations for nvidia.com/gpu
    resources = [*(r for r in aws_efa if not r.type.endswith(":DaemonSet")), plugin]
    assert_violation(device_plugin_coverage, resources, "taint nvidia.com/gpu:NoSchedule is not tolerated")


def test_rdma_pool_needs_a_device_manager_unless_the_operator_chart_deploys_it(seed):
    config = {"operatorChartDeploysDeviceManagers": False}
    assert_violation(device_plugin_coverage, seed, "GPUStack Device Manager", config=config)
    managers = [k8s(m) for m in gpustack_device_manager_daemonsets(manufacturers=["nvidia"])]
    assert_no_violations(device_plugin_coverage, [*seed, *managers], config=config)


def test_efa_plugin_selecting_a_pool_without_efa_is_refused(seed):
    plugin = efa_device_plugin_daemonset()
    plugin["spec"]["template"]["spec"].pop("nodeSelector", None)
    plugin["spec"]["template"]["spec"].pop("affinity", None)
    assert_violation(device_plugin_coverage, [*seed, k8s(plugin)], "schedules on this pool, which has no EFA")


def test_the_stack_declares_who_deploys_the_device_manager(seed):
    def declare(source):
        return replace_props(seed, of_type("gpu-fabric:index:GpuFabric"),
                             lambda p: p.update(devicePlugins={"deviceManager": {"deployedBy": source}}))

    assert_no_violations(device_plugin_coverage, declare("operator-chart"))
    assert_violation(device_plugin_coverage, declare("stack"), "no DaemonSet advertises device.gpustack.ai/rdma")
