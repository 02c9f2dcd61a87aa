"""A vLLM workload on an EFA pool, in any workload kind, for the workload rules and their policies."""

from __future__ import annotations

# vLLM NixlConnector guide, "Example: using LIBFABRIC backend" (JSON form).
VLLM_LIBFABRIC_JSON = ["vllm", "serve", "<MODEL>", "--kv-transfer-config",
                       '{"kv_connector":"NixlConnector","kv_role":"kv_both","kv_connector_extra_config":{"backends":["LIBFABRIC"]}}']

# vLLM NixlConnector guide: set the side-channel host when peers are on other machines (here: the pod's IP).
SIDE_CHANNEL_HOST = {"name": "VLLM_NIXL_SIDE_CHANNEL_HOST", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}


def pod_spec(**changes) -> dict:
    """A pod spec every workload rule passes on p5.48xlarge: 8 GPUs, 32 EFA, hugepages, the side-channel host."""
    spec = {"nodeSelector": {"node.kubernetes.io/instance-type": "p5.48xlarge"},
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.12.0", "command": list(VLLM_LIBFABRIC_JSON),
                            "env": [dict(SIDE_CHANNEL_HOST)],
                            "resources": {"limits": {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32",
                                                     "hugepages-2Mi": "5120Mi", "memory": "512Gi"}}}]}
    spec.update(changes)
    return spec


def wrap(kind: str, spec_of_pod: dict) -> dict:
    """``spec_of_pod`` as the pod template of a ``kind`` object in ``team-a``."""
    template = {"metadata": {"labels": {"app": "x"}}, "spec": spec_of_pod}
    spec: dict
    if kind == "Pod":
        spec = spec_of_pod
    elif kind == "CronJob":
        spec = {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": template}}}
    elif kind == "LeaderWorkerSet":
        spec = {"leaderWorkerTemplate": {"size": 2, "workerTemplate": template}}
    else:
        spec = {"template": template}
    api = {"Pod": "v1", "Job": "batch/v1", "CronJob": "batch/v1", "LeaderWorkerSet": "leaderworkerset.x-k8s.io/v1"}
    return {"apiVersion": api.get(kind, "apps/v1"), "kind": kind, "metadata": {"name": "w", "namespace": "team-a"}, "spec": spec}


def with_container(**changes) -> dict:
    """The right pod spec with its container changed; ``env`` entries come first, the side-channel host stays."""
    spec = pod_spec()
    container = spec["containers"][0]
    env = [*changes.pop("env", []), *container["env"]]
    container.update(changes, env=env)
    return spec


QUEUE_LABEL = "kueue.x-k8s.io/queue-name"


def step1_pod(queue: str | None = "gpustack-fnv64-<hash>", namespace: str = "team-a") -> dict:
    """The RDMA walkthrough's Step 1 Pod, verbatim but for its queue label (``None``: no label) and namespace."""
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "trainer-0", "namespace": namespace, "labels": {QUEUE_LABEL: queue} if queue else {}},
        "spec": {"restartPolicy": "Never", "containers": [{
            "name": "trainer", "image": "ubuntu:24.04", "command": ["sleep", "3600"],
            "resources": {"limits": {"nvidia.com/gpu": "1", "device.gpustack.ai/rdma.shared": "1"}}}]},
    }
