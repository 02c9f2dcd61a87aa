"""Fake clusters for ``verify`` tests: the example stacks' clusters after ``pulumi up``, healthy.

The nodes are written from the walkthrough's facts (two A10G nodes labelled
``feature.gpustack.ai/rdma.capable``, 4 GPUs and 2 RDMA NICs each, kubelets on
``restricted``/``container``), not from verify's expectations, so a wrong expectation fails.
The objects are what ``pulumi up`` applies: the stack's rendered manifests, each served at its API
path (DaemonSets with every pod ready); tests name the walkthrough's objects literally.
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any, Iterable

from support.fake_kube import FakeCluster, kubelet_config, node

from gpu_fabric.program.render import render_stack

PROJECT_DIR = Path(__file__).resolve().parents[2]
SEED_NODES = ("a10g-node-1", "a10g-node-2")
SEED_LOCAL_QUEUE = "gpustack-fnv64-c4680bb149644f1c"
SEED_LOCAL_QUEUE_PATH = f"/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/localqueues/{SEED_LOCAL_QUEUE}"
RDMA_LABEL = {"feature.gpustack.ai/rdma.capable": "true"}
SEED_ALLOCATABLE = {"cpu": "47", "memory": "185Gi", "nvidia.com/gpu": "4", "device.gpustack.ai/rdma": "2",
                    "device.gpustack.ai/rdma.shared": "128", "pods": "110"}
EFA_PLUGIN = "/apis/apps/v1/namespaces/kube-system/daemonsets/aws-efa-k8s-device-plugin"


@functools.lru_cache(maxsize=None)
def _rendered(stack: str) -> tuple[dict[str, Any], ...]:
    return tuple(render_stack(stack, PROJECT_DIR).kubernetes_objects())


def rendered_manifests(stack: str) -> list[dict[str, Any]]:
    """What ``pulumi up`` applies for an example stack (rendered once per test session; copies)."""
    return copy.deepcopy(list(_rendered(stack)))


def plural(kind: str) -> str:
    """The resource name of every kind the example stacks register (``LocalQueue`` -> ``localqueues``)."""
    return kind.lower() + "s"


def apply(cluster: FakeCluster, manifests: Iterable[dict[str, Any]], ready_pods: int) -> None:
    """Create every manifest as ``pulumi up`` would; DaemonSets run ``ready_pods`` ready pods."""
    for manifest in manifests:
        metadata = manifest["metadata"]
        body = {key: value for key, value in manifest.items() if key not in ("apiVersion", "kind", "metadata")}
        if manifest["kind"] == "DaemonSet":
            body["status"] = {"desiredNumberScheduled": ready_pods, "currentNumberScheduled": ready_pods,
                              "numberReady": ready_pods}
        cluster.add_object(manifest["apiVersion"], manifest["kind"], plural(manifest["kind"]),
                           metadata.get("namespace", ""), metadata["name"], body)


def seed_cluster() -> FakeCluster:
    """The seed-rdma stack's cluster, healthy: every check of ``verify --stack seed-rdma`` holds."""
    cluster = FakeCluster()
    for name in SEED_NODES:
        cluster.add_node(node(name, dict(RDMA_LABEL), dict(SEED_ALLOCATABLE)), kubelet_config())
    # A control-plane node without the pool's labels: not the pool's, never judged against it.
    cluster.add_node(node("control-plane-1", {"node-role.kubernetes.io/control-plane": ""}, {"cpu": "4", "pods": "110"}),
                     kubelet_config(policy="none"))
    apply(cluster, rendered_manifests("seed-rdma"), ready_pods=len(SEED_NODES))
    return cluster


def efa_cluster() -> FakeCluster:
    """The aws-efa stack's cluster, healthy: two p5.48xlarge nodes (8 GPUs, 32 EFAs, tainted nvidia.com/gpu), two c6in.32xlarge
    cache nodes (2 EFAs), the EFA device plugin ready on all four, Kueue and GPUStack objects present."""
    cluster = FakeCluster()
    efa = {"vpc.amazonaws.com/efa.present": "true"}
    for i in (1, 2):
        cluster.add_node(node(f"ip-10-0-1-{i}", {**efa, "node.kubernetes.io/instance-type": "p5.48xlarge"},
                              {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32", "hugepages-2Mi": "5120Mi"},
                              taints=[{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]),
                         kubelet_config())
        cluster.add_node(node(f"ip-10-0-2-{i}", {**efa, "node.kubernetes.io/instance-type": "c6in.32xlarge"},
                              {"vpc.amazonaws.com/efa": "2"}), kubelet_config())
    apply(cluster, rendered_manifests("aws-efa"), ready_pods=4)
    return cluster
