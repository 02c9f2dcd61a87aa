"""KV-cache objects that nothing references: a warning naming each, and what an unused backend's members still do.

The operator's references run one way (research/gpustack-operator.md, 2.2-2.4; gpustack/gpustack-operator
``docs/modules/kv-cache/backend.md``): a ModelDeployment's ``spec.kvCache.poolRef`` names a
KVCachePoolBinding of its namespace, the binding's ``spec.poolRef`` a KVCachePool, the pool's
``spec.backends`` a KVCacheBackend. An object at the end of no such reference is admitted and runs, yet
serves nobody: usually a name typed differently in two places, or a leftover. An unused managed backend
still runs its member DaemonSets, and a fabric member group's pool is then joined to no deployment's pool
by a cache leg (:func:`gpu_fabric.plan.efa_domains.derivation.transfer_legs`): it silently leaves the
EFA domain, so the Availability Zone, VPC and shared security group checks of the domain no longer cover
it. Each is a warning (the stack is valid), printed by ``render`` and ``check`` and reported by the
advisory ``kv-cache-unreferenced`` policy; :func:`unreferenced_findings` is the one function.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from gpu_fabric.config.shapes import as_list, as_mapping, known_str
from gpu_fabric.findings import Enforcement, Finding, ObjectRef, Rule, Severity
from gpu_fabric.gpustack.transfer_legs import FABRICS, effective_protocol
from gpu_fabric.kube.pool_view import PoolView

POLICY = "kv-cache-unreferenced"

KV_CACHE_UNREFERENCED = Rule(
    "kv-cache-unreferenced",
    "a KVCacheBackend no KVCachePool lists, a KVCachePool no binding names, or a binding no ModelDeployment names "
    "is a warning naming it",
    "gpustack/gpustack-operator: docs/modules/kv-cache/backend.md", policy=POLICY, enforcement=Enforcement.ADVISORY)

KV_TRANSFER_WITHOUT_ROUTER = Rule(
    "kv-transfer-without-router",
    "a ModelDeployment whose kvTransfer.protocol is RDMA or EFA has a router (without one the direct transfer leg is "
    "never rendered) is a warning naming the router",
    "gpustack/gpustack-operator: pkg/worker/webhooks/worker/model_deployment.go (modelDeploymentUsesKVTransfer)",
    policy=POLICY, enforcement=Enforcement.ADVISORY)

GPUSTACK_GROUP = "worker.gpustack.ai"
DEFAULT_NAMESPACE = "default"


def _of_kind(manifests: Iterable[Mapping[str, Any]], kind: str) -> list[Mapping[str, Any]]:
    return [m for m in manifests if m.get("kind") == kind
            and str(m.get("apiVersion") or "").split("/", 1)[0] == GPUSTACK_GROUP]


def _name(manifest: Mapping[str, Any]) -> str | None:
    return known_str(as_mapping(manifest.get("metadata")).get("name"))


def _namespace(manifest: Mapping[str, Any]) -> str:
    return known_str(as_mapping(manifest.get("metadata")).get("namespace")) or DEFAULT_NAMESPACE


def _spec(manifest: Mapping[str, Any]) -> Mapping[str, Any]:
    return as_mapping(manifest.get("spec"))


def _warning(subject: ObjectRef, message: str) -> Finding:
    return Finding.of(KV_CACHE_UNREFERENCED, "metadata.name", message, severity=Severity.WARNING, subject=subject)


def _member_pools(backend: Mapping[str, Any], pools: Sequence[PoolView]) -> list[str]:
    """``members[i] on pool P (EFA)`` for each fabric member group of a managed backend and each pool it selects."""
    spec = _spec(backend)
    members = as_list(as_mapping(as_mapping(spec.get("connection")).get("managed")).get("members"))
    backend_protocol = known_str(as_mapping(spec.get("transport")).get("protocol"))
    found: list[str] = []
    for index, member in enumerate(members):
        # A group's own transport wins, else the backend's (transfer_legs.member_group_protocols, read leniently:
        # a malformed shape is the CRD schema's finding, not a crash here).
        protocol = effective_protocol(known_str(as_mapping(as_mapping(member).get("transport")).get("protocol"))
                                      or backend_protocol)
        if protocol not in FABRICS:
            continue
        selector = {str(k): v for k, v in as_mapping(as_mapping(member).get("nodeSelector")).items()}
        found.extend(f"members[{index}] on pool {pool.name} ({protocol.upper()})"
                     for pool in pools if pool.fabric == protocol and pool.matches_selector(selector))
    return found


def _leaves_domain(members: Sequence[str]) -> str:
    if not members:
        return ""
    return (f"; fabric member groups still run ({', '.join(members)}) but carry no deployment's KV cache: no cache leg "
            "ties them to a deployment's pool, so the fabric domain's checks (one Availability Zone and VPC, a shared "
            "security group) do not cover them")


def router_findings(manifests: Sequence[Mapping[str, Any]]) -> list[Finding]:
    """A warning for every ModelDeployment asking for an RDMA or EFA KV transfer (``kvTransfer.protocol``) without a
    ``router``: the operator renders the direct prefill-to-decode leg only for a routed pair
    (``modelDeploymentUsesKVTransfer``, :func:`gpu_fabric.gpustack.transfer_legs.uses_kv_transfer`), so the setting
    does nothing -- the KV cache is not moved over the fabric and nothing says so."""
    found = []
    for deployment in _of_kind(manifests, "ModelDeployment"):
        spec = _spec(deployment)
        protocol = as_mapping(spec.get("kvTransfer")).get("protocol")
        if effective_protocol(protocol) in FABRICS and not isinstance(spec.get("router"), Mapping):
            found.append(Finding.of(KV_TRANSFER_WITHOUT_ROUTER, "spec.kvTransfer.protocol", (
                f"kvTransfer.protocol {protocol} without a router: the operator renders the direct prefill-to-decode "
                "leg only for a routed Prefill/Decode pair, so no KV cache moves over the fabric; add spec.router "
                "(for example name: llm-d-router) or drop kvTransfer"), severity=Severity.WARNING,
                subject=ObjectRef("ModelDeployment", _name(deployment) or "<unnamed>", _namespace(deployment))))
    return found


def unreferenced_findings(manifests: Sequence[Mapping[str, Any]], pools: Sequence[PoolView] = ()) -> list[Finding]:
    """A warning for every KVCacheBackend, KVCachePool and KVCachePoolBinding among ``manifests`` that no object
    of ``manifests`` references. Each names the fabric member groups (and their pools) of the backends that it
    leaves serving no deployment at all: a backend reached through another, used, chain is not named."""
    backends, cache_pools = _of_kind(manifests, "KVCacheBackend"), _of_kind(manifests, "KVCachePool")
    bindings, deployments = _of_kind(manifests, "KVCachePoolBinding"), _of_kind(manifests, "ModelDeployment")
    pool_backends = {_name(pool): {known_str(b) for b in as_list(_spec(pool).get("backends"))} - {None}
                     for pool in cache_pools}
    binding_pool = {(_namespace(b), _name(b)): known_str(as_mapping(_spec(b).get("poolRef")).get("name")) for b in bindings}
    used = {(_namespace(d), known_str(as_mapping(as_mapping(_spec(d).get("kvCache")).get("poolRef")).get("name")))
            for d in deployments}
    listed = set().union(*pool_backends.values())
    bound = set(binding_pool.values())
    served = set().union(*(pool_backends.get(pool, set()) for key, pool in binding_pool.items() if key in used))
    members = {name: _member_pools(backend, pools) for backend in backends if (name := _name(backend))}

    def stranded(names: Iterable[str | None]) -> list[str]:
        return [group for name in sorted(n for n in names if n and n not in served) for group in members.get(name, [])]

    found: list[Finding] = []
    for name in members:
        if name not in listed:
            found.append(_warning(ObjectRef("KVCacheBackend", name), (
                f"no KVCachePool lists KVCacheBackend {name} in spec.backends, so no deployment reads this cache"
                f"{_leaves_domain(stranded([name]))}; add a KVCachePool over it (and a binding a ModelDeployment's "
                "kvCache names), or remove it")))
    for name, listed_backends in pool_backends.items():
        if name and name not in bound:
            found.append(_warning(ObjectRef("KVCachePool", name), (
                f"no KVCachePoolBinding names KVCachePool {name} in spec.poolRef, so no namespace can use it"
                f"{_leaves_domain(stranded(listed_backends))}; add a binding, or remove the pool")))
    for (namespace, name), pool in binding_pool.items():
        if name and (namespace, name) not in used:
            found.append(_warning(ObjectRef("KVCachePoolBinding", name, namespace), (
                f"no ModelDeployment in namespace {namespace} names KVCachePoolBinding {name} in spec.kvCache.poolRef, "
                f"so its quota serves nobody{_leaves_domain(stranded(pool_backends.get(pool, set())))}; name it from a "
                "deployment, or remove it")))
    return found
