"""verify's pure parts: expectations from the validated stack, and the comparisons."""

from __future__ import annotations

from support.fake_kube import kubelet_config, node
from support.stack_configs import seed_values, stack_values

from gpu_fabric.program.render import render_stack
from gpu_fabric.validation.configuration import load_config
from gpu_fabric.verify.checks import FAIL, INCONCLUSIVE, PASS, verify
from gpu_fabric.verify.expectations import ObjectRef, pool_expectation, stack_expectations
from gpu_fabric.verify.snapshot import ClusterSnapshot, KubeletConfigResult

PROJECT = __import__("pathlib").Path(__file__).resolve().parents[2]


def seed_expectations(values=None):
    config = load_config(values or seed_values())
    manifests = render_stack("seed-rdma", PROJECT).kubernetes_objects()
    return stack_expectations("seed-rdma", config, manifests)


def test_seed_pool_expectation_comes_from_the_pool():
    (pool,) = seed_expectations().pools
    assert pool.selector == {"feature.gpustack.ai/rdma.capable": "true", "kubernetes.io/arch": "amd64",
                             "kubernetes.io/os": "linux"}
    assert pool.min_nodes == 2
    assert pool.allocatable == {"nvidia.com/gpu": 4, "device.gpustack.ai/rdma": 2}
    assert pool.kubelet == {"topologyManagerPolicy": "restricted", "topologyManagerScope": "container",
                            "cpuManagerPolicy": "none"}


def test_seed_objects_are_what_the_stack_registers():
    expectations = seed_expectations().objects
    refs = {expectation.ref for expectation in expectations}
    gpustack = load_config(seed_values()).gpustack_api_version
    assert {
        ObjectRef("kueue.x-k8s.io/v1beta2", "LocalQueue", "team-a", "gpustack-fnv64-c4680bb149644f1c"),
        ObjectRef(f"worker.gpustack.ai/{gpustack}", "KVCacheBackend", "", "mooncake-dram"),
        ObjectRef(f"worker.gpustack.ai/{gpustack}", "ModelDeployment", "team-a", "qwen-pd"),
    } <= refs
    # Everything else the render registers is expected too (the kubelet topology agent's DaemonSet among
    # them), and every DaemonSet is checked for its rollout.
    manifests = render_stack("seed-rdma", PROJECT).kubernetes_objects()
    assert refs == {ObjectRef.of(manifest) for manifest in manifests}
    assert all(e.rollout == (e.ref.kind == "DaemonSet") for e in expectations)


def test_a_new_tenant_namespace_expects_its_local_queue():
    values = seed_values()
    values["namespaces"] = ["team-a", "team-b"]
    config = load_config(values)
    manifests = render_stack("seed-rdma", PROJECT, config={f"gpu-fabric:{k}": v for k, v in values.items()}).kubernetes_objects()
    queues = [e.ref for e in stack_expectations("s", config, manifests).objects if e.ref.kind == "LocalQueue"]
    assert [q.namespace for q in queues] == ["team-a", "team-b"]


def test_partitioned_endpoints_are_expected_where_declared():
    values = seed_values()
    values["pools"][0]["partitionedInterfacesPerNode"] = 8
    values["pools"][0]["topology"] = {"policy": "single-numa-node", "cpuManagerPolicy": "static",
                                      "reservedSystemCPUs": "0-1", "policyOptions": {"prefer-closest-numa-nodes": True}}
    pool = pool_expectation(load_config(values).pools[0])
    assert pool.allocatable["device.gpustack.ai/rdma.partitioned"] == 8
    assert pool.kubelet == {"topologyManagerPolicy": "single-numa-node", "topologyManagerScope": "container",
                            "cpuManagerPolicy": "static", "reservedSystemCPUs": "0-1",
                            "topologyManagerPolicyOptions": {"prefer-closest-numa-nodes": "true"}}


def test_efa_pools_select_on_the_efa_label_and_instance_type():
    config = load_config(stack_values("aws-efa"))
    h100, generic = (pool_expectation(pool) for pool in config.pools)
    assert h100.selector["vpc.amazonaws.com/efa.present"] == "true"
    assert h100.selector["node.kubernetes.io/instance-type"] == "p5.48xlarge"
    assert generic.selector["node.kubernetes.io/instance-type"] == "c6in.32xlarge"
    assert h100.allocatable == {"nvidia.com/gpu": 8, "vpc.amazonaws.com/efa": 32}
    assert generic.allocatable == {"vpc.amazonaws.com/efa": 2}


