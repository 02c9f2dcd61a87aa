"""The one place that names the pre-release GPUStack operator commit gpu-fabric mirrors from Go source.

This is the ``main@5cfac77b`` profile's source (:mod:`gpu_fabric.gpustack.profiles.main_5cfac77b`): the
operator's CRD schemas (``gpu_fabric/data/gpustack-operator/``) and its admission webhooks
(:mod:`gpu_fabric.gpustack.admission`, :mod:`gpu_fabric.gpustack.transfer_legs`,
:mod:`gpu_fabric.gpustack.schema`) were read from the commits below.
The released lines' profiles (0.9, 0.10, 0.11) derive from it plus their docs. ``gpu-fabric --version``
lists every profile with its sources.

The operator has no released tag carrying the KV-cache API yet (its docs say no tag up to v0.8.6
contains ``KVCacheBackend``), so the pin is a pre-release commit of ``main``, not a tag.
"""

from __future__ import annotations

OPERATOR_REPOSITORY = "github.com/gpustack/gpustack-operator"

OPERATOR_VERSION = "pre-release after v0.8.6"
"""The operator release line the rules come from (no tag carries this API yet)."""

OPERATOR_COMMIT = "5cfac77b2f83b97cc13c003c256e5f7bda18e0f4"
"""Commit of the admission code mirrored: ``pkg/worker/webhooks/worker/model_deployment.go`` and
``pkg/worker/controllers/worker/model_deployment_fabric.go``."""

SCHEMA_COMMIT = "ad484497dd54eb8296cb6b154d49b6d5cac0ec0b"
"""Commit of ``api/worker/v1alpha1/zz_generated.crds.go`` the bundled CRD schemas were transcribed from
(the ModelDeployment schema adds the PascalCase markers of the same era; see the data SOURCE.md)."""

SOURCE_FILES: dict[str, str] = {
    "pkg/worker/webhooks/worker/model_deployment.go": OPERATOR_COMMIT,
    "pkg/worker/controllers/worker/model_deployment_fabric.go": OPERATOR_COMMIT,
    "pkg/worker/webhooks/worker/model_deployment_elastic.go": "162ac62c51f7c7d371db913283d06156b848e24b",
    "pkg/worker/kvcache/inject/engine.go": "08b7e187de74753e042476fcd23529a692fc4f10",
    "pkg/worker/elasticprofile/profile.go": "93fc9092e9ef7f4859516f7c2b88c5c4e19df848",
    "pkg/worker/webhooks/worker/kv_cache_backend.go": "1779919b52e2dbbe57ebab7abd8cf53d0bb3c2e3",
    "pkg/worker/webhooks/worker/kv_cache_pool.go": "3879479c370a0dcb01a28a42a3d07faf1c6b8fd3",
    "pkg/worker/webhooks/worker/kv_cache_pool_binding.go": "117f57bf066ffe4c47c494f2565ac30549d57acc",
    "api/worker/v1alpha1/zz_generated.crds.go": SCHEMA_COMMIT,
}
"""Every operator file a rule or schema was read from, with the commit it was read at."""

API_GROUP = "worker.gpustack.ai"
# The API versions (served CRD version, aggregated version, default) are in gpu_fabric.config.constants:
# the configuration models choose among them, and they sit below the operator mirror.

