"""Fake clusters for ``verify`` tests: the seed walkthrough's cluster after ``pulumi up``, healthy.

Written from the walkthrough's facts (two A10G nodes labelled ``feature.gpustack.ai/rdma.capable``,
4 GPUs and 2 RDMA NICs each, kubelets on ``restricted``/``container``, team-a's entrance LocalQueue
``gpustack-fnv64-c4680bb149644f1c``), not from verify's own expectations, so a wrong expectation fails.
"""

from __future__ import annotations

from fake_kube import FakeCluster, kubelet_config, node

SEED_NODES = ("a10g-node-1", "a10g-node-2")
SEED_LOCAL_QUEUE = "gpustack-fnv64-c4680bb149644f1c"
RDMA_LABEL = {"feature.gpustack.ai/rdma.capable": "true"}
SEED_ALLOCATABLE = {"cpu": "47", "memory": "185Gi", "nvidia.com/gpu": "4", "device.gpustack.ai/rdma": "2",
                    "device.gpustack.ai/rdma.shared": "128", "pods": "110"}


def seed_cluster() -> FakeCluster:
    """The seed-rdma stack's cluster, healthy: every check of ``verify --stack seed-rdma`` holds."""
    cluster = FakeCluster()
    for name in SEED_NODES:
        cluster.add_node(node(name, dict(RDMA_LABEL), dict(SEED_ALLOCATABLE)), kubelet_config())
    # A control-plane node without the pool's labels: not the pool's, never judged against it.
    cluster.add_node(node("control-plane-1", {"node-role.kubernetes.io/control-plane": ""}, {"cpu": "4", "pods": "110"}),
                     kubelet_config(policy="none"))
    cluster.add_object("kueue.x-k8s.io/v1beta2", "LocalQueue", "localqueues", "team-a", SEED_LOCAL_QUEUE,
                       {"spec": {"clusterQueue": "gpustack--nvidia-a10g-linux-amd64"}})
    cluster.serve("kueue.x-k8s.io/v1beta2", "ClusterQueue", "clusterqueues", namespaced=False)
    cluster.add_object("worker.gpustack.ai/v1", "KVCacheBackend", "kvcachebackends", "", "mooncake-dram")
    cluster.add_object("worker.gpustack.ai/v1", "ModelDeployment", "modeldeployments", "team-a", "qwen-pd")
    return cluster


EFA_PLUGIN = "/apis/apps/v1/namespaces/kube-system/daemonsets/aws-efa-k8s-device-plugin"


def efa_cluster() -> FakeCluster:
    """The aws-efa stack's cluster, healthy: two p5.48xlarge nodes (8 GPUs, 32 EFAs), two c6in.32xlarge
    cache nodes (2 EFAs), the EFA device plugin ready on all four, Kueue and GPUStack objects present."""
    cluster = FakeCluster()
    efa = {"vpc.amazonaws.com/efa.present": "true"}
    for i in (1, 2):
        cluster.add_node(node(f"ip-10-0-1-{i}", {**efa, "node.kubernetes.io/instance-type": "p5.48xlarge"},
                              {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32", "hugepages-2Mi": "5120Mi"}),
                         kubelet_config())
        cluster.add_node(node(f"ip-10-0-2-{i}", {**efa, "node.kubernetes.io/instance-type": "c6in.32xlarge"},
                              {"vpc.amazonaws.com/efa": "2"}), kubelet_config())
    cluster.add_object("apps/v1", "DaemonSet", "daemonsets", "kube-system", "aws-efa-k8s-device-plugin",
                       {"status": {"desiredNumberScheduled": 4, "numberReady": 4, "currentNumberScheduled": 4}})
    for queue in ("gpustack-fnv64-3b93966fd73eb9ec", "gpustack-fnv64-65ee45385e671d10"):
        cluster.add_object("kueue.x-k8s.io/v1beta2", "LocalQueue", "localqueues", "team-a", queue)
    cluster.add_object("worker.gpustack.ai/v1", "KVCacheBackend", "kvcachebackends", "", "mooncake-efa")
    cluster.add_object("worker.gpustack.ai/v1", "KVCachePool", "kvcachepools", "", "efa-cache")
    cluster.add_object("worker.gpustack.ai/v1", "KVCachePoolBinding", "kvcachepoolbindings", "team-a", "shared")
    cluster.add_object("worker.gpustack.ai/v1", "ModelDeployment", "modeldeployments", "team-a", "llama-pd")
    return cluster
