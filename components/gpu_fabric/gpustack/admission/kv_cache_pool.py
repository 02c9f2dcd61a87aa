"""The GPUStack operator's KVCachePool admission rules (``pkg/worker/webhooks/worker/kv_cache_pool.go``).

At the commit :data:`gpu_fabric.gpustack.operator_pin.SOURCE_FILES` names, with the operator's messages.
"""

from __future__ import annotations

from typing import Any, Mapping

from gpu_fabric.config.shapes import list_at, mapping_at
from gpu_fabric.gpustack.admission.common import object_findings
from gpu_fabric.gpustack.findings import Finding


def pool_findings(pool: Mapping[str, Any]) -> list[Finding]:
    """``validateKVCachePoolSpec``: exactly one backend, each named."""
    spec = mapping_at(pool, "spec")
    backends = list_at(spec, "backends")
    found: list[tuple[str, str]] = []
    if len(backends) != 1:
        found.append(("spec.backends", f"exactly 1 backend is supported, and {len(backends)} were given: quota is "
                                       "enforced by one master's per-tenant ledger, and no master can account for "
                                       "bytes held in another"))
    for i, name in enumerate(backends):
        if not name:
            found.append((f"spec.backends[{i}]", "a backend is named by the name of a KVCacheBackend"))
    return object_findings("KVCachePool", pool, found, None)
