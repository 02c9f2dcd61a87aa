"""The agent's calls to the cluster: the restart Lease, the node's cordon, and the kubelet's ``/configz``."""

import calendar
import json
import ssl
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

from .errors import AgentError

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


class ClusterApi:
    """The few API-server calls the agent makes, with its service-account token (urllib only)."""

    def __init__(self, base: str, service_account: Path) -> None:
        self.base = base
        self.service_account = service_account
        self._context: Optional[ssl.SSLContext] = None

    def request(self, method: str, path: str, body: Optional[Dict[str, Any]] = None) -> Tuple[int, Dict[str, Any]]:
        """``(status, decoded JSON)``; HTTP errors are returned, an unreachable API server is an :class:`AgentError`."""
        if self._context is None:
            self._context = ssl.create_default_context(cafile=str(self.service_account / "ca.crt"))
        token = (self.service_account / "token").read_text().strip()  # re-read: projected tokens rotate
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base + path, data=data, method=method, headers={
            "Authorization": f"Bearer {token}", "Accept": "application/json", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, context=self._context, timeout=30) as response:
                return response.status, json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as error:
            return error.code, {}
        except (OSError, ValueError) as error:
            raise AgentError(f"cannot reach the API server at {self.base}: {error}") from None


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())


def _parse_time(text: Optional[str]) -> float:
    if not text:
        return 0.0
    return float(calendar.timegm(time.strptime(text[:19], "%Y-%m-%dT%H:%M:%S")))


class RestartLease:
    """One kubelet restart at a time across the pool: a ``coordination.k8s.io`` Lease the stack creates.

    Taken with optimistic concurrency (the update carries the ``resourceVersion`` it read, so two
    nodes cannot both win), renewed while this node waits for its kubelet, and released only once
    the kubelet reports the new settings. A holder that dies is replaced once the lease expires.
    """

    def __init__(self, api: ClusterApi, namespace: str, name: str, holder: str, duration: int = 600) -> None:
        self.api, self.holder, self.duration = api, holder, duration
        self.path = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}"

    def holder_now(self) -> str:
        """Who holds the lease ("" when free or expired)."""
        status, lease = self.api.request("GET", self.path)
        if status != 200:
            raise AgentError(f"cannot read the restart lease {self.path}: HTTP {status}")
        spec = lease.get("spec") or {}
        expires = _parse_time(spec.get("renewTime")) + int(spec.get("leaseDurationSeconds") or 0)
        return (spec.get("holderIdentity") or "") if expires > time.time() else ""

    def acquire(self) -> bool:
        """Take or renew the lease; ``False`` while another node holds it."""
        status, lease = self.api.request("GET", self.path)
        if status != 200:
            raise AgentError(f"cannot read the restart lease {self.path}: HTTP {status}")
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        expired = _parse_time(spec.get("renewTime")) + int(spec.get("leaseDurationSeconds") or 0) < time.time()
        if holder and holder != self.holder and not expired:
            return False
        now = _now()
        lease["spec"] = {**spec, "holderIdentity": self.holder, "leaseDurationSeconds": self.duration, "renewTime": now,
                         "acquireTime": spec.get("acquireTime") if holder == self.holder else now}
        status, _ = self.api.request("PUT", self.path, lease)
        return status == 200  # 409: another node updated it first

    def release(self) -> None:
        """Give the lease up if this node holds it."""
        status, lease = self.api.request("GET", self.path)
        spec = lease.get("spec") or {}
        if status == 200 and spec.get("holderIdentity") == self.holder:
            lease["spec"] = {key: value for key, value in spec.items() if key not in ("holderIdentity", "acquireTime")}
            self.api.request("PUT", self.path, lease)


def node_is_cordoned(api: ClusterApi, node: str) -> bool:
    """``spec.unschedulable`` of this node (``kubectl cordon``, which ``kubectl drain`` sets first)."""
    status, body = api.request("GET", f"/api/v1/nodes/{node}")
    if status != 200:
        raise AgentError(f"cannot read node {node}: HTTP {status}")
    return bool((body.get("spec") or {}).get("unschedulable"))


class KubeletConfigz:
    """The kubelet's ``/configz`` on this node (``https://<host IP>:10250``), read with the pod's token.

    The kubelet authorises the call as ``nodes/configz`` (fine-grained kubelet authorization, on by
    default from Kubernetes 1.33); older kubelets ask for ``nodes/proxy``, which the stack does not grant.
    The serving certificate is trusted when the cluster CA signed it or when it is this kubelet's own
    self-signed certificate read from the node; the name is not checked, because the call goes to an IP.
    """

    def __init__(self, host_ip: str, token_file: Path, cluster_ca: Path, kubelet_cert: Optional[bytes], port: int = 10250) -> None:
        self.url = f"https://{host_ip}:{port}/configz"
        self.token_file = token_file
        self.context = ssl.create_default_context(cafile=str(cluster_ca))
        if kubelet_cert:
            self.context.load_verify_locations(cadata=kubelet_cert.decode())
        self.context.check_hostname = False

    def read(self) -> Dict[str, Any]:
        """The kubelet's running KubeletConfiguration."""
        request = urllib.request.Request(self.url, headers={"Authorization": f"Bearer {self.token_file.read_text().strip()}"})
        try:
            with urllib.request.urlopen(request, context=self.context, timeout=10) as response:
                return json.loads(response.read()).get("kubeletconfig") or {}
        except (OSError, ValueError) as error:
            raise AgentError(f"cannot read the kubelet's /configz at {self.url}: {error}") from None
