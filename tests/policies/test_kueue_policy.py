"""The Kueue policies: fabric workloads name a LocalQueue of the stack; ClusterQueues cover the fabric keys (advisory)."""

from __future__ import annotations

import pytest
from pulumi_policy import EnforcementLevel

from gpu_fabric.kube.kueue import cluster_queue, local_queue
from gpu_fabric.gpustack.naming import local_queue_name
from gpu_fabric.policies import (
    fabric_pool_topology_alignment,
    kueue_fabric_keys_covered,
    kueue_fabric_workload_queue,
    model_deployment_unprivileged_roles,
)
from gpu_fabric.config.pool import PoolSpec

from support.policy_helpers import assert_metadata, assert_no_violations, assert_violation, k8s

H100 = "gpustack--nvidia-h100-linux-amd64"


ADVISORY = {fabric_pool_topology_alignment, kueue_fabric_keys_covered, model_deployment_unprivileged_roles}


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


@pytest.mark.parametrize("policy", [kueue_fabric_workload_queue, kueue_fabric_keys_covered], ids=lambda p: p.name)
def test_metadata_and_example_stacks_pass(policy, seed, aws_efa):
    assert_metadata(policy, EnforcementLevel.ADVISORY if policy in ADVISORY else EnforcementLevel.MANDATORY)
    assert_no_violations(policy, seed)
    assert_no_violations(policy, aws_efa)


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
