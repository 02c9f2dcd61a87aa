"""The GPUStack operator's KVCachePool admission rules (``pkg/worker/webhooks/worker/kv_cache_pool.go``).

At the commit :data:`gpu_fabric.gpustack.operator_pin.SOURCE_FILES` names, with the operator's messages.
"""

from __future__ import annotations

from typing import Any, Mapping

from gpu_fabric.config.shapes import list_at, mapping_at
from gpu_fabric.gpustack.admission.common import object_findings, spec_of
from gpu_fabric.findings import Finding, ObjectRef, Severity
from gpu_fabric.gpustack.rules import KV_CACHE_POOL_ADMISSION


def _refuse(path: str, message: str) -> Finding:
    """A refusal of the webhook at ``path`` of the object (named by the caller)."""
    return Finding.of(KV_CACHE_POOL_ADMISSION, path, message)



def pool_findings(pool: Mapping[str, Any]) -> list[Finding]:
    """``validateKVCachePoolSpec``: exactly one backend, each named."""
    spec = mapping_at(pool, "spec")
    backends = list_at(spec, "backends")
    found: list[Finding] = []
    if len(backends) != 1:
        found.append(_refuse("spec.backends", f"exactly 1 backend is supported, and {len(backends)} were given: quota is "
                                       "enforced by one master's per-tenant ledger, and no master can account for "
                                       "bytes held in another"))
    for i, name in enumerate(backends):
        if not name:
            found.append(_refuse(f"spec.backends[{i}]", "a backend is named by the name of a KVCacheBackend"))
    return object_findings("KVCachePool", pool, found, None)


def pool_backend_findings(pool_name: str, pool: Mapping[str, Any], backends: Mapping[str, Mapping[str, Any]]) -> list[Finding]:
    """``validateKVCachePoolBackend``: admitted, with a warning, when the pool's backend runs without multi-tenancy.

    ``backends`` are the KVCacheBackends the webhook's reader would find, by name.
    """
    names = spec_of(pool).get("backends") or []
    leader = (((spec_of(backends.get(str(names[0]))) if names else {}).get("connection") or {})
              .get("managed") or {}).get("leader")
    if not (isinstance(leader, Mapping) and leader.get("multiTenancy") is False):
        return []
    return [Finding.of(KV_CACHE_POOL_ADMISSION, "spec.backends[0]",
                       f'backend "{names[0]}" runs without multi-tenancy: it holds no tenant ledger, so '
                       "no per-tenant quota is in force — every write falls into the default tenant, "
                       "bounded only by the store's global capacity — and the master serves exactly one "
                       "reuse domain", severity=Severity.WARNING, subject=ObjectRef("KVCachePool", pool_name))]
