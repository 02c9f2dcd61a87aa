"""``KVCache``: Mooncake KV-cache backends, pools and bindings (GPUStack custom resources)."""

from __future__ import annotations

from typing import Any, Optional, TypedDict

import pulumi
from pydantic import ValidationError

from gpu_fabric.builders.gpustack import kv_cache_backend, kv_cache_pool, kv_cache_pool_binding
from gpu_fabric.operator_pin import DEFAULT_API_VERSION
from gpu_fabric.resources.kubernetes_objects import child_options, register_manifest
from gpu_fabric.spec.base import ConfigError
from gpu_fabric.spec.gpustack import KVCacheBackendSpec, KVCachePoolBindingSpec, KVCachePoolSpec
from gpu_fabric.transfer import analyze


class KVCacheArgs(TypedDict, total=False):
    """Inputs of :class:`KVCache` (camelCase keys, as in the stack configuration)."""

    backends: list[dict[str, Any]]
    """KVCacheBackends (cluster-scoped), as in ``kvCacheBackends[]``."""
    pools: list[dict[str, Any]]
    """KVCachePools (cluster-scoped), as in ``kvCachePools[]``."""
    bindings: list[dict[str, Any]]
    """KVCachePoolBindings (namespaced), as in ``kvCachePoolBindings[]``."""
    apiVersion: str
    """``v1alpha1`` (default: the version the operator's CRDs serve) or ``v1`` (its aggregated API)."""


class KVCache(pulumi.ComponentResource):
    """The KV-cache objects, registered in the order the operator's webhooks resolve them."""

    backend_names: pulumi.Output[list[str]]
    """Names of the KVCacheBackends."""

    def __init__(self, name: str, args: KVCacheArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        version = args.get("apiVersion") or DEFAULT_API_VERSION
        backends = [kv_cache_backend(b, version) for b in _parse(args, "backends", KVCacheBackendSpec)]
        pools = [kv_cache_pool(p, version) for p in _parse(args, "pools", KVCachePoolSpec)]
        bindings = [kv_cache_pool_binding(b, version) for b in _parse(args, "bindings", KVCachePoolBindingSpec)]
        refused = analyze([*backends, *pools, *bindings]).errors
        if refused:
            raise ConfigError((f"{f.object_ref}.{f.path}", f.message) for f in refused)
        super().__init__("gpu-fabric:index:KVCache", name, {}, opts)

        registered_backends = [
            register_manifest(f"{name}-backend-{m['metadata']['name']}", m, child_options(self)) for m in backends
        ]
        registered_pools = [
            register_manifest(f"{name}-pool-{m['metadata']['name']}", m, child_options(self, registered_backends))
            for m in pools
        ]
        for manifest in bindings:
            meta = manifest["metadata"]
            register_manifest(f"{name}-binding-{meta['namespace']}-{meta['name']}", manifest,
                              child_options(self, registered_pools))

        self.backend_names = pulumi.Output.from_input([m["metadata"]["name"] for m in backends])
        self.register_outputs({"backendNames": self.backend_names})


def _parse(args: KVCacheArgs, key: str, model: type) -> list[Any]:
    items, problems = [], []
    for i, item in enumerate(args.get(key) or []):  # type: ignore[misc]
        try:
            items.append(model.model_validate(item))
        except ValidationError as error:
            problems.extend(ConfigError.from_validation_error(error, (key, i)).problems)
    if problems:
        raise ConfigError(problems)
    return items