def pool_report(values, nodes, configs):
    expectations = stack_expectations("t", load_config(values), [])
    snapshot = ClusterSnapshot(nodes=nodes, kubelet={name: KubeletConfigResult(config) for name, config in configs.items()})
    return verify(expectations, snapshot)


LABELS = {"feature.gpustack.ai/rdma.capable": "true", "kubernetes.io/arch": "amd64"}
GOOD = {"nvidia.com/gpu": "4", "device.gpustack.ai/rdma": "2"}


def test_policy_options_compare_with_false_meaning_default():
    values = seed_values()
    values["pools"][0]["topology"] = {"policyOptions": {"prefer-closest-numa-nodes": True}}
    nodes = [node("n1", LABELS, GOOD), node("n2", LABELS, GOOD)]
    configs = {"n1": kubelet_config(topologyManagerPolicyOptions={"prefer-closest-numa-nodes": "true",
                                                                  "max-allowable-numa-nodes": "false"}),
               "n2": kubelet_config()}
    report = pool_report(values, nodes, configs)
    assert [(c.subject, c.name, c.found) for c in report.problems()] == [
        ("node n2", "kubelet topologyManagerPolicyOptions", {})]


def test_quantities_are_compared_as_numbers():
    nodes = [node("n1", LABELS, {"nvidia.com/gpu": "4", "device.gpustack.ai/rdma": "2000m"}),
             node("n2", LABELS, {"nvidia.com/gpu": "4", "device.gpustack.ai/rdma": "2k"})]
    report = pool_report(seed_values(), nodes, {"n1": kubelet_config(), "n2": kubelet_config()})
    assert [(c.subject, c.expected, c.found) for c in report.problems()] == [("node n2", 2, 2000)]


def test_a_node_matching_two_pools_fails():
    values = seed_values()
    values["pools"][0].pop("topologyAgent", None)  # the agent's own check refuses overlapping pools
    second = dict(values["pools"][0], name="gpustack--nvidia-a10g-2-linux-amd64")
    values["pools"].append(second)
    values["modelDeployments"] = []
    nodes = [node("n1", LABELS, GOOD), node("n2", LABELS, GOOD)]
    report = pool_report(values, nodes, {"n1": kubelet_config(), "n2": kubelet_config()})
    membership = [c for c in report.problems() if c.name == "pool"]
    assert {c.subject for c in membership} == {"node n1", "node n2"}
    assert all(c.status == FAIL and "several pools" in c.detail for c in membership)


def test_a_pool_without_distinguishing_labels_is_inconclusive():
    values = seed_values()
    values["pools"][0]["nodeLabels"] = {}
    values["pools"][0].pop("topologyAgent", None)  # the agent refuses such a pool outright
    nodes = [node("n1", LABELS, GOOD)]
    report = pool_report(values, nodes, {"n1": kubelet_config()})
    (check,) = report.problems()
    assert check.status == INCONCLUSIVE and "declare the pool's nodeLabels" in check.detail
    assert report.status == INCONCLUSIVE


def test_daemonset_rollout_compares_ready_with_desired():
    manifest = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "plugin", "namespace": "kube-system"}}
    expectations = stack_expectations("t", load_config(seed_values()), [manifest])
    ref = ObjectRef.of(manifest)
    healthy = ClusterSnapshot(objects={ref: {"status": {"desiredNumberScheduled": 4, "numberReady": 4}}})
    lagging = ClusterSnapshot(objects={ref: {"status": {"desiredNumberScheduled": 4, "numberReady": 3}}})
    assert [c.status for c in verify(expectations, healthy).objects] == [PASS, PASS]
    (problem,) = verify(expectations, lagging).problems()[1:]  # [0]: the pool has no nodes in this snapshot
    assert problem.sentence() == "DaemonSet kube-system/plugin: pods ready: expected 4, found 3 (numberReady vs desiredNumberScheduled)"
