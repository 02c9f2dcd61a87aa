"""The kubelet agent's cluster side: its environment contract with the builder, the restart Lease, /configz over TLS."""

from __future__ import annotations

import datetime
import http.server
import json
import os
import ssl
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from gpu_fabric.kube.topology_agent import topology_agent_for_pool
from gpu_fabric.kubelet_agent import cluster
from gpu_fabric.kubelet_agent import __main__ as entry
from gpu_fabric.kubelet_agent import errors
from gpu_fabric.kubelet_agent import host_files
from gpu_fabric.kubelet_agent import kubelet
from gpu_fabric.kubelet_agent import reconcile
from gpu_fabric.config.topology import KubeletTopology
from gpu_fabric.kube.topology import kubelet_config_fields

POOL = {"name": "gpustack--nvidia-a10g-linux-amd64", "labels": {"feature.gpustack.ai/rdma.capable": "true"},
        "topology": {"policy": "single-numa-node"}}


def test_the_program_reads_exactly_what_the_daemonset_provides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    manifests = {m["kind"]: m for m in topology_agent_for_pool({"pool": POOL})}
    pod = manifests["DaemonSet"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    settings = tmp_path / "settings"
    settings.mkdir()
    for key, text in manifests["ConfigMap"]["data"].items():  # the ConfigMap volume
        (settings / key).write_text(text)
    downward = {"spec.nodeName": "node-a", "status.hostIP": "10.0.0.7", "metadata.namespace": "kube-system"}
    for variable in container["env"]:
        value = variable.get("value") or downward[variable["valueFrom"]["fieldRef"]["fieldPath"]]
        monkeypatch.setenv(variable["name"], value)
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    # The settings are read where their ConfigMap view is mounted ...
    assert os.environ["SETTINGS_DIR"] == mounts["settings"]
    assert {item["key"] for item in volumes["settings"]["configMap"]["items"]} == {"50-gpu-fabric-topology.conf", "topology.json"}
    # ... and the program is every module of gpu_fabric.kubelet_agent, importable as `kubelet_agent`.
    assert container["command"] == ["python3", "-m", "kubelet_agent", "run"]
    assert mounts["agent"] == f"{os.environ['PYTHONPATH']}/kubelet_agent"
    package = Path(entry.__file__).parent
    assert {item["key"] for item in volumes["agent"]["configMap"]["items"]} == {f.name for f in package.glob("*.py")}
    for item in volumes["agent"]["configMap"]["items"]:
        assert manifests["ConfigMap"]["data"][item["key"]] == (package / item["key"]).read_text()
    monkeypatch.setenv("SETTINGS_DIR", str(settings))  # this test's stand-in for that volume

    agent = entry.agent_from_environment()

    assert agent.desired == kubelet_config_fields(KubeletTopology.model_validate({"policy": "single-numa-node"}))
    assert agent.dropin == manifests["ConfigMap"]["data"]["50-gpu-fabric-topology.conf"].encode()
    assert agent.files.mounted == ("/etc/kubernetes", "/var/lib/kubelet")
    # Each host directory the script may touch is mounted at HOST_ROOT + its own path.
    host_mounts = sorted(path.removeprefix(os.environ["HOST_ROOT"]) for name, path in mounts.items() if name.startswith("host-dir"))
    assert host_mounts == list(agent.files.mounted)
    assert agent.services.socket_path == mounts["systemd-socket"]
    assert agent.lease.path.endswith(f"/namespaces/kube-system/leases/{manifests['Lease']['metadata']['name']}")
    assert Path(os.environ["STATUS_FILE"]).parent == Path(mounts["status"])


# -- the restart Lease, against an API that keeps resourceVersions ---------------------------------


class FakeApi:
    """Leases with optimistic concurrency, as the API server keeps them."""

    def __init__(self) -> None:
        self.lease: dict[str, Any] = {"metadata": {"name": "l", "resourceVersion": "1"}, "spec": {}}
        self.interleave: Any = None

    def request(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
        if method == "GET":
            return 200, json.loads(json.dumps(self.lease))
        if self.interleave is not None:
            hook, self.interleave = self.interleave, None
            hook()
        assert body is not None
        if body["metadata"]["resourceVersion"] != self.lease["metadata"]["resourceVersion"]:
            return 409, {}
        body["metadata"]["resourceVersion"] = str(int(self.lease["metadata"]["resourceVersion"]) + 1)
        self.lease = body
        return 200, body


def test_one_node_at_a_time() -> None:
    api = FakeApi()
    node_a = cluster.RestartLease(api, "kube-system", "l", "node-a")
    node_b = cluster.RestartLease(api, "kube-system", "l", "node-b")
    assert node_a.acquire() and not node_b.acquire()
    assert node_b.holder_now() == "node-a"
    assert node_a.acquire()  # renewing is acquiring again
    node_b.release()  # not its lease: no effect
    assert api.lease["spec"]["holderIdentity"] == "node-a"
    node_a.release()
    assert "holderIdentity" not in api.lease["spec"] and node_b.acquire()


def test_a_dead_holder_is_replaced_once_the_lease_expires() -> None:
    api = FakeApi()
    stale = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime(time.time() - 700))
    api.lease["spec"] = {"holderIdentity": "node-gone", "renewTime": stale, "leaseDurationSeconds": 600}
    node_b = cluster.RestartLease(api, "kube-system", "l", "node-b")
    assert node_b.holder_now() == ""
    assert node_b.acquire() and api.lease["spec"]["holderIdentity"] == "node-b"


def test_two_nodes_racing_for_a_free_lease_cannot_both_win() -> None:
    api = FakeApi()
    node_a = cluster.RestartLease(api, "kube-system", "l", "node-a")
    node_b = cluster.RestartLease(api, "kube-system", "l", "node-b")
    # node-b read the free lease, then node-a's update lands before node-b's.
    api.interleave = lambda: node_a.acquire()
    assert not node_b.acquire()
    assert api.lease["spec"]["holderIdentity"] == "node-a"


# -- /configz over TLS ------------------------------------------------------------------------------


def self_signed(directory: Path, name: str) -> tuple[Path, Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
                   .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=1))
                   .not_valid_after(now + datetime.timedelta(days=1))
                   .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                   .sign(key, hashes.SHA256()))
    cert_path, key_path = directory / f"{name}.crt", directory / f"{name}.key"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


