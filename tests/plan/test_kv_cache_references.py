"""``kv-cache-unreferenced``: a KVCacheBackend, KVCachePool or KVCachePoolBinding nothing references is a warning
naming it; an unused backend's fabric member groups are named with the pools they still run on."""

from __future__ import annotations

import copy

from gpu_fabric.findings import Severity
from gpu_fabric.gpustack.objects import gpustack_manifests
from gpu_fabric.kube.pool_view import pool_view_of
from gpu_fabric.plan.kv_cache_references import KV_CACHE_UNREFERENCED, unreferenced_findings
from gpu_fabric.validation.configuration import load_config
from support.stack_configs import stack_values


def analysed(values: dict):
    config = load_config(values)
    return unreferenced_findings(gpustack_manifests(config), [pool_view_of(pool) for pool in config.pools])


def test_the_aws_efa_chain_is_fully_referenced():
    assert analysed(copy.deepcopy(stack_values("aws-efa"))) == []


def test_a_chain_cut_at_the_deployment_warns_about_the_binding_only():
    values = copy.deepcopy(stack_values("aws-efa"))
    del values["modelDeployments"][0]["kvCache"]
    finding, = analysed(values)
    assert finding.rule is KV_CACHE_UNREFERENCED and finding.severity is Severity.WARNING and not finding.is_error
    assert str(finding.subject) == "KVCachePoolBinding team-a/shared" and str(finding.path) == "metadata.name"
    assert "no ModelDeployment in namespace team-a names KVCachePoolBinding shared" in finding.message
    # Its backend now serves nobody: the EFA members on the CPU pool are tied to no deployment's pool.
    assert "members[0] on pool gpustack--generic-linux-amd64 (EFA)" in finding.message


def test_an_unbound_pool_and_an_unlisted_backend_are_each_named():
    values = copy.deepcopy(stack_values("aws-efa"))
    values["kvCachePools"].append({**values["kvCachePools"][0], "name": "spare-pool"})
    values["kvCacheBackends"].append({**values["kvCacheBackends"][0], "name": "spare-backend"})
    findings = {str(f.subject): f.message for f in analysed(values)}
    assert set(findings) == {"KVCachePool spare-pool", "KVCacheBackend spare-backend"}
    assert "no KVCachePoolBinding names KVCachePool spare-pool" in findings["KVCachePool spare-pool"]
    # spare-pool lists mooncake-efa, which the used chain still serves: its members are not stranded.
    assert "members[" not in findings["KVCachePool spare-pool"]
    backend = findings["KVCacheBackend spare-backend"]
    assert "no KVCachePool lists KVCacheBackend spare-backend" in backend
    # Its EFA members still run on the CPU pool, which no cache leg ties to a deployment's pool any more.
    assert "members[0] on pool gpustack--generic-linux-amd64 (EFA)" in backend
    assert "fabric domain's checks" in backend


def test_a_tcp_backend_nobody_uses_is_named_without_a_member_pool():
    values = copy.deepcopy(stack_values("aws-efa"))
    spare = copy.deepcopy(values["kvCacheBackends"][0])
    spare.update(name="tcp-spare", transport={"protocol": "TCP"})
    del spare["connection"]["managed"]["members"][0]["fabricInterfaceCount"]
    values["kvCacheBackends"].append(spare)
    finding, = analysed(values)
    assert "tcp-spare" in finding.message and "members[0]" not in finding.message


def test_malformed_shapes_are_read_leniently():
    backend = {"apiVersion": "worker.gpustack.ai/v1alpha1", "kind": "KVCacheBackend", "metadata": {"name": "b"},
               "spec": {"transport": "EFA", "connection": {"managed": {"members": ["x", {"transport": 3}]}}}}
    pool = {"apiVersion": "worker.gpustack.ai/v1alpha1", "kind": "KVCachePool", "metadata": {"name": "p"},
            "spec": {"backends": "b"}}
    found = unreferenced_findings([backend, pool])
    assert {str(f.subject) for f in found} == {"KVCacheBackend b", "KVCachePool p"}
