"""``workload-node-capacity`` and ``workload-lands-on-no-pool``: a workload judged against one node of its pool.

The cases are issue 36's: on a p4d pool (8 GPUs, 4 EFA per node) a pod asking for 8 EFA or 16 GPUs is never
scheduled; a pod's demand is the sum of its containers, the largest init container, sidecars and overhead
(kubernetes.io, "Init Containers": "Resource sharing within containers"); claims count once per pod.
"""

from __future__ import annotations

from support.dra_objects import EFA_CLASS, GPU_CLASS, aligned_spec, claim_template, pod

from gpu_fabric.kube.dra_rules import claim_specs
from gpu_fabric.kube.workload_demand import demand_of, node_capacity_of
from gpu_fabric.kube.workload_rules import FabricPool
from gpu_fabric.kube.workloads import judge_workloads

P4D_LABELS = {"gpu-fabric.io/pool": "p4d"}


def p4d(dra: bool = False) -> FabricPool:
    capacity = node_capacity_of("efa", dra=dra, accelerators=8, accelerator_resource="nvidia.com/gpu", interfaces=4)
    return FabricPool.of("p4d", "efa", P4D_LABELS, [], "nvidia", instance_types=["p4d.24xlarge"], dra=dra,
                         node_capacity=capacity)


def workload(containers, init=(), overhead=None, **spec):
    body = {"nodeSelector": dict(P4D_LABELS), "containers": list(containers), **spec}
    if init:
        body["initContainers"] = list(init)
    if overhead:
        body["overhead"] = overhead
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "job", "namespace": "team-a"}, "spec": body}


def container(name, limits):
    return {"name": name, "image": "x", "resources": {"limits": dict(limits)}}


def efa(name, count, **more):
    return {"name": name, "image": "x", "resources": {"limits": {"vpc.amazonaws.com/efa": count, "hugepages-2Mi": "1Gi",
                                                                **more}}}


def rules(report):
    return [(f.rule_id, str(f.path)) for f in report.errors]


def test_node_capacity_is_what_the_pool_states():
    assert node_capacity_of("efa", dra=False, accelerators=8, accelerator_resource="nvidia.com/gpu", interfaces=4) == {
        "nvidia.com/gpu": 8, "vpc.amazonaws.com/efa": 4}
    assert node_capacity_of("efa", dra=True, accelerators=8, accelerator_resource="nvidia.com/gpu", interfaces=16) == {
        GPU_CLASS: 8, EFA_CLASS: 16}
    assert node_capacity_of("rdma", dra=False, accelerators=None, accelerator_resource=None, interfaces=2,
                            partitioned=0) == {"device.gpustack.ai/rdma": 2, "device.gpustack.ai/rdma.partitioned": 0}


def test_a_container_asking_for_more_efa_than_a_node_has_is_refused_at_the_container():
    report = judge_workloads([workload([efa("engine", 8)])], [p4d()])
    assert rules(report) == [("workload-node-capacity", "spec.containers[0]")]
    message = report.errors[0].message
    assert "asks for 8 vpc.amazonaws.com/efa" in message and "p4d.24xlarge) has 4" in message


def test_sixteen_gpus_on_an_eight_gpu_node_is_refused():
    report = judge_workloads([workload([container("engine", {"nvidia.com/gpu": "16"})])], [p4d()])
    assert rules(report) == [("workload-node-capacity", "spec.containers[0]")]


def test_containers_add_up_and_the_pod_is_blamed_with_every_part():
    report = judge_workloads([workload([efa("a", 2), efa("b", 3)])], [p4d()])
    assert rules(report) == [("workload-node-capacity", "spec")]
    assert "asks for 5 vpc.amazonaws.com/efa in all (container 'b' 3, container 'a' 2" in report.errors[0].message


def test_init_containers_count_by_the_largest_sidecars_add_and_overhead_adds():
    fits = workload([efa("a", 2)], init=[efa("setup", 4)])
    assert judge_workloads([fits], [p4d()]).errors == []
    sidecar = {**efa("proxy", 1), "restartPolicy": "Always"}
    assert demand_of("spec", workload([efa("a", 2)], init=[sidecar, efa("setup", 4)])["spec"], "team-a", {})[
        "vpc.amazonaws.com/efa"][0] == 5
    over = workload([efa("a", 4)], overhead={"vpc.amazonaws.com/efa": "1"})
    assert rules(judge_workloads([over], [p4d()])) == [("workload-node-capacity", "spec")]


def test_claimed_devices_count_once_per_pod_against_a_dra_node():
    template = claim_template("all", aligned_spec(gpus=8, efas=4))
    claims, _ = claim_specs([template])
    one = workload([], resourceClaims=[{"name": "d", "resourceClaimTemplateName": "all"}])
    one["spec"]["containers"] = [{"name": "a", "image": "x", "resources": {"claims": [{"name": "d"}]}},
                                 {"name": "b", "image": "x", "resources": {"claims": [{"name": "d"}]}}]
    assert judge_workloads([one], [p4d(dra=True)], claims=claims).errors == []
    two = workload([{"name": "a", "image": "x"}], resourceClaims=[
        {"name": "d", "resourceClaimTemplateName": "all"}, {"name": "e", "resourceClaimTemplateName": "all"}])
    found = rules(judge_workloads([two], [p4d(dra=True)], claims=claims))
    assert ("workload-node-capacity", "spec") in found


def test_a_fabric_workload_that_tolerates_no_pool_is_refused_at_its_tolerations():
    tainted = FabricPool.of("p4d", "efa", P4D_LABELS, [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}], "nvidia",
                            node_capacity={"vpc.amazonaws.com/efa": 4})
    report = judge_workloads([workload([efa("engine", 1)])], [tainted])
    assert rules(report) == [("workload-lands-on-no-pool", "spec.tolerations")]
    assert "nvidia.com/gpu" in report.errors[0].message and report.not_judged == []


def test_a_claim_of_the_stacks_template_asks_for_the_fabric_too():
    tainted = FabricPool.of("p4d", "efa", P4D_LABELS, [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}], "nvidia",
                            dra=True)
    claims, _ = claim_specs([claim_template("all", aligned_spec(gpus=8, efas=4))])
    claimed = workload([{"name": "a", "image": "x"}], resourceClaims=[{"name": "d", "resourceClaimTemplateName": "all"}])
    assert rules(judge_workloads([claimed], [tainted], claims=claims)) == [("workload-lands-on-no-pool", "spec.tolerations")]


def test_a_template_that_asks_for_no_fabric_and_lands_nowhere_stays_not_judged():
    tainted = FabricPool.of("p4d", "efa", P4D_LABELS, [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}], "nvidia")
    report = judge_workloads([workload([container("web", {"cpu": "1"})])], [tainted])
    assert report.errors == [] and len(report.not_judged) == 1


def test_without_pools_nothing_lands_and_nothing_is_refused():
    assert judge_workloads([workload([efa("engine", 1)])], []).errors == []


def test_the_pod_helper_stays_schedulable_on_a_dra_pool():
    assert pod(templates=())["spec"]["resourceClaims"] == []
