"""The GPUStack operator's KVCachePoolBinding admission rules (``pkg/worker/webhooks/worker/kv_cache_pool_binding.go``).

At the commit :data:`gpu_fabric.gpustack.operator_pin.SOURCE_FILES` names, with the operator's messages.
"""

from __future__ import annotations

from typing import Any, Mapping

from gpu_fabric.config.shapes import mapping_at
from gpu_fabric.config.syntax import is_dns1123_label
from gpu_fabric.gpustack.admission.common import int_or, object_findings
from gpu_fabric.gpustack.findings import Finding


def binding_findings(binding: Mapping[str, Any], namespace: str) -> list[Finding]:
    """``validateKVCachePoolBindingSpec`` / ``validateKVCachePoolBindingDomain``: the Binding's own shape."""
    spec = mapping_at(binding, "spec")
    found: list[tuple[str, str]] = []
    if not ((spec.get("poolRef") or {}).get("name") if isinstance(spec.get("poolRef"), Mapping) else None):
        found.append(("spec.poolRef.name", "a Binding grants exactly one pool, named here"))
    domain = mapping_at(spec, "domain")
    name = domain.get("name")
    if name:
        why = is_dns1123_label(str(name))
        if why:
            found.append(("spec.domain.name", "a reuse domain is named like a Kubernetes object, so nobody learns a "
                                              "second naming rule, and it travels to the storage layer as the tenant "
                                              f"id verbatim: {'; '.join(why)}"))
    if int_or(domain.get("blockSize"), 0) <= 0:
        found.append(("spec.domain.blockSize", "must be greater than 0: it is the number of tokens one cache block holds"))
    dtype = domain.get("dtype")
    if not dtype:
        found.append(("spec.domain.dtype", "the element type the cached tensors carry, in the engine's own spelling"))
    elif str(dtype) != str(dtype).lower():
        found.append(("spec.domain.dtype", "must be lowercase: engines spell it that way, and this value is compared "
                                           "rather than interpreted, so two spellings of one type would read as two types"))
    return object_findings("KVCachePoolBinding", binding, found, namespace)
