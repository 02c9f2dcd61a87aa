"""The GPUStack operator's validating webhooks, one module per kind as the operator lays them out.

Each module mirrors one file of ``pkg/worker/webhooks/worker/`` in the operator (commits in
:data:`gpu_fabric.gpustack.operator_pin.SOURCE_FILES`) with the operator's messages, and holds the
rules answered from the object alone:

* :mod:`~gpu_fabric.gpustack.admission.model_deployment` (``model_deployment.go``) and
  :mod:`~gpu_fabric.gpustack.admission.model_deployment_elastic` (``model_deployment_elastic.go``);
* :mod:`~gpu_fabric.gpustack.admission.kv_cache_backend` (``kv_cache_backend.go``);
* :mod:`~gpu_fabric.gpustack.admission.kv_cache_pool` (``kv_cache_pool.go``);
* :mod:`~gpu_fabric.gpustack.admission.kv_cache_pool_binding` (``kv_cache_pool_binding.go``).

:func:`object_admission_findings` picks the webhook by kind.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from gpu_fabric.gpustack.admission.kv_cache_backend import backend_findings
from gpu_fabric.gpustack.admission.kv_cache_pool import pool_findings
from gpu_fabric.gpustack.admission.kv_cache_pool_binding import binding_findings
from gpu_fabric.gpustack.admission.model_deployment import deployment_findings
from gpu_fabric.findings import Finding

EngineRule = Callable[[Mapping[str, Any]], list[Finding]]


def object_admission_findings(obj: Mapping[str, Any], namespace: str,
                              engine_rule: EngineRule | None = None) -> list[Finding]:
    """What the kind's webhook refuses (or warns about) in ``obj`` alone; ``[]`` for a kind without a webhook.

    ``namespace`` is where a namespaced object lands (cluster-scoped kinds ignore it); ``engine_rule``
    is the operator line's ModelDeployment engine rule (see
    :func:`~gpu_fabric.gpustack.admission.model_deployment.deployment_findings`).
    """
    kind = obj.get("kind")
    if kind == "ModelDeployment":
        return deployment_findings(obj, namespace, engine_rule)
    if kind == "KVCachePoolBinding":
        return binding_findings(obj, namespace)
    if kind == "KVCachePool":
        return pool_findings(obj)
    if kind == "KVCacheBackend":
        return backend_findings(obj)
    return []
