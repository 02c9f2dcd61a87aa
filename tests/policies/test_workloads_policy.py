"""The ``fabric-workloads`` policies (mandatory and advisory): the workload rules of ``lint --stack`` over a stack's workload resources."""

import copy

from gpu_fabric.policies.workloads import fabric_workloads, fabric_workloads_advisory

from support.policy_helpers import assert_metadata, assert_no_violations, assert_violation, component, k8s
from support.stack_configs import stack_values


# vLLM NixlConnector guide, "Example: using LIBFABRIC backend", JSON and dotted forms.
VLLM_LIBFABRIC_JSON = ["vllm", "serve", "<MODEL>", "--kv-transfer-config",
                       '{"kv_connector":"NixlConnector","kv_role":"kv_both","kv_connector_extra_config":{"backends":["LIBFABRIC"]}}']


# vLLM NixlConnector guide: set the side-channel host when peers are on other machines (here: the pod's IP).
SIDE_CHANNEL_HOST = {"name": "VLLM_NIXL_SIDE_CHANNEL_HOST", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}


def _pod_spec(**changes) -> dict:
    spec = {"nodeSelector": {"node.kubernetes.io/instance-type": "p5.48xlarge"},
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.12.0", "command": list(VLLM_LIBFABRIC_JSON),
                            "env": [dict(SIDE_CHANNEL_HOST)],
                            "resources": {"limits": {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32",
                                                     "hugepages-2Mi": "5120Mi", "memory": "512Gi"}}}]}
    spec.update(changes)
    return spec


def _wrap(kind: str, pod_spec: dict) -> dict:
    template = {"metadata": {"labels": {"app": "x"}}, "spec": pod_spec}
    spec: dict
    if kind == "Pod":
        spec = pod_spec
    elif kind == "CronJob":
        spec = {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": template}}}
    elif kind == "LeaderWorkerSet":
        spec = {"leaderWorkerTemplate": {"size": 2, "workerTemplate": template}}
    else:
        spec = {"template": template}
    api = {"Pod": "v1", "Job": "batch/v1", "CronJob": "batch/v1", "LeaderWorkerSet": "leaderworkerset.x-k8s.io/v1"}
    return {"apiVersion": api.get(kind, "apps/v1"), "kind": kind, "metadata": {"name": "w", "namespace": "team-a"}, "spec": spec}


def _with_container(**changes) -> dict:
    """The right pod spec with its container changed; ``env`` entries come first, the side-channel host stays."""
    spec = _pod_spec()
    container = spec["containers"][0]
    env = [*changes.pop("env", []), *container["env"]]
    container.update(changes, env=env)
    return spec


def _kueue_pools():
    return [component("gpu-fabric:index:KueuePool", {"pool": pool}, pool["name"]) for pool in stack_values("aws-efa")["pools"]]


def test_the_pack_applies_the_same_rules_to_workload_resources():
    assert_metadata(fabric_workloads)
    assert_metadata(fabric_workloads_advisory, enforcement=fabric_workloads_advisory.enforcement_level)
    wrong = _pod_spec()
    del wrong["containers"][0]["resources"]["limits"]["hugepages-2Mi"]
    deployment = k8s(_wrap("Deployment", wrong))
    assert_violation(fabric_workloads, [*_kueue_pools(), deployment], "without hugepages-2Mi", urn=deployment.urn)
    assert_no_violations(fabric_workloads, [*_kueue_pools(), k8s(_wrap("Deployment", _pod_spec()))])
    dead = k8s(_wrap("StatefulSet", _with_container(env=[{"name": "NCCL_IB_HCA", "value": "x"}])))
    assert_violation(fabric_workloads_advisory, [*_kueue_pools(), dead], "does not configure NixlConnector")
    assert_no_violations(fabric_workloads, [*_kueue_pools(), copy.deepcopy(dead)])
