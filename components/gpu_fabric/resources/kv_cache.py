"""``KVCache``: Mooncake KV-cache backends, pools and bindings (GPUStack custom resources)."""

from typing import Any, Mapping, Optional, Sequence, TypedDict

import pulumi
from pydantic import ValidationError

from gpu_fabric.gpustack.objects import kv_cache_backend, kv_cache_pool, kv_cache_pool_binding
from gpu_fabric.config.constants import DEFAULT_API_VERSION
from gpu_fabric.resources.kv_cache_args import KVCacheBackendArgs, KVCachePoolArgs, KVCachePoolBindingArgs
from gpu_fabric.resources.inputs import ANY, DeferredInputs, InvalidInputError
from gpu_fabric.resources.model_deployment import operator_profile
from gpu_fabric.resources.kubernetes_objects import (
    child_options, metadata_name, namespace_dependency, qualified_name, register_manifest)
from gpu_fabric.resources.outputs import register_declared_outputs
from gpu_fabric.config.base import ConfigError, Problem, SpecModel
from gpu_fabric.config.kv_cache import KVCacheBackendSpec, KVCachePoolBindingSpec, KVCachePoolSpec
from gpu_fabric.gpustack.admission_pipeline import analyze

DEFERRABLE = (
    ("backends", ANY, "image"),
    ("backends", ANY, "connection", "managed", "members", ANY, "image"),
    ("backends", ANY, "connection", "external", "endpoints", ANY, "address"),
)
"""Argument paths that may be ``Output``s: images and external endpoint addresses."""

PLAIN_REASONS = {
    "backends": "each backend is a resource; its transport is checked against the fabric before registration",
    "pools": "each pool is a resource",
    "bindings": "each binding is a resource",
    "api_version": "it decides the objects' apiVersion",
    "gpustack_operator": "it decides the schema and admission rules the objects are held to",
}


class KVCacheArgs(TypedDict, total=False):
    """Inputs of :class:`KVCache`. Lists are plain: each item is a resource, checked before registration."""

    backends: Sequence[KVCacheBackendArgs]
    """KVCacheBackends (cluster-scoped)."""
    pools: Sequence[KVCachePoolArgs]
    """KVCachePools (cluster-scoped)."""
    bindings: Sequence[KVCachePoolBindingArgs]
    """KVCachePoolBindings (namespaced)."""
    api_version: str
    """``v1alpha1`` (default: the version the operator's CRDs serve) or ``v1`` (its aggregated API)."""
    gpustack_operator: str
    """The GPUStack operator release the cluster runs (``0.10.0`` by default, ``0.9.2``, ``0.11.2``, any patch
    of those lines, or ``main@5cfac77b``): it decides the schema and admission rules (docs/gpustack-api-version.md)."""


class KVCacheObjects:
    """The validated manifests of a ``KVCacheArgs``, in the order the operator's webhooks resolve them."""

    def __init__(self, args: Mapping[str, Any]) -> None:
        version = args.get("api_version") or DEFAULT_API_VERSION
        backends = _parse(args, "backends", KVCacheBackendSpec)
        pools = _parse(args, "pools", KVCachePoolSpec)
        bindings = _parse(args, "bindings", KVCachePoolBindingSpec)
        self.backends = [kv_cache_backend(b, version) for b in backends]
        self.pools = [kv_cache_pool(p, version) for p in pools]
        self.bindings = [kv_cache_pool_binding(b, version) for b in bindings]
        self.operator = operator_profile(args, "KVCache")
        refused = analyze([*self.backends, *self.pools, *self.bindings], operator=self.operator).errors
        if refused:
            raise InvalidInputError((f.moved(f"{f.subject}.{f.path}").about(None) for f in refused), "KVCache")


