"""A small fake Kubernetes API server on 127.0.0.1 for ``gpu-fabric verify`` tests and benchmarks.

It answers what ``verify`` reads, the way the API server does: discovery (``/api/v1``,
``/apis/<group>/<version>``), ``/api/v1/nodes`` with ``limit``/``continue`` paging, each node's
``/proxy/configz``, and ``GET`` of single objects (404 with a ``Status`` body when absent). Requests
without the bearer token get 401. The official client reaches it through a generated kubeconfig.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Optional
from urllib.parse import parse_qs, urlsplit

import yaml

TOKEN = "fake-cluster-token"

CORE_RESOURCES = [
    {"name": "nodes", "kind": "Node", "namespaced": False},
    {"name": "nodes/proxy", "kind": "NodeProxyOptions", "namespaced": False},
    {"name": "namespaces", "kind": "Namespace", "namespaced": False},
    {"name": "configmaps", "kind": "ConfigMap", "namespaced": True},
    {"name": "serviceaccounts", "kind": "ServiceAccount", "namespaced": True},
]
APPS_RESOURCES = [{"name": "daemonsets", "kind": "DaemonSet", "namespaced": True},
                  {"name": "daemonsets/status", "kind": "DaemonSet", "namespaced": True}]


def node(name: str, labels: dict[str, str], allocatable: dict[str, str], ready: bool = True,
         taints: Optional[list[dict[str, str]]] = None) -> dict[str, Any]:
    """A Node object as the API lists it."""
    return {
        "apiVersion": "v1", "kind": "Node",
        "spec": {"taints": list(taints)} if taints else {},
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                                   "kubernetes.io/arch": "amd64", **labels}},
        "status": {
            # What a kubelet writes when it registers the node; a Node without addresses has no kubelet.
            "addresses": [{"type": "InternalIP", "address": "10.0.0.10"}, {"type": "Hostname", "address": name}],
            "capacity": dict(allocatable), "allocatable": dict(allocatable),
            "conditions": [{"type": "MemoryPressure", "status": "False"},
                           {"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def kubelet_config(policy: str = "restricted", scope: str = "container", cpu: str = "none", **extra: Any) -> dict[str, Any]:
    """A ``kubeletconfig`` section as ``/configz`` returns it (with the usual unrelated keys)."""
    return {"enableServer": True, "staticPodPath": "/etc/kubernetes/manifests", "cgroupDriver": "systemd",
            "topologyManagerPolicy": policy, "topologyManagerScope": scope, "cpuManagerPolicy": cpu,
            "cpuManagerReconcilePeriod": "10s", "maxPods": 110, **extra}


@dataclass
class FakeCluster:
    """The state the fake server serves; mutate it between runs to break things."""

    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    configz: dict[str, Any] = field(default_factory=dict)
    """Node name -> kubeletconfig dict, or an int HTTP status the node proxy answers with."""
    apis: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: {"v1": list(CORE_RESOURCES),
                                                                           "apps/v1": list(APPS_RESOURCES)})
    """apiVersion -> discovery resource list; remove a key to 'uninstall' a CRD group."""
    objects: dict[str, dict[str, Any]] = field(default_factory=dict)
    """API path -> object."""
    lists: dict[str, list[Any]] = field(default_factory=dict)
    """Collection path -> its items, listed with ``limit``/``continue`` paging (ResourceClaims, ResourceSlices)."""
    token: str = TOKEN
    configz_delay: float = 0.0
    """Seconds each configz answer takes (the API server proxies to the kubelet)."""
    requests: list[str] = field(default_factory=list)
    trickle: set[str] = field(default_factory=set)
    """API paths (without query) whose answer is sent one byte a second, headers first."""
    trickle_headers: bool = False
    """Trickle the status line and headers too (the client has not even seen a status)."""
    loop_continue: Optional[str] = None
    """Answer every node-list page with this ``metadata.continue`` token (a server that loops)."""
    huge: dict[str, int] = field(default_factory=dict)
    """API path -> bytes of endless JSON-looking body to stream (no Content-Length)."""
    raw: dict[str, bytes] = field(default_factory=dict)
    """API path -> a body sent verbatim with status 200 (whatever a lying server sends)."""
    stopping: threading.Event = field(default_factory=threading.Event)

    def add_node(self, item: dict[str, Any], config: Any) -> None:
        """A node and what its kubelet's configz answers."""
        name = item["metadata"]["name"]
        self.nodes[name] = item
        self.configz[name] = config

    def serve(self, api_version: str, kind: str, plural: str, namespaced: bool = True) -> None:
        """Make the API serve ``kind`` in ``api_version`` (install its CRD)."""
        resources = self.apis.setdefault(api_version, [])
        if not any(r["kind"] == kind and r["name"] == plural for r in resources):
            resources.append({"name": plural, "kind": kind, "namespaced": namespaced})

    def path_of(self, api_version: str, plural: str, namespace: str, name: str) -> str:
        """The API path of an object."""
        root = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
        return f"{root}{f'/namespaces/{namespace}' if namespace else ''}/{plural}/{name}"

    def add_object(self, api_version: str, kind: str, plural: str, namespace: str, name: str,
                   body: Optional[dict[str, Any]] = None) -> str:
        """Create an object (and serve its kind); return its path."""
        self.serve(api_version, kind, plural, namespaced=bool(namespace))
        path = self.path_of(api_version, plural, namespace, name)
        metadata = {"name": name, **({"namespace": namespace} if namespace else {})}
        self.objects[path] = {"apiVersion": api_version, "kind": kind, "metadata": metadata, **(body or {})}
        return path


    def add_listed(self, api_version: str, kind: str, plural: str, namespace: str, item: Any) -> str:
        """Add ``item`` to the collection of ``kind`` (served) in ``namespace`` (``""``: cluster-scoped); return its path."""
        self.serve(api_version, kind, plural, namespaced=bool(namespace))
        root = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
        path = f"{root}{f'/namespaces/{namespace}' if namespace else ''}/{plural}"
        self.lists.setdefault(path, []).append(item)
        return path


