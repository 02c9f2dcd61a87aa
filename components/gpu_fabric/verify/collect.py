"""Read what the checks need from the cluster into a :class:`ClusterSnapshot`.

Requests, in order: API discovery for every group/version the stack registers objects in (a
missing CRD stops here, before anything else is judged); the node list, once, in pages of 500;
then, concurrently, each pool node's kubelet ``/configz`` and each registered object; last, when the
stack renders ResourceClaimTemplates, the ResourceClaims of their namespaces and the ResourceSlices.

Every answer is read through :mod:`gpu_fabric.verify.answers` (a wrong type is a refusal naming
the object, the field and the server), a ``continue`` token the server repeats stops the listing,
and whatever else goes wrong while reading says which request, which object and which server.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterable, Optional
from urllib.parse import quote, urlencode

from gpu_fabric.kube.dra_claims import RESOURCE_API_VERSION
from gpu_fabric.verify import answers
from gpu_fabric.verify.api import ClusterUnavailable, RecordingError, Response, Transport, refuse_credential
from gpu_fabric.verify.checks import node_name, pool_members
from gpu_fabric.verify.expectations import ObjectRef, StackExpectations
from gpu_fabric.verify.snapshot import ClusterSnapshot, KubeletConfigResult

NODE_PAGE_SIZE = 500
DEFAULT_WORKERS = 32

# Which installation provides an API group, for the one-line reason when it is missing.
API_PROVIDERS = {
    "kueue.x-k8s.io": "Kueue",
    "worker.gpustack.ai": "the GPUStack operator",
    "resource.k8s.io": "Kubernetes 1.34 or later (Dynamic Resource Allocation)",
}


class MissingApi(ClusterUnavailable):
    """The cluster does not serve a group/version or kind the stack registers (a CRD is not installed)."""


def server_of(transport: Transport) -> str:
    """The server a transport reads, for messages."""
    return str(getattr(transport, "host", "") or "the API server")


def fetch(transport: Transport, path: str, what: str) -> Response:
    """``GET path``; any failure other than the transport's own reasons names ``what``, the path and the server."""
    try:
        return transport.get(path)
    except (ClusterUnavailable, RecordingError):
        raise
    except Exception as error:  # noqa: BLE001 - a client or plugin failure is a reason to print, not a traceback
        lines = str(error).strip().splitlines()
        raise ClusterUnavailable(f"reading {what} (GET {path}) from {server_of(transport)} failed: "
                                 f"{type(error).__name__}" + (f": {lines[0][:200]}" if lines else "")) from None


def _ok(transport: Transport, path: str, response: Response, what: str) -> Any:
    refuse_credential(path, response)
    if response.status != 200:
        raise ClusterUnavailable(f"{what}: GET {path} from {server_of(transport)} answered {response.reason()}")
    return response.json(f"{what} (GET {path} from {server_of(transport)})")


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
        response = fetch(transport, path, f"discovery of {api_version}")
        kinds = ", ".join(sorted(wanted[api_version]))
        if response.status == 404:
            provider = API_PROVIDERS.get(group)
            hint = f" (is {provider} installed?)" if provider else ""
            raise MissingApi(f"the cluster does not serve {api_version}{hint}, so the stack's {kinds} cannot exist")
        listing = _ok(transport, path, response, f"discovery of {api_version}")
        reader = answers.Reader(server_of(transport), f"GET {path}", f"the resource list of {api_version}")
        served = answers.read_resource_list(reader, listing)
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
    return f"{discovery_path(group, version)}{scope}/{quote(plural)}/{quote(ref.name)}"


def list_nodes(transport: Transport) -> list[dict[str, Any]]:
    """Every node, following ``continue`` tokens (one logical list, pages of :data:`NODE_PAGE_SIZE`).

    A token the server already sent would list the same pages forever: the listing stops with a
    refusal naming the server and the token.
    """
    return _paged(transport, "/api/v1/nodes", "the node list", NODE_PAGE_SIZE, answers.read_node_page, "listing nodes")


def _paged(transport: Transport, path: str, what: str, page_size: int,
           read_page: Callable[[answers.Reader, Any], tuple[list[Any], str]], listing: str = "") -> list[Any]:
    """Every item of the collection at ``path``, page by page (``read_page`` reads one page's items and token);
    ``listing`` names the action in a refusal (default ``listing <what>``)."""
    found: list[Any] = []
    token = ""
    seen: set[str] = set()
    while True:
        query = {"limit": page_size, **({"continue": token} if token else {})}
        page_path = f"{path}?{urlencode(query)}"
        page = _ok(transport, page_path, fetch(transport, page_path, what), listing or f"listing {what}")
        items, token = read_page(answers.Reader(server_of(transport), f"GET {page_path}", what), page)
        found.extend(items)
        if not token:
            return found
        if token in seen:
            raise answers.MalformedAnswer(
                f"{server_of(transport)} sent the continue token {token[:60]!r} a second time, listing {what} "
                f"(after {len(seen) + 1} pages, {len(found)} items): its pages would repeat forever; stopped listing")
        seen.add(token)


LIST_PAGE_SIZE = 500
DRA_KINDS = ("ResourceClaim", "ResourceSlice")