class KVCache(pulumi.ComponentResource):
    """The KV-cache objects, registered in the order the operator's webhooks resolve them."""

    backend_names: pulumi.Output[list[str]]
    """Names of the KVCacheBackends, from the registered objects."""
    pool_names: pulumi.Output[list[str]]
    """Names of the KVCachePools, from the registered objects."""
    binding_names: pulumi.Output[list[str]]
    """``namespace/name`` of the KVCachePoolBindings, from the registered objects."""

    def __init__(self, name: str, args: KVCacheArgs, opts: Optional[pulumi.ResourceOptions] = None, *,
                 namespace_resources: Optional[Mapping[str, pulumi.Resource]] = None) -> None:
        """Register the backends, pools and bindings.

        Args:
        namespace_resources: Namespace name -> the resource registering it (``GpuFabric`` passes its tenant
            namespaces): each namespaced child depends on its own, so it is created after its namespace.
        """
        inputs = DeferredInputs("KVCache", args, KVCacheArgs, DEFERRABLE, PLAIN_REASONS)
        objects = inputs.validate(KVCacheObjects)
        inputs.check_on_resolve(KVCacheObjects)
        # The operator version rides on the component's inputs: the policy pack reads it at preview.
        registered_inputs = {"gpustackOperator": objects.operator.as_written}
        super().__init__("gpu-fabric:index:KVCache", name, registered_inputs, opts)

        self.backends: dict[str, pulumi.CustomResource] = {
            m["metadata"]["name"]: register_manifest(f"{name}-backend-{m['metadata']['name']}", inputs.restore(m),
                                                     child_options(self, namespace_dependency(m, namespace_resources)))
            for m in objects.backends
        }
        """Backend name -> the KVCacheBackend resource."""
        self.pools: dict[str, pulumi.CustomResource] = {}
        """Pool name -> the KVCachePool resource (it waits for its backend)."""
        for manifest in objects.pools:
            backend = self.backends.get(manifest["spec"]["backends"][0])
            self.pools[manifest["metadata"]["name"]] = register_manifest(
                f"{name}-pool-{manifest['metadata']['name']}", manifest,
                child_options(self, [*([backend] if backend else []), *namespace_dependency(manifest, namespace_resources)]))
        self.bindings: dict[tuple[str, str], pulumi.CustomResource] = {}
        """``(namespace, name)`` -> the KVCachePoolBinding resource (it waits for its pool)."""
        for manifest in objects.bindings:
            meta = manifest["metadata"]
            pool = self.pools.get(manifest["spec"]["poolRef"]["name"])
            self.bindings[(meta["namespace"], meta["name"])] = register_manifest(
                f"{name}-binding-{meta['namespace']}-{meta['name']}", manifest,
                child_options(self, [*([pool] if pool else []), *namespace_dependency(manifest, namespace_resources)]))

        self._binding_pool = {(m["metadata"]["namespace"], m["metadata"]["name"]): m["spec"]["poolRef"]["name"]
                              for m in objects.bindings}
        self._pool_backend = {m["metadata"]["name"]: m["spec"]["backends"][0] for m in objects.pools}
        self.backend_names = pulumi.Output.all(*(metadata_name(r) for r in self.backends.values()))
        self.pool_names = pulumi.Output.all(*(metadata_name(r) for r in self.pools.values()))
        self.binding_names = pulumi.Output.all(*(qualified_name(key[0], r) for key, r in self.bindings.items()))
        register_declared_outputs(self, registered_inputs)

    def objects_for_binding(self, namespace: str, name: str) -> list[pulumi.CustomResource]:
        """The binding ``namespace/name``, its pool and the pool's backend: what a deployment using it waits for."""
        binding = self.bindings.get((namespace, name))
        pool_name = self._binding_pool.get((namespace, name), "")
        backend_name = self._pool_backend.get(pool_name, "")
        chain = [binding, self.pools.get(pool_name), self.backends.get(backend_name)]
        return [resource for resource in chain if resource is not None]


def _parse(args: Mapping[str, Any], key: str, model: type[SpecModel]) -> list[Any]:
    items: list[Any] = []
    problems: list[Problem] = []
    for i, item in enumerate(args.get(key) or []):
        try:
            items.append(model.model_validate(item))
        except ValidationError as error:
            problems.extend(ConfigError.from_validation_error(error, (key, i)).problems)
    if problems:
        raise InvalidInputError(problems, "KVCache")
    return items