class _Handler(BaseHTTPRequestHandler):
    cluster: FakeCluster

    def log_message(self, *args: Any) -> None:  # keep test output clean
        pass

    def _send(self, status: int, document: Any) -> None:
        body = document if isinstance(document, bytes) else json.dumps(document).encode()
        if urlsplit(self.path).path.rstrip("/") in self.cluster.trickle:
            self._trickle(status, body)
            return
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _trickle(self, status: int, body: bytes) -> None:
        head = (f"HTTP/1.1 {status} OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
                .encode())
        if not self.cluster.trickle_headers:
            self.wfile.write(head)
            self.wfile.flush()
            head = b""
        try:
            for byte in head + body:
                if self.cluster.stopping.wait(1.0):
                    return
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
        except OSError:
            return  # the client gave up and closed the connection

    def _stream(self, size: int) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        try:
            self.wfile.write(b'{"kind": "NodeList", "items": [')
            chunk = b'{"metadata": {"name": "n"}},' * 1000
            sent = 0
            while sent < size and not self.cluster.stopping.is_set():
                self.wfile.write(chunk)
                sent += len(chunk)
        except OSError:
            return
        self.close_connection = True

    def _status(self, code: int, reason: str, message: str) -> None:
        self._send(code, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message,
                          "reason": reason, "code": code})

    def do_GET(self) -> None:  # noqa: N802 - http.server's method name
        cluster = self.cluster
        cluster.requests.append(self.path)
        if self.headers.get("Authorization") != f"Bearer {cluster.token}":
            self._status(401, "Unauthorized", "Unauthorized")
            return
        parts = urlsplit(self.path)
        path = parts.path.rstrip("/")
        segments = path.strip("/").split("/")
        if path in cluster.huge:
            self._stream(cluster.huge[path])
        elif path in cluster.raw:
            self._send(200, cluster.raw[path])
        elif path == "/api/v1/nodes":
            self._list_nodes(parse_qs(parts.query))
        elif path in cluster.lists:
            self._list(cluster.lists[path], parse_qs(parts.query))
        elif len(segments) == 6 and segments[:3] == ["api", "v1", "nodes"] and segments[4:] == ["proxy", "configz"]:
            self._configz(segments[3])
        elif path == "/api/v1" or (len(segments) == 3 and segments[0] == "apis"):
            api_version = "v1" if path == "/api/v1" else f"{segments[1]}/{segments[2]}"
            resources = cluster.apis.get(api_version)
            if resources is None:
                self._status(404, "NotFound", "the server could not find the requested resource")
            else:
                self._send(200, {"kind": "APIResourceList", "groupVersion": api_version, "resources": resources})
        elif path in cluster.objects:
            self._send(200, cluster.objects[path])
        elif path.startswith("/api/v1/nodes/") and segments[3] in cluster.nodes and len(segments) == 4:
            self._send(200, cluster.nodes[segments[3]])
        else:
            self._status(404, "NotFound", f"{segments[-1]!r} not found")

    def _list_nodes(self, query: dict[str, list[str]]) -> None:
        names = sorted(self.cluster.nodes)
        limit = int(query.get("limit", ["0"])[0] or 0)
        token = query.get("continue", ["0"])[0]
        start = int(token) if token.isdigit() else 0
        end = start + limit if limit else len(names)
        metadata = {"resourceVersion": "1"}
        if end < len(names):
            metadata["continue"] = str(end)
        if self.cluster.loop_continue is not None:
            metadata["continue"] = self.cluster.loop_continue
        self._send(200, {"kind": "NodeList", "apiVersion": "v1", "metadata": metadata,
                         "items": [self.cluster.nodes[name] for name in names[start:end]]})

    def _list(self, items: list[Any], query: dict[str, list[str]]) -> None:
        limit = int(query.get("limit", ["0"])[0] or 0)
        token = query.get("continue", ["0"])[0]
        start = int(token) if token.isdigit() else 0
        end = start + limit if limit else len(items)
        metadata = {"resourceVersion": "1", **({"continue": str(end)} if end < len(items) else {})}
        self._send(200, {"kind": "List", "apiVersion": "v1", "metadata": metadata, "items": items[start:end]})

    def _configz(self, name: str) -> None:
        if name not in self.cluster.nodes:
            self._status(404, "NotFound", f'nodes "{name}" not found')
            return
        if self.cluster.configz_delay:
            time.sleep(self.cluster.configz_delay)
        answer = self.cluster.configz.get(name, 502)
        if isinstance(answer, int):
            self._status(answer, "ServiceUnavailable", f"error trying to reach service: dial tcp {name}:10250: i/o timeout")
        else:
            self._send(200, {"kubeletconfig": answer})


