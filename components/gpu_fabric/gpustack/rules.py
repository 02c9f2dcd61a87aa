"""The rules of the GPUStack operator gpu-fabric mirrors: its API server schema and its admission webhooks.

Each is decided before anything is applied, with the operator's own messages, by the one pipeline
:func:`gpu_fabric.gpustack.admission_pipeline.analyze`. A refusal is unusable input (the API server or the
operator would refuse the object; exit 2), and the ``gpustack-transfer-path-consistency`` policy reports
the same refusals at preview. Sources are files of github.com/gpustack/gpustack-operator at the commits
of :data:`gpu_fabric.gpustack.operator_pin.SOURCE_FILES`.
"""

from __future__ import annotations

from gpu_fabric.findings import Enforcement, Refusal, Rule

POLICY = "gpustack-transfer-path-consistency"
OPERATOR = "gpustack/gpustack-operator"


def _operator_rule(rule_id: str, summary: str, path: str) -> Rule:
    return Rule(rule_id, summary, f"{OPERATOR}: {path}", policy=POLICY, refusal=Refusal.INPUT)


GPUSTACK_OPERATOR_VERSION = Rule(
    "gpustack-operator-version", "the stack names one GPUStack operator version gpu-fabric mirrors (one per cluster)",
    "https://github.com/gpustack/gpustack-operator/releases", policy=POLICY, refusal=Refusal.INPUT)
STAND_IN_POLICY = "gpustack-operator-unverified"
GPUSTACK_OPERATOR_STAND_IN = Rule(
    "gpustack-operator-unverified",
    "a GPUStack operator newer than every mirrored line, decided under the newest line's rules on request "
    "(<version>+as-<line>), is a warning on every render, check, lint and preview",
    "docs/gpustack-api-version.md", policy=STAND_IN_POLICY, enforcement=Enforcement.ADVISORY)
GPUSTACK_CRD_SCHEMA = _operator_rule(
    "gpustack-crd-schema", "every worker.gpustack.ai object matches the operator's CRD schema, nothing pruned",
    "api/worker/v1alpha1/zz_generated.crds.go")
MODEL_DEPLOYMENT_ADMISSION = _operator_rule(
    "model-deployment-admission",
    "a ModelDeployment passes the operator's webhook: engine, roles, router, elastic EP, interface requests and their "
    "transfer legs, cache binding transport", "pkg/worker/webhooks/worker/model_deployment.go")
KV_CACHE_BACKEND_ADMISSION = _operator_rule(
    "kv-cache-backend-admission", "a KVCacheBackend passes the operator's webhook (connection, members, images)",
    "pkg/worker/webhooks/worker/kv_cache_backend.go")
KV_CACHE_POOL_ADMISSION = _operator_rule(
    "kv-cache-pool-admission", "a KVCachePool passes the operator's webhook (one backend, named by its KVCacheBackend)",
    "pkg/worker/webhooks/worker/kv_cache_pool.go")
KV_CACHE_POOL_BINDING_ADMISSION = _operator_rule(
    "kv-cache-pool-binding-admission",
    "a KVCachePoolBinding passes the operator's webhook (pool, reuse domain unclaimed, ceiling within the pool's)",
    "pkg/worker/webhooks/worker/kv_cache_pool_binding.go")

GPUSTACK_API_GROUP = Rule(
    "gpustack-api-group", "a worker.gpustack.ai object names its API group in lower case: the API server serves no other "
    "spelling (no matches for kind)", "https://kubernetes.io/docs/reference/using-api/#api-groups",
    policy=POLICY, refusal=Refusal.INPUT)
WHOLE_ACCELERATORS = Rule(
    "whole-accelerators", "a ModelDeployment role's accelerator count is a whole number: it becomes an extended resource "
    "request, which the API server refuses unless it is an integer",
    "kubernetes/kubernetes: pkg/apis/core/validation/validation.go (validateResourceQuantityValue, \"must be an integer\")",
    policy=POLICY, refusal=Refusal.INPUT)

ADMISSION_RULES: dict[str, Rule] = {
    "ModelDeployment": MODEL_DEPLOYMENT_ADMISSION,
    "KVCacheBackend": KV_CACHE_BACKEND_ADMISSION,
    "KVCachePool": KV_CACHE_POOL_ADMISSION,
    "KVCachePoolBinding": KV_CACHE_POOL_BINDING_ADMISSION,
}
"""Kind -> the webhook rule that admits it."""

RULES: tuple[Rule, ...] = (GPUSTACK_OPERATOR_VERSION, GPUSTACK_OPERATOR_STAND_IN, GPUSTACK_CRD_SCHEMA, GPUSTACK_API_GROUP,
                          WHOLE_ACCELERATORS, *ADMISSION_RULES.values())
