"""Policies e-i over the example stacks' renders and objects built with the project's builders."""

from __future__ import annotations

import pytest
from pulumi_policy import EnforcementLevel

from gpu_fabric.kube.device_plugins import efa_device_plugin_daemonset, gpustack_device_manager_daemonsets
from gpu_fabric.kube.kueue import cluster_queue, local_queue
from gpu_fabric.gpustack.naming import local_queue_name
from gpu_fabric.policies import (
    device_plugin_coverage,
    fabric_pool_topology,
    fabric_pool_topology_alignment,
    kueue_fabric_keys_covered,
    kueue_fabric_workload_queue,
    kv_cache_transport_fabric,
    model_deployment_unprivileged_roles,
    mooncake_members_unprivileged,
)
from gpu_fabric.config.pool import PoolSpec

from policy_helpers import (
    assert_metadata,
    assert_no_violations,
    assert_violation,
    k8s,
    of_type,
    rendered,
    replace_props,
    run,
)

H100 = "gpustack--nvidia-h100-linux-amd64"
A10G = "gpustack--nvidia-a10g-linux-amd64"


@pytest.fixture(scope="module")
def seed():
    return rendered("seed-rdma")


@pytest.fixture(scope="module")
def aws_efa():
    return rendered("aws-efa")


ADVISORY = {fabric_pool_topology_alignment, kueue_fabric_keys_covered, model_deployment_unprivileged_roles}


@pytest.mark.parametrize("policy", [
    device_plugin_coverage, fabric_pool_topology, fabric_pool_topology_alignment, kv_cache_transport_fabric,
    kueue_fabric_workload_queue, kueue_fabric_keys_covered, mooncake_members_unprivileged,
    model_deployment_unprivileged_roles,
], ids=lambda p: p.name)
def test_metadata_and_example_stacks_pass(policy, seed, aws_efa):
    assert_metadata(policy, EnforcementLevel.ADVISORY if policy in ADVISORY else EnforcementLevel.MANDATORY)
    assert_no_violations(policy, seed)
    assert_no_violations(policy, aws_efa)


def kueue_pool(name: str):
    return of_type("gpu-fabric:index:KueuePool") if not name else (
        lambda r: r.type == "gpu-fabric:index:KueuePool" and r.props["pool"]["name"] == name)


# -- e. device plugins -------------------------------------------------------------------------------


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


# -- f. topology ----------------------------------------------------------------------------------------


def with_topology(resources, **topology):
    return replace_props(resources, kueue_pool(H100), lambda p: p["pool"]["topology"].update(topology))


def test_topology_none_is_refused_and_best_effort_is_advisory(aws_efa):
    none = with_topology(aws_efa, policy="none")
    assert_violation(fabric_pool_topology, none, "policy 'none' does not align")
    best_effort = with_topology(aws_efa, policy="best-effort")
    assert_no_violations(fabric_pool_topology, best_effort)
    violation = assert_violation(fabric_pool_topology_alignment, best_effort, "'best-effort' admits pods")
    assert violation.enforcement == EnforcementLevel.ADVISORY


def test_static_cpu_manager_needs_reserved_cpus(aws_efa):
    assert_violation(fabric_pool_topology, with_topology(aws_efa, cpuManagerPolicy="static"), "reservedSystemCPUs is required")
    assert_no_violations(fabric_pool_topology, with_topology(aws_efa, cpuManagerPolicy="static", reservedSystemCPUs="0-1"))


# -- g. KV cache -------------------------------------------------------------------------------------


def set_members(resources, **changes):
    def change(props):
        for member in props["spec"]["connection"]["managed"]["members"]:
            member.update(changes)
    return replace_props(resources, of_type("v1alpha1:KVCacheBackend"), change)


def test_fabric_interface_count_above_the_pool_is_refused(aws_efa):
    resources = set_members(aws_efa, fabricInterfaceCount=4)
    backend = next(r for r in resources if r.type.endswith("v1alpha1:KVCacheBackend"))
    assert_violation(kv_cache_transport_fabric, resources, "fabricInterfaceCount 4 exceeds the 2 interfaces per node",
                     urn=backend.urn)


def test_rdma_transport_on_an_efa_pool_is_refused(aws_efa):
    resources = set_members(aws_efa, transport={"protocol": "RDMA"})
    assert_violation(kv_cache_transport_fabric, resources, "uses RDMA transport but selects EFA pool gpustack--generic-linux-amd64")


