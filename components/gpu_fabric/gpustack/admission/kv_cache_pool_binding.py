"""The GPUStack operator's KVCachePoolBinding admission rules (``pkg/worker/webhooks/worker/kv_cache_pool_binding.go``).

At the commit :data:`gpu_fabric.gpustack.operator_pin.SOURCE_FILES` names, with the operator's messages.
"""

from __future__ import annotations

from typing import Any, Mapping

from gpu_fabric.config.quantity import QuantityError, parse_quantity
from gpu_fabric.config.shapes import mapping_at
from gpu_fabric.config.syntax import is_dns1123_label
from gpu_fabric.gpustack.admission.common import duplicate_value, int_or, object_findings, spec_of
from gpu_fabric.findings import Finding, ObjectRef, Severity
from gpu_fabric.gpustack.rules import KV_CACHE_POOL_BINDING_ADMISSION


def _refuse(path: str, message: str) -> Finding:
    """A refusal of the webhook at ``path`` of the object (named by the caller)."""
    return Finding.of(KV_CACHE_POOL_BINDING_ADMISSION, path, message)



def binding_findings(binding: Mapping[str, Any], namespace: str) -> list[Finding]:
    """``validateKVCachePoolBindingSpec`` / ``validateKVCachePoolBindingDomain``: the Binding's own shape."""
    spec = mapping_at(binding, "spec")
    found: list[Finding] = []
    if not ((spec.get("poolRef") or {}).get("name") if isinstance(spec.get("poolRef"), Mapping) else None):
        found.append(_refuse("spec.poolRef.name", "a Binding grants exactly one pool, named here"))
    domain = mapping_at(spec, "domain")
    name = domain.get("name")
    if name:
        why = is_dns1123_label(str(name))
        if why:
            found.append(_refuse("spec.domain.name", "a reuse domain is named like a Kubernetes object, so nobody learns a "
                                              "second naming rule, and it travels to the storage layer as the tenant "
                                              f"id verbatim: {'; '.join(why)}"))
    if int_or(domain.get("blockSize"), 0) <= 0:
        found.append(_refuse("spec.domain.blockSize", "must be greater than 0: it is the number of tokens one cache block holds"))
    dtype = domain.get("dtype")
    if not dtype:
        found.append(_refuse("spec.domain.dtype", "the element type the cached tensors carry, in the engine's own spelling"))
    elif str(dtype) != str(dtype).lower():
        found.append(_refuse("spec.domain.dtype", "must be lowercase: engines spell it that way, and this value is compared "
                                           "rather than interpreted, so two spellings of one type would read as two types"))
    return object_findings("KVCachePoolBinding", binding, found, namespace)


def bindings_among(bindings: Mapping[tuple[str, str], Mapping[str, Any]], pools: Mapping[str, Mapping[str, Any]]
                   ) -> tuple[list[Finding], list[tuple[str, str]]]:
    """``validateKVCachePoolBindingDomainIsUnclaimed`` and ``validateKVCachePoolBindingCeilingFitsPool`` among
    the given objects: the findings, and the ``(namespace, name)`` of every Binding they refuse.

    ``bindings`` are keyed by ``(namespace, name)`` in the order they are admitted (earlier Bindings hold
    their domains first); ``pools`` by name. A pool that is not among them is not judged here.
    """
    found: list[Finding] = []
    refused: list[tuple[str, str]] = []
    claimed: list[tuple[str, str, str]] = []  # (domain, namespace, name) in input order
    for (namespace, name), binding in bindings.items():
        subject = ObjectRef("KVCachePoolBinding", name, namespace)
        spec = spec_of(binding)
        pool_name = str((spec.get("poolRef") or {}).get("name", ""))
        bound_pool = pools.get(pool_name)
        domain = str((spec.get("domain") or {}).get("name") or "default")  # the schema default
        own_backends = list(spec_of(bound_pool).get("backends") or []) if bound_pool is not None else []
        for other_domain, other_namespace, other_name in claimed:
            if other_domain != domain:
                continue
            other_pool = pools.get(str((spec_of(bindings[(other_namespace, other_name)]).get("poolRef") or {}).get("name", "")))
            other_backends = list(spec_of(other_pool).get("backends") or []) if other_pool is not None else []
            shared = [backend for backend in own_backends if backend in other_backends]
            if shared:
                found.append(_refuse("spec.domain.name", duplicate_value(
                    f'reuse domain "{domain}" is already registered by {other_namespace}/{other_name}, and backend '
                    f"{' and '.join(shared)} serves both Bindings' pools: the two would share cache and overwrite each "
                    "other's ceiling in that master's single ledger entry for this tenant. Two masters hold two "
                    "ledgers, so a Binding claiming this domain against a pool on another backend is fine — register "
                    'a domain no other Binding on THIS master holds. That does not rescue a needed "default" domain '
                    "here: the engines that forward no tenant write under that literal name, so a Binding "
                    "registering anything else registers a domain those Pods never write to")).about(subject))
                refused.append((namespace, name))
                break
        claimed.append((domain, namespace, name))
        ceiling, total = (spec.get("quota") or {}).get("ceiling"), (spec_of(bound_pool).get("quota") or {}).get("total")
        if bound_pool is None or ceiling is None or total is None:
            continue
        try:
            exceeds = parse_quantity(ceiling) > parse_quantity(total)
        except QuantityError:
            continue
        if exceeds:
            found.append(_refuse("spec.quota.ceiling",
                                 f"must not exceed the pool's own ceiling of {total}: a request larger than "
                                 f'everything pool "{pool_name}" declares can never be granted, whatever the other '
                                 "Bindings ask for").about(subject))
            refused.append((namespace, name))
    return found, refused