def list_all(transport: Transport, path: str, what: str) -> list[Any]:
    """Every item of the collection at ``path``, following ``continue`` tokens in pages of :data:`LIST_PAGE_SIZE`
    (a token sent twice stops the listing with a refusal, as for nodes)."""
    return _paged(transport, path, what, LIST_PAGE_SIZE, answers.read_list_page)


def dra_refs(namespaces: Iterable[str]) -> list[ObjectRef]:
    """The kinds :func:`read_dra` lists, for discovery (none when the stack renders no claim template)."""
    return [ObjectRef(RESOURCE_API_VERSION, kind, "", "") for kind in DRA_KINDS] if list(namespaces) else []


def read_dra(transport: Transport, namespaces: Iterable[str],
             resources: dict[tuple[str, str], tuple[str, bool]]) -> tuple[list[Any], list[Any]]:
    """The ResourceClaims of ``namespaces`` and, when any is there, every ResourceSlice (``resource.k8s.io/v1``).

    Read-only like every request of verify: ``list`` on ``resourceclaims`` in those namespaces and on the
    cluster-scoped ``resourceslices``. A ResourceSlice carries device names and attributes, no secret, so a
    recording keeps it whole.
    """
    wanted = sorted(set(namespaces))
    if not wanted:
        return [], []
    root = discovery_path(*ObjectRef(RESOURCE_API_VERSION, "", "", "").group_version)
    claims_plural = resources[(RESOURCE_API_VERSION, "ResourceClaim")][0]
    claims: list[Any] = []
    for namespace in wanted:
        claims.extend(list_all(transport, f"{root}/namespaces/{quote(namespace)}/{quote(claims_plural)}",
                               f"the ResourceClaims of namespace {namespace}"))
    if not claims:
        return [], []
    slices = list_all(transport, f"{root}/{quote(resources[(RESOURCE_API_VERSION, 'ResourceSlice')][0])}", "the ResourceSlices")
    return claims, slices


def configz_path(node: str) -> str:
    """The kubelet's running configuration through the API server's node proxy."""
    return f"/api/v1/nodes/{quote(node)}/proxy/configz"


NO_KUBELET = ("not checked: the node lists no address, so no kubelet has registered it and the API "
              "server cannot reach one (a Node object made by hand, or a control plane without kubelets)")


def read_kubelet_config(transport: Transport, node: str, addresses: bool = True) -> KubeletConfigResult:
    """The node's ``kubeletconfig`` from ``/configz``; an unreachable kubelet is that node's failure.

    A node without ``status.addresses`` is not asked: the API server's node proxy needs an address to
    dial (kubernetes/kubernetes pkg/registry/core/node/strategy.go ``ResourceLocation`` answers "no
    preferred addresses found"), and only a kubelet writes one, so there is no kubelet to check.
    """
    if not addresses:
        return KubeletConfigResult(None, NO_KUBELET, checkable=False)
    path = configz_path(node)
    response = fetch(transport, path, f"node {node}'s kubelet configuration")
    refuse_credential(path, response)
    if response.status != 200:
        return KubeletConfigResult(None, f"GET {path} answered {response.reason()}")
    try:
        document = response.json("configz")
    except ClusterUnavailable:
        return KubeletConfigResult(None, f"GET {path} did not answer JSON")
    config = answers.read_kubelet_config(document)
    if config is None:
        return KubeletConfigResult(None, f"GET {path} has no kubeletconfig section")
    return KubeletConfigResult(dict(config))


def read_object(transport: Transport, ref: ObjectRef, plural: str, namespaced: bool,
                rollout: bool = False) -> Optional[dict[str, Any]]:
    """The object, or ``None`` when the API answers 404; ``rollout`` also shape-checks a DaemonSet's status."""
    path = object_path(ref, plural, namespaced)
    response = fetch(transport, path, ref.label())
    if response.status == 404:
        return None
    found = _ok(transport, path, response, f"reading {ref.label()}")
    return answers.read_object(answers.Reader(server_of(transport), f"GET {path}", ref.label()), found, rollout)


def collect(transport: Transport, expectations: StackExpectations, workers: int = DEFAULT_WORKERS) -> ClusterSnapshot:
    """Read discovery, nodes, the pool nodes' kubelet configs and the stack's objects."""
    refs = [expectation.ref for expectation in expectations.objects]
    rollouts = {expectation.ref: expectation.rollout for expectation in expectations.objects}
    resources = discover(transport, [*refs, *dra_refs(expectations.claim_namespaces)])
    nodes = list_nodes(transport)
    members = pool_members(expectations.pools, nodes)
    names = sorted({node_name(node) for listed in members.values() for node in listed})
    addressed = {node_name(node) for node in nodes if (node.get("status") or {}).get("addresses")}
    snapshot = ClusterSnapshot(nodes=nodes)
    with ThreadPoolExecutor(max_workers=max(1, workers)) as executor:
        configs = executor.map(lambda name: read_kubelet_config(transport, name, name in addressed), names)
        objects = executor.map(lambda ref: read_object(transport, ref, *resources[(ref.api_version, ref.kind)],
                                                       rollout=rollouts[ref]), refs)
        snapshot.kubelet = dict(zip(names, configs))
        snapshot.objects = dict(zip(refs, objects))
    snapshot.claims, snapshot.slices = read_dra(transport, expectations.claim_namespaces, resources)
    return snapshot
