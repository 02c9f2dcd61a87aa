"""``kueue-fabric-workload-queue`` on one workload manifest: the walkthrough's Step 1 Pod and its careless copies.

The walkthrough ("Step 1: Request RDMA") writes ``kueue.x-k8s.io/queue-name: gpustack-fnv64-<hash>``; the
rule refuses the placeholder, a hand-typed name, a missing label and a LocalQueue of another namespace,
and says which LocalQueue (per pool) to write instead.
"""

from __future__ import annotations

import copy

import pytest

from gpu_fabric.gpustack.naming import local_queue_name
from gpu_fabric.kube.kueue import local_queue, local_queue_table
from gpu_fabric.kube.kueue_rules import (
    KUEUE_FABRIC_WORKLOAD_QUEUE,
    DeclaredQueue,
    declared_local_queues,
    workload_queue_findings,
)
from support.workloads import QUEUE_LABEL, step1_pod

A10G = "gpustack--nvidia-a10g-linux-amd64"
SEED_QUEUE = local_queue_name(A10G)
LABEL = QUEUE_LABEL
DECLARED = declared_local_queues([local_queue(A10G, "team-a")])


def test_declared_queues_carry_their_pool():
    assert DECLARED == [DeclaredQueue("team-a", SEED_QUEUE, A10G)]


def test_the_pods_label_naming_the_stacks_local_queue_passes():
    assert workload_queue_findings(step1_pod(SEED_QUEUE), DECLARED) == []


@pytest.mark.parametrize("case, pod, fragment", [
    ("placeholder", step1_pod(), "'gpustack-fnv64-<hash>' is the documentation's placeholder"),
    ("hand-typed", step1_pod("gpustack-fnv64-0123456789abcdef"), "'gpustack-fnv64-0123456789abcdef' names no LocalQueue "
                                                                   "of the stack in namespace team-a"),
    ("no-label", step1_pod(None), "requests device.gpustack.ai/rdma.shared but has no kueue.x-k8s.io/queue-name label"),
    ("wrong-namespace", step1_pod(SEED_QUEUE, "team-b"), "names no LocalQueue of the stack in namespace team-b "
                                                          "(it is declared in team-a"),
])
def test_the_careless_step1_pods_are_refused_at_the_label(case, pod, fragment):
    findings = workload_queue_findings(pod, DECLARED)
    assert len(findings) == 1, findings
    finding = findings[0]
    assert finding.rule is KUEUE_FABRIC_WORKLOAD_QUEUE and finding.is_error and finding.exit_code == 1
    assert str(finding.path) == f"metadata.labels[{LABEL}]"
    assert str(finding.subject) == f"Pod {pod['metadata']['namespace']}/trainer-0"
    assert fragment in finding.message
    if pod["metadata"]["namespace"] == "team-a":  # in the stack's namespace: the label to write, with its pool
        assert f"write {LABEL}: {SEED_QUEUE} (pool {A10G})" in finding.message


def test_a_namespace_without_local_queues_says_where_they_are():
    finding, = workload_queue_findings(step1_pod(None, "team-b"), DECLARED)
    assert "the stack declares no LocalQueue in namespace team-b (LocalQueues in: team-a" in finding.message


def test_a_cron_jobs_label_is_read_on_its_pod_template():
    pod = step1_pod(None)
    cron = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "nightly", "namespace": "team-a"},
            "spec": {"schedule": "@daily", "jobTemplate": {"spec": {"template": {
                "metadata": {"labels": {LABEL: "typo"}}, "spec": copy.deepcopy(pod["spec"])}}}}}
    finding, = workload_queue_findings(cron, DECLARED)
    assert str(finding.path) == f"spec.jobTemplate.spec.template.metadata.labels[{LABEL}]"
    cron["spec"]["jobTemplate"]["spec"]["template"]["metadata"]["labels"][LABEL] = SEED_QUEUE
    assert workload_queue_findings(cron, DECLARED) == []


def test_objects_without_fabric_requests_and_daemonsets_are_not_queued():
    pod = step1_pod(None)
    pod["spec"]["containers"][0]["resources"]["limits"] = {"nvidia.com/gpu": "1"}
    assert workload_queue_findings(pod, DECLARED) == []
    daemonset = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "members", "namespace": "team-a"},
                 "spec": {"template": {"spec": step1_pod(None)["spec"]}}}
    assert workload_queue_findings(daemonset, DECLARED) == []


def test_the_local_queue_table_lists_each_namespace_per_pool_sorted():
    h100 = "gpustack--nvidia-h100-linux-amd64"
    manifests = [local_queue(h100, "team-b"), local_queue(A10G, "team-b"), local_queue(A10G, "team-a")]
    assert local_queue_table(manifests) == [
        f"local queues (label pods with {LABEL}: <local-queue>):",
        f"  namespace  pool                               local-queue",
        f"  team-a     {A10G}  {SEED_QUEUE}",
        f"  team-b     {A10G}  {SEED_QUEUE}",
        f"  team-b     {h100}  {local_queue_name(h100)}",
    ]
    assert local_queue_table([step1_pod()]) == []
