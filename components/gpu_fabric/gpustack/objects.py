"""GPUStack ``worker.gpustack.ai`` manifests as plain dicts.

ModelDeployment and KVCachePoolBinding are namespaced; KVCacheBackend and KVCachePool are
cluster-scoped. ``v1alpha1`` (the default) is the one version the operator's CRDs serve and its
admission webhooks are registered for; ``v1`` is the operator worker's aggregated API (what its docs
use), selectable where that API is Available and carries the kinds you write
(docs/gpustack-api-version.md).
"""

from __future__ import annotations

from typing import Any

from gpu_fabric.config.constants import DEFAULT_API_VERSION
from gpu_fabric.config.fabric import FabricConfig
from gpu_fabric.config.kv_cache import KVCacheBackendSpec, KVCachePoolBindingSpec, KVCachePoolSpec
from gpu_fabric.config.serving import ModelDeploymentSpec
from gpu_fabric.gpustack.operator_pin import API_GROUP

MANAGED_BY = {"app.kubernetes.io/managed-by": "gpu-fabric"}


def _manifest(kind: str, api_version: str, name: str, spec: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    metadata["labels"] = dict(MANAGED_BY)
    return {"apiVersion": f"{API_GROUP}/{api_version}", "kind": kind, "metadata": metadata, "spec": spec}


def model_deployment(deployment: ModelDeploymentSpec, api_version: str = DEFAULT_API_VERSION) -> dict[str, Any]:
    """A ModelDeployment manifest."""
    return _manifest("ModelDeployment", api_version, deployment.name, deployment.spec_fields(), deployment.namespace)


def kv_cache_backend(backend: KVCacheBackendSpec, api_version: str = DEFAULT_API_VERSION) -> dict[str, Any]:
    """A cluster-scoped KVCacheBackend manifest."""
    return _manifest("KVCacheBackend", api_version, backend.name, backend.spec_fields())


def kv_cache_pool(pool: KVCachePoolSpec, api_version: str = DEFAULT_API_VERSION) -> dict[str, Any]:
    """A cluster-scoped KVCachePool manifest."""
    return _manifest("KVCachePool", api_version, pool.name, pool.spec_fields())


def kv_cache_pool_binding(binding: KVCachePoolBindingSpec, api_version: str = DEFAULT_API_VERSION) -> dict[str, Any]:
    """A namespaced KVCachePoolBinding manifest."""
    return _manifest("KVCachePoolBinding", api_version, binding.name, binding.spec_fields(), binding.namespace)


def gpustack_manifests(config: FabricConfig) -> list[dict[str, Any]]:
    """Every GPUStack object of a configuration, backends first (the order they must exist in)."""
    version = config.gpustack_api_version
    return [
        *(kv_cache_backend(b, version) for b in config.kv_cache_backends),
        *(kv_cache_pool(p, version) for p in config.kv_cache_pools),
        *(kv_cache_pool_binding(b, version) for b in config.kv_cache_pool_bindings),
        *(model_deployment(d, version) for d in config.model_deployments),
    ]