@pytest.fixture
def kubelet_server(tmp_path: Path):
    """A kubelet-like HTTPS endpoint with a self-signed serving certificate (kubeadm's default)."""
    cert, key = self_signed(tmp_path, "node-a@1700000000")
    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            seen.append(f"{self.path} {self.headers.get('Authorization')}")
            body = json.dumps({"kubeletconfig": {"topologyManagerPolicy": "restricted"}}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    # A short poll: shutdown() waits for the loop to notice (0.5 s by default).
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield server.server_address[1], cert, seen
    server.shutdown()


def test_configz_trusts_the_kubelets_own_certificate_and_sends_the_token(tmp_path: Path, kubelet_server) -> None:
    port, kubelet_cert, seen = kubelet_server
    cluster_ca, _ = self_signed(tmp_path, "cluster-ca")
    token = tmp_path / "token"
    token.write_text("tok-123\n")
    client = cluster.KubeletConfigz("127.0.0.1", token, cluster_ca, kubelet_cert.read_bytes(), port=port)
    assert client.read() == {"topologyManagerPolicy": "restricted"}
    assert seen == ["/configz Bearer tok-123"]


def test_configz_refuses_a_certificate_it_has_no_reason_to_trust(tmp_path: Path, kubelet_server) -> None:
    port, _, seen = kubelet_server
    cluster_ca, _ = self_signed(tmp_path, "cluster-ca")
    other, _ = self_signed(tmp_path, "someone-else")
    token = tmp_path / "token"
    token.write_text("tok-123")
    client = cluster.KubeletConfigz("127.0.0.1", token, cluster_ca, other.read_bytes(), port=port)
    with pytest.raises(errors.AgentError, match="cannot read the kubelet's /configz"):
        client.read()
    assert seen == []  # the token never left the pod


def test_the_kubelet_certificate_is_found_where_the_kubelet_keeps_it(tmp_path: Path) -> None:
    files = host_files.HostFiles(tmp_path, ("/var/lib/kubelet",))
    (tmp_path / "var/lib/kubelet/pki").mkdir(parents=True)
    (tmp_path / "var/lib/kubelet/pki/kubelet.crt").write_bytes(b"PEM")
    default = kubelet.KubeletProcess(1, "/var/lib/kubelet/config.yaml", None, "/var/lib/kubelet", None, "/var/lib/kubelet/pki")
    assert reconcile.kubelet_certificate(default, files) == b"PEM"
    elsewhere = kubelet.KubeletProcess(1, "/var/lib/kubelet/config.yaml", None, "/var/lib/kubelet", "/etc/pki/k.crt", "/x")
    assert reconcile.kubelet_certificate(elsewhere, files) is None


def test_the_configmap_runs_as_a_standalone_package(tmp_path: Path) -> None:
    import subprocess
    import sys

    manifests = {m["kind"]: m for m in topology_agent_for_pool({"pool": POOL})}
    volumes = {v["name"]: v for v in manifests["DaemonSet"]["spec"]["template"]["spec"]["volumes"]}
    package = tmp_path / "kubelet_agent"
    package.mkdir()
    for item in volumes["agent"]["configMap"]["items"]:
        (package / item["path"]).write_text(manifests["ConfigMap"]["data"][item["key"]])
    environment = {"PYTHONPATH": str(tmp_path), "STATUS_FILE": str(tmp_path / "status.json"), "PATH": os.environ["PATH"]}
    # Nothing of gpu-fabric (or anything outside the standard library) is imported on the node.
    check = ("import sys, kubelet_agent.__main__; "
             "sys.exit(sorted(m for m in sys.modules if m.split('.')[0] in ('gpu_fabric', 'yaml', 'pydantic')) != [])")
    assert subprocess.run([sys.executable, "-c", check], env=environment, cwd=tmp_path).returncode == 0
    probe = subprocess.run([sys.executable, "-m", "kubelet_agent", "probe"], env=environment, cwd=tmp_path,
                           capture_output=True, text=True)
    assert (probe.returncode, probe.stdout.strip()) == (1, "no status yet")
    (tmp_path / "status.json").write_text(json.dumps({"ready": True, "message": "the kubelet reports the pool's topology settings"}))
    probe = subprocess.run([sys.executable, "-m", "kubelet_agent", "probe"], env=environment, cwd=tmp_path,
                           capture_output=True, text=True)
    assert probe.returncode == 0 and "reports the pool's topology" in probe.stdout
