"""Read what the checks need from the cluster into a :class:`ClusterSnapshot`.

Requests, in order: API discovery for every group/version the stack registers objects in (a
missing CRD stops here, before anything else is judged); the node list, once, in pages of 500;
then, concurrently, each pool node's kubelet ``/configz`` and each registered object.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any, Iterable, Optional
from urllib.parse import quote, urlencode

from gpu_fabric.verify.api import ClusterUnavailable, Response, Transport, refuse_credential
from gpu_fabric.verify.checks import node_name, pool_members
from gpu_fabric.verify.expectations import ObjectRef, StackExpectations
from gpu_fabric.verify.snapshot import ClusterSnapshot, KubeletConfigResult

NODE_PAGE_SIZE = 500
DEFAULT_WORKERS = 32

# Which installation provides an API group, for the one-line reason when it is missing.
API_PROVIDERS = {
    "kueue.x-k8s.io": "Kueue",
    "worker.gpustack.ai": "the GPUStack operator",
}


class MissingApi(ClusterUnavailable):
    """The cluster does not serve a group/version or kind the stack registers (a CRD is not installed)."""


def _ok(path: str, response: Response, what: str) -> Any:
    refuse_credential(path, response)
    if response.status != 200:
        raise ClusterUnavailable(f"{what}: GET {path} answered {response.reason()}")
    return response.json(f"{what} (GET {path})")


def discovery_path(group: str, version: str) -> str:
    """``/api/v1`` for the core group, ``/apis/<group>/<version>`` otherwise."""
    return f"/api/{version}" if not group else f"/apis/{group}/{version}"


def discover(transport: Transport, refs: Iterable[ObjectRef]) -> dict[tuple[str, str], tuple[str, bool]]:
    """``(apiVersion, kind)`` -> ``(plural, namespaced)`` for every kind of ``refs``; raise :class:`MissingApi`."""
    wanted: dict[str, set[str]] = {}
    for ref in refs:
        wanted.setdefault(ref.api_version, set()).add(ref.kind)
    resources: dict[tuple[str, str], tuple[str, bool]] = {}
    for api_version in sorted(wanted):
        group, _, version = api_version.rpartition("/")
        path = discovery_path(group, version)
        response = transport.get(path)
        kinds = ", ".join(sorted(wanted[api_version]))
        if response.status == 404:
            provider = API_PROVIDERS.get(group)
            hint = f" (is {provider} installed?)" if provider else ""
            raise MissingApi(f"the cluster does not serve {api_version}{hint}, so the stack's {kinds} cannot exist")
        listing = _ok(path, response, f"discovery of {api_version}")
        served = {item.get("kind"): item for item in listing.get("resources") or []
                  if isinstance(item, dict) and "/" not in str(item.get("name", ""))}
        for kind in sorted(wanted[api_version]):
            item = served.get(kind)
            if item is None:
                provider = API_PROVIDERS.get(group)
                hint = f" (is {provider}'s CRD for {kind} installed?)" if provider else ""
                raise MissingApi(f"the cluster serves {api_version} but not kind {kind}{hint}")
            resources[(api_version, kind)] = (str(item["name"]), bool(item.get("namespaced")))
    return resources


def object_path(ref: ObjectRef, plural: str, namespaced: bool) -> str:
    """The API path of one object."""
    group, version = ref.group_version
    # A namespaced object registered without a namespace lands in "default" (Pulumi and kubectl alike).
    scope = f"/namespaces/{quote(ref.namespace or 'default')}" if namespaced else ""
    return f"{discovery_path(group, version)}{scope}/{plural}/{quote(ref.name)}"


def list_nodes(transport: Transport) -> list[dict[str, Any]]:
    """Every node, following ``continue`` tokens (one logical list, pages of :data:`NODE_PAGE_SIZE`)."""
    nodes: list[dict[str, Any]] = []
    token = ""
    while True:
        query = {"limit": NODE_PAGE_SIZE, **({"continue": token} if token else {})}
        path = f"/api/v1/nodes?{urlencode(query)}"
        page = _ok(path, transport.get(path), "listing nodes")
        items = page.get("items") if isinstance(page, dict) else None
        if not isinstance(items, list):
            raise ClusterUnavailable(f"listing nodes: GET {path} returned no item list")
        nodes.extend(item for item in items if isinstance(item, dict))
        token = str((page.get("metadata") or {}).get("continue") or "")
        if not token:
            return nodes


def configz_path(node: str) -> str:
    """The kubelet's running configuration through the API server's node proxy."""
    return f"/api/v1/nodes/{quote(node)}/proxy/configz"


def read_kubelet_config(transport: Transport, node: str) -> KubeletConfigResult:
    """The node's ``kubeletconfig`` from ``/configz``; an unreachable kubelet is that node's failure."""
    path = configz_path(node)
    response = transport.get(path)
    refuse_credential(path, response)
    if response.status != 200:
        return KubeletConfigResult(None, f"GET {path} answered {response.reason()}")
    try:
        document = response.json("configz")
    except ClusterUnavailable:
        return KubeletConfigResult(None, f"GET {path} did not answer JSON")
    config = document.get("kubeletconfig") if isinstance(document, dict) else None
    if not isinstance(config, dict):
        return KubeletConfigResult(None, f"GET {path} has no kubeletconfig section")
    return KubeletConfigResult(config)


def read_object(transport: Transport, ref: ObjectRef, plural: str, namespaced: bool) -> Optional[dict[str, Any]]:
    """The object, or ``None`` when the API answers 404."""
    path = object_path(ref, plural, namespaced)
    response = transport.get(path)
    if response.status == 404:
        return None
    found = _ok(path, response, f"reading {ref.label()}")
    return found if isinstance(found, dict) else None


def collect(transport: Transport, expectations: StackExpectations, workers: int = DEFAULT_WORKERS) -> ClusterSnapshot:
    """Read discovery, nodes, the pool nodes' kubelet configs and the stack's objects."""
    refs = [expectation.ref for expectation in expectations.objects]
    resources = discover(transport, refs)
    nodes = list_nodes(transport)
    members = pool_members(expectations.pools, nodes)
    names = sorted({node_name(node) for listed in members.values() for node in listed})
    snapshot = ClusterSnapshot(nodes=nodes)
    with ThreadPoolExecutor(max_workers=max(1, workers)) as executor:
        configs = executor.map(lambda name: read_kubelet_config(transport, name), names)
        objects = executor.map(lambda ref: read_object(transport, ref, *resources[(ref.api_version, ref.kind)]), refs)
        snapshot.kubelet = dict(zip(names, configs))
        snapshot.objects = dict(zip(refs, objects))
    return snapshot
