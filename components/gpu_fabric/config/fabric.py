"""The whole stack configuration (``gpu-fabric:*`` keys of ``Pulumi.<stack>.yaml``): its field model.

This module holds the model and its field rules only. :func:`gpu_fabric.validation.configuration.load_config`
is the only way a configuration becomes a :class:`FabricConfig`; it lives above both the spec and the
builders because its cross-object checks read the very manifests the builders make, and the spec
package never imports the builders (tests/project/test_layering.py).
"""

from __future__ import annotations

from typing import Annotated, Literal, Optional

from pydantic import AfterValidator, Field

from gpu_fabric.config.constants import DEFAULT_API_VERSION, DEFAULT_GPUSTACK_OPERATOR
from gpu_fabric.config.base import SpecModel
from gpu_fabric.config.cluster import ClusterSpec, DevicePluginSettings, KubernetesTarget
from gpu_fabric.config.kv_cache import KVCacheBackendSpec, KVCachePoolBindingSpec, KVCachePoolSpec
from gpu_fabric.config.serving import ModelDeploymentSpec
from gpu_fabric.config.pool import PoolSpec, check_namespace

CONFIG_NAMESPACE = "gpu-fabric"
# Every pool gets a LocalQueue in every tenant namespace: sane bounds keep a typo (a generated list
# gone wrong) from planning hundreds of thousands of objects.
MAX_NAMESPACES = 1000
MAX_POOLS = 256

# Configuration keys that may be Pulumi secrets, and the kinds whose ``spec`` is made of them: a
# secret key's objects are registered with a secret ``spec`` (encrypted in the state, "[secret]"
# in a render). Other keys make names, labels and node groups that cannot be secret.
SECRET_CAPABLE_KEYS: dict[str, str] = {
    "modelDeployments": "ModelDeployment",
    "kvCacheBackends": "KVCacheBackend",
    "kvCachePools": "KVCachePool",
    "kvCachePoolBindings": "KVCachePoolBinding",
}


class FabricConfig(SpecModel):
    """Everything one stack declares."""

    queue_owner: Literal["gpustack", "standalone"] = "gpustack"
    """Who owns the Kueue ClusterQueues: the GPUStack operator, or this stack (plain Kueue)."""
    gpustack_api_version: Literal["v1alpha1", "v1"] = DEFAULT_API_VERSION
    """``worker.gpustack.ai`` version to write: ``v1alpha1`` (the version the operator's CRDs serve and its
    webhooks match; the default) or ``v1`` (the operator worker's aggregated API, as in its docs).
    See docs/gpustack-api-version.md."""
    gpustack_operator: str = Field(default=DEFAULT_GPUSTACK_OPERATOR, min_length=1, max_length=64)
    """The GPUStack operator release the cluster runs, as ``helm list`` shows it (``0.9.2``, ``0.10.0``,
    ``0.11.2``, any patch of a known line) or ``main@5cfac77b``; it picks the schema and admission rules
    the stack's objects are held to (docs/gpustack-api-version.md). An unknown version is refused
    when the configuration is loaded."""
    namespaces: list[Annotated[str, AfterValidator(check_namespace)]] = Field(min_length=1, max_length=MAX_NAMESPACES)
    """Tenant namespaces; each gets a LocalQueue per pool. The stack creates each one that is absent, adopts each one
    that exists and never deletes one (docs/stacks.md#tenant-namespaces)."""
    pools: list[PoolSpec] = Field(min_length=1, max_length=MAX_POOLS)
    """Node pools, one per GPUStack InstanceType / Kueue ClusterQueue (at most 256)."""
    kv_cache_backends: list[KVCacheBackendSpec] = Field(default_factory=list)
    """Mooncake KVCacheBackends (cluster-scoped) the stack registers."""
    kv_cache_pools: list[KVCachePoolSpec] = Field(default_factory=list)
    """KVCachePools (cluster-scoped), each over one of the backends."""
    kv_cache_pool_bindings: list[KVCachePoolBindingSpec] = Field(default_factory=list)
    """KVCachePoolBindings (namespaced) that give a namespace a share of a pool."""
    model_deployments: list[ModelDeploymentSpec] = Field(default_factory=list)
    """GPUStack ModelDeployments the stack registers, admitted offline with the operator's rules."""
    device_plugins: DevicePluginSettings = Field(default_factory=DevicePluginSettings)
    """The device plugins that make fabric NICs schedulable (EFA device plugin, GPUStack Device Manager)."""
    kubernetes: Optional[KubernetesTarget] = None
    """Where the Kubernetes objects go: an EKS cluster or a kubeconfig context; the ambient kubeconfig when omitted."""
    cluster: Optional[ClusterSpec] = None
    """Facts about the cluster: its Kubernetes version (required with a ``deviceAllocation: dra`` pool) and
    whether it runs EKS Auto Mode."""

    @property
    def kubernetes_version(self) -> Optional[str]:
        """``cluster.kubernetesVersion``, when stated."""
        return self.cluster.kubernetes_version if self.cluster is not None else None

    def pool(self, name: str) -> Optional[PoolSpec]:
        """The pool named ``name`` (ClusterQueue name), if the stack declares it."""
        return next((pool for pool in self.pools if pool.name == name), None)


def config_keys() -> list[str]:
    """The camelCase keys a stack may set under ``gpu-fabric:``."""
    return [field.alias or name for name, field in FabricConfig.model_fields.items()]