class _Listener(ThreadingHTTPServer):
    # verify asks with up to 32 connections at once. socketserver's listen backlog is 5: the kernel drops
    # the SYNs beyond it and the client sends them again a second later (TCP's initial retransmission
    # timeout), which cost every verify test a second of waiting. An API server's backlog is the kernel's.
    request_queue_size = 128


class FakeApiServer:
    """``with FakeApiServer(cluster) as server:`` serves ``cluster`` on 127.0.0.1; ``server.kubeconfig(dir)``."""

    def __init__(self, cluster: FakeCluster):
        self.cluster = cluster
        handler = type("Handler", (_Handler,), {"cluster": cluster})
        self._server = _Listener(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        # A short poll: shutdown() waits for the loop to notice (0.5 s by default, paid by every test).
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def kubeconfig(self, folder: Path, token: Optional[str] = None, context: str = "fake", userinfo: str = "") -> Path:
        """Write a kubeconfig for this server (bearer ``token``, default the right one); return its path.

        ``userinfo`` (``user:password``) is written into the server URL, as some kubeconfigs carry it.
        """
        server = self.url.replace("://", f"://{userinfo}@") if userinfo else self.url
        document = {
            "apiVersion": "v1", "kind": "Config", "current-context": context,
            "clusters": [{"name": context, "cluster": {"server": server}}],
            "users": [{"name": context, "user": {"token": token or self.cluster.token}}],
            "contexts": [{"name": context, "context": {"cluster": context, "user": context}}],
        }
        path = Path(folder) / f"kubeconfig-{context}"
        path.write_text(yaml.safe_dump(document))
        return path

    def __enter__(self) -> "FakeApiServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.cluster.stopping.set()  # trickling and streaming handlers stop at once
        self._server.shutdown()
        self._server.server_close()