def test_efa_transport_on_an_rdma_pool_is_refused(seed):
    resources = set_members(seed, transport={"protocol": "EFA"})
    assert_violation(kv_cache_transport_fabric, resources, f"uses EFA transport but selects pool {A10G}, which has fabric rdma")


def test_transfer_leg_on_a_pool_of_another_fabric_is_refused(seed):
    resources = replace_props(seed, of_type("v1alpha1:ModelDeployment"), lambda p: p["spec"]["kvTransfer"].update(protocol="EFA"))
    assert_violation(kv_cache_transport_fabric, resources, f"the transfer leg uses EFA but pool {A10G} has fabric rdma")


# -- h. Kueue -----------------------------------------------------------------------------------------


def efa_job(queue: str | None, namespace: str = "team-a") -> dict:
    labels = {"kueue.x-k8s.io/queue-name": queue} if queue else {}
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "nccl-tests", "namespace": namespace, "labels": labels},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{
            "name": "nccl", "image": "nccl-tests",
            "resources": {"limits": {"nvidia.com/gpu": 8, "vpc.amazonaws.com/efa": 32}},
        }]}}},
    }


def test_fabric_workload_naming_a_local_queue_of_the_stack_passes(aws_efa):
    assert_no_violations(kueue_fabric_workload_queue, [*aws_efa, k8s(efa_job(local_queue_name(H100)))])


def test_fabric_workload_without_queue_or_with_a_foreign_queue_is_refused(aws_efa):
    job = k8s(efa_job(None))
    assert_violation(kueue_fabric_workload_queue, [*aws_efa, job], "has no kueue.x-k8s.io/queue-name label", urn=job.urn)
    assert_violation(kueue_fabric_workload_queue, [*aws_efa, k8s(efa_job("other"))], "'other' names no LocalQueue")
    assert_violation(kueue_fabric_workload_queue, [*aws_efa, k8s(efa_job(local_queue_name(H100), "team-b"))],
                     "names no LocalQueue of the stack in namespace team-b")


def test_cluster_queue_without_fabric_keys_is_advisory():
    pool = PoolSpec.model_validate({"name": H100, "fabric": "efa", "acceleratorsPerNode": 8, "interfacesPerNode": 32,
                                    "nodeCount": 2})
    queue = cluster_queue(pool, ["team-a"])
    objects = [k8s(local_queue(H100, "team-a")), k8s(efa_job(local_queue_name(H100)))]
    assert_no_violations(kueue_fabric_keys_covered, [k8s(queue), *objects])
    group = queue["spec"]["resourceGroups"][0]
    group["coveredResources"] = ["nvidia.com/gpu"]
    group["flavors"][0]["resources"] = group["flavors"][0]["resources"][:1]
    violation = assert_violation(kueue_fabric_keys_covered, [k8s(queue), *objects], "does not cover vpc.amazonaws.com/efa")
    assert violation.enforcement == EnforcementLevel.ADVISORY


# -- i. workload privileges ------------------------------------------------------------------------------


def test_privileged_mooncake_member_is_refused(seed):
    resources = set_members(seed, securityContext={"privileged": True})
    assert_violation(mooncake_members_unprivileged, resources, "members[0].securityContext.privileged is true")


def test_privileged_model_deployment_role_is_advisory(seed):
    resources = replace_props(seed, of_type("v1alpha1:ModelDeployment"), lambda p: p["spec"]["roles"][0].update(privileged=True))
    violation = assert_violation(model_deployment_unprivileged_roles, resources, "spec.roles[0] (prefill) runs privileged")
    assert violation.enforcement == EnforcementLevel.ADVISORY
    assert len(run(model_deployment_unprivileged_roles, resources)) == 1


def test_the_stack_declares_who_deploys_the_device_manager(seed):
    def declare(source):
        return replace_props(seed, of_type("gpu-fabric:index:GpuFabric"),
                             lambda p: p.update(devicePlugins={"deviceManager": {"deployedBy": source}}))

    assert_no_violations(device_plugin_coverage, declare("operator-chart"))
    assert_violation(device_plugin_coverage, declare("stack"), "no DaemonSet advertises device.gpustack.ai/rdma")
