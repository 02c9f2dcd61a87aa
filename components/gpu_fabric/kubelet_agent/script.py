"""gpu-fabric kubelet topology agent: installs a pool's TopologyManager settings on this node's kubelet.

Runs in a DaemonSet pod on each node of a pool whose nodes gpu-fabric does not provision (the
walkthrough's step 2 done by hand: edit the kubelet configuration, restart the kubelet, check
``/configz``). Standard library only: this file is shipped verbatim in a ConfigMap.

One reconcile pass (:meth:`Agent.reconcile`):

1. find the running kubelet in ``/proc`` (the pod shares the host PID namespace) and read its
   ``--config``, ``--config-dir`` and ``--root-dir`` flags; no single kubelet -> report, touch nothing;
2. plan the change: with ``--config-dir`` the drop-in file is installed there; without it exactly the
   topology keys are merged into the ``--config`` file (the previous file is kept as a backup);
3. only when the content differs: take the pool-wide restart Lease (one node at a time), write the
   file atomically, and restart the kubelet through systemd. When the CPU manager policy changes,
   the kubelet documentation's procedure is followed instead: the node must be cordoned (drained),
   the kubelet is stopped, ``cpu_manager_state`` removed, the file written, the kubelet started;
4. Ready only when the kubelet's ``/configz`` reports the desired settings; then the Lease is freed
   for the next node.
"""

import calendar
import json
import os
import re
import socket
import ssl
import struct
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

# The KubeletConfiguration keys that make up a pool's topology (gpu_fabric.topology.kubelet_config_fields).
TOPOLOGY_KEYS = (
    "topologyManagerPolicy",
    "topologyManagerScope",
    "cpuManagerPolicy",
    "topologyManagerPolicyOptions",
    "cpuManagerPolicyOptions",
    "reservedSystemCPUs",
)
# What an absent key means to the kubelet (its defaults), so absent and default compare equal.
KUBELET_DEFAULTS: Dict[str, Any] = {
    "topologyManagerPolicy": "none",
    "topologyManagerScope": "container",
    "cpuManagerPolicy": "none",
    "topologyManagerPolicyOptions": {},
    "cpuManagerPolicyOptions": {},
    "reservedSystemCPUs": "",
}
CPU_MANAGER_STATE_FILE = "cpu_manager_state"
DEFAULT_ROOT_DIR = "/var/lib/kubelet"
BACKUP_SUFFIX = ".gpu-fabric.bak"
# Written before the first change and removed once /configz agrees: a pod that dies between writing
# the file and seeing the restarted kubelet finishes the restart instead of leaving it half-applied.
PENDING_SUFFIX = ".gpu-fabric.pending"


class AgentError(Exception):
    """A condition under which the agent must not touch the node; the message says why."""


# -- the running kubelet -----------------------------------------------------------------------------


@dataclass(frozen=True)
class KubeletProcess:
    """The kubelet as its command line describes it."""

    pid: int
    config: str
    config_dir: Optional[str]
    root_dir: str
    tls_cert_file: Optional[str]
    cert_dir: str


def parse_flags(argv: Sequence[str]) -> Dict[str, str]:
    """``--name=value`` / ``--name value`` flags of a Go program (pflag), later ones winning."""
    flags: Dict[str, str] = {}
    index = 1
    while index < len(argv):
        word = argv[index]
        index += 1
        if not word.startswith("-") or word in ("-", "--"):
            continue
        name, equals, value = word.lstrip("-").partition("=")
        if not equals:
            if index < len(argv) and not argv[index].startswith("-"):
                value = argv[index]
                index += 1
            else:
                value = "true"
        flags[name] = value
    return flags


def find_kubelet(proc: Path) -> KubeletProcess:
    """The one kubelet process under ``proc``; :class:`AgentError` when there is none or several."""
    found: List[Tuple[int, List[str]]] = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            comm = (entry / "comm").read_text().strip()
            raw = (entry / "cmdline").read_bytes()
        except OSError:
            continue  # the process ended while we looked
        argv = [part.decode("utf-8", "replace") for part in raw.split(b"\0") if part]
        if comm == "kubelet" and argv and os.path.basename(argv[0]) == "kubelet":
            found.append((int(entry.name), argv))
    if not found:
        raise AgentError(
            f"no kubelet process found in {proc} (a kubelet that runs under another name, such as k3s, "
            "is not supported); nothing was changed"
        )
    if len(found) > 1:
        pids = ", ".join(str(pid) for pid, _ in sorted(found))
        raise AgentError(f"found {len(found)} kubelet processes (pids {pids}); cannot tell which serves this node; nothing was changed")
    pid, argv = found[0]
    flags = parse_flags(argv)
    config = flags.get("config")
    if not config:
        raise AgentError(
            f"the kubelet (pid {pid}) runs without --config: its settings are command-line flags, which this "
            "agent does not edit; nothing was changed"
        )
    root_dir = flags.get("root-dir") or DEFAULT_ROOT_DIR
    return KubeletProcess(
        pid=pid,
        config=config,
        config_dir=flags.get("config-dir") or None,
        root_dir=root_dir,
        tls_cert_file=flags.get("tls-cert-file") or None,
        cert_dir=flags.get("cert-dir") or os.path.join(root_dir, "pki"),
    )


# -- the host filesystem, as far as it is mounted -----------------------------------------------------


@dataclass(frozen=True)
class HostFiles:
    """Host directories mounted under ``root`` at their own path (``/etc/kubernetes`` -> ``/host/etc/kubernetes``)."""

    root: Path
    mounted: Tuple[str, ...]

    def path(self, host_path: str) -> Path:
        """The container path of ``host_path``; :class:`AgentError` when no mounted directory holds it."""
        normal = os.path.normpath(host_path)
        if not os.path.isabs(normal):
            raise AgentError(f"{host_path!r} is not an absolute path")
        for directory in self.mounted:
            if normal == directory or normal.startswith(directory.rstrip("/") + "/"):
                return self.root / normal.lstrip("/")
        raise AgentError(
            f"{normal} is outside the host directories mounted into the agent ({', '.join(self.mounted)}); "
            "add its directory to the pool's topologyAgent.hostPaths; nothing was changed"
        )


def atomic_write(target: Path, content: bytes) -> None:
    """Replace ``target`` with ``content`` in one rename: a reader sees the old file or the new one."""
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.gpu-fabric.tmp")
    mode = target.stat().st_mode & 0o7777 if target.exists() else 0o644
    with open(temporary, "wb") as handle:
        handle.write(content)
        handle.flush()
        os.fsync(handle.fileno())
    os.chmod(temporary, mode)
    os.replace(temporary, target)
    directory = os.open(target.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


# -- merging exactly the topology keys into a config file -------------------------------------------


_TOP_LEVEL_KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*:(.*)$")
_PLAIN_SCALAR = re.compile(r"^[A-Za-z][A-Za-z-]*$")
_YAML_WORDS = {"true", "false", "yes", "no", "on", "off", "y", "n", "null", "~"}
_UNREADABLE = object()


def _yaml_scalar(value: str) -> str:
    if _PLAIN_SCALAR.match(value) and value.lower() not in _YAML_WORDS:
        return value
    return json.dumps(value)  # a JSON string is a YAML double-quoted scalar


def _yaml_entry(key: str, value: Any) -> List[str]:
    if isinstance(value, dict):
        if not value:
            return [f"{key}: {{}}"]
        return [f"{key}:"] + [f"  {json.dumps(name)}: {json.dumps(value[name])}" for name in sorted(value)]
    return [f"{key}: {_yaml_scalar(str(value))}"]


def _scalar_value(text: str) -> Any:
    text = text.strip()
    if not text or text.startswith(("&", "*", "!", "|", ">")):
        return _UNREADABLE
    if text[0] in "\"{[":
        try:
            value, end = json.JSONDecoder().raw_decode(text)
        except ValueError:
            return _UNREADABLE
        rest = text[end:].strip()
        return value if not rest or rest.startswith("#") else _UNREADABLE
    if text[0] == "'":
        match = re.match(r"'((?:[^']|'')*)'\s*(#.*)?$", text)
        return match.group(1).replace("''", "'") if match else _UNREADABLE
    return text.split(" #", 1)[0].strip()


def _block_value(lines: List[str]) -> Any:
    """The value of one top-level ``key: ...`` block, or ``_UNREADABLE`` (which counts as different)."""
    first = _TOP_LEVEL_KEY.match(lines[0])
    assert first is not None
    inline = first.group(2).strip()
    if inline and inline[0] not in "\"'":
        inline = inline.split(" #", 1)[0].strip()
    body = [line for line in lines[1:] if line.strip() and not line.strip().startswith("#")]
    if inline:
        return _scalar_value(inline) if not body else _UNREADABLE
    mapping: Dict[str, Any] = {}
    for line in body:
        key, colon, value = line.strip().partition(":")
        if not colon or not line.startswith((" ", "\t")):
            return _UNREADABLE
        name = _scalar_value(key)
        parsed = _scalar_value(value)
        if name is _UNREADABLE or parsed is _UNREADABLE:
            return _UNREADABLE
        mapping[str(name)] = parsed
    return mapping


def _yaml_blocks(text: str) -> Tuple[List[str], Dict[str, Tuple[int, int]]]:
    lines = text.splitlines()
    blocks: Dict[str, Tuple[int, int]] = {}
    current: Optional[str] = None
    for index, line in enumerate(lines):
        if line.startswith(("---", "...", "%")) and index > 0:
            raise AgentError("the kubelet config file holds more than one YAML document; edit it by hand")
        match = _TOP_LEVEL_KEY.match(line)
        if match:
            current = match.group(1)
            if current in blocks:
                raise AgentError(f"the kubelet config file sets {current} twice; edit it by hand")
            blocks[current] = (index, index + 1)
        elif current is not None and (line.startswith((" ", "\t", "-")) or not line.strip()):
            start, _ = blocks[current]
            blocks[current] = (start, index + 1)
        elif line.strip() and not line.startswith(("#", "---")):
            raise AgentError(f"cannot read line {index + 1} of the kubelet config file as block YAML; edit it by hand")
        else:
            current = None
    return lines, blocks


def _normal(key: str, value: Any) -> Any:
    """A topology key's value as the kubelet means it: options that are "false" are the default."""
    if value is None:
        value = KUBELET_DEFAULTS[key]
    if key.endswith("PolicyOptions") and isinstance(value, dict):
        return {str(name): str(option).lower() for name, option in value.items() if str(option).lower() != "false"}
    return value


def running_topology(config: Dict[str, Any]) -> Dict[str, Any]:
    """The topology keys of a KubeletConfiguration mapping, absent keys as the kubelet's defaults."""
    return {key: _normal(key, config.get(key)) for key in TOPOLOGY_KEYS}


def merge_config_text(text: str, desired: Dict[str, Any]) -> Optional[str]:
    """``text`` with exactly the topology keys set to ``desired`` (absent keys removed), or ``None`` if unchanged.

    JSON files (EKS writes ``config.json``) are re-rendered as JSON. YAML files are edited block by
    block: every other line, comment and ordering stays byte-for-byte as it was.
    """
    wanted = running_topology(desired)
    if text.lstrip().startswith("{"):
        try:
            document = json.loads(text)
        except ValueError as error:
            raise AgentError(f"the kubelet config file is not valid JSON ({error}); nothing was changed") from None
        if running_topology(document) == wanted:
            return None
        for key in TOPOLOGY_KEYS:
            document.pop(key, None)
        document.update({key: desired[key] for key in TOPOLOGY_KEYS if key in desired})
        return json.dumps(document, indent=2) + "\n"

    lines, blocks = _yaml_blocks(text)
    current = {key: _block_value(lines[start:end]) for key, (start, end) in blocks.items() if key in TOPOLOGY_KEYS}
    if running_topology(current) == wanted:  # an unreadable value never equals, so it is rewritten
        return None
    replacement: Dict[int, List[str]] = {}
    dropped: set = set()
    for key, (start, end) in blocks.items():
        if key in TOPOLOGY_KEYS:
            dropped.update(range(start, end))
            if key in desired:
                replacement[start] = _yaml_entry(key, desired[key])
    merged: List[str] = []
    for index, line in enumerate(lines):
        if index in replacement:
            merged.extend(replacement[index])
        if index not in dropped:
            merged.append(line)
    # Blocks may have swallowed trailing blank lines; keep the file's shape tidy.
    while merged and not merged[-1].strip():
        merged.pop()
    for key in TOPOLOGY_KEYS:
        if key in desired and key not in blocks:
            merged.extend(_yaml_entry(key, desired[key]))
    return "\n".join(merged) + "\n"


# -- the plan ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """What this node needs: the file to write (``content`` ``None`` when it already holds the settings)."""

    mode: str
    """``drop-in`` or ``config-file``."""
    host_path: str
    target: Path
    content: Optional[bytes]
    backup: Optional[Path]


def make_plan(kubelet: KubeletProcess, files: HostFiles, dropin_name: str, dropin: bytes, desired: Dict[str, Any]) -> Plan:
    """Decide where the settings go on this node and whether the file must change."""
    if kubelet.config_dir:
        host_path = os.path.join(kubelet.config_dir, dropin_name)
        target = files.path(host_path)
        current = target.read_bytes() if target.exists() else None
        return Plan("drop-in", host_path, target, None if current == dropin else dropin, None)
    target = files.path(kubelet.config)
    if not target.exists():
        raise AgentError(f"the kubelet's --config file {kubelet.config} does not exist; nothing was changed")
    merged = merge_config_text(target.read_text(), desired)
    backup = target.with_name(target.name + BACKUP_SUFFIX)
    return Plan("config-file", kubelet.config, target, None if merged is None else merged.encode(), backup)


# -- collaborators: service manager, restart lock, kubelet, cluster ---------------------------------


class SystemdBus:
    """systemd's manager over its private D-Bus socket (what ``systemctl`` uses as root).

    Only the socket is shared with the pod: no capability, no host mount namespace. systemd accepts
    the peer because the pod runs as uid 0 (SO_PEERCRED), exactly as it accepts ``systemctl``.
    """

    PATH = "/org/freedesktop/systemd1"
    INTERFACE = "org.freedesktop.systemd1.Manager"

    def __init__(self, socket_path: str, timeout: float = 30.0) -> None:
        self.socket_path = socket_path
        self.timeout = timeout
        self._serial = 0

    def restart(self, unit: str) -> None:
        """Queue a restart of ``unit`` (``RestartUnit(unit, "replace")``)."""
        self._call("RestartUnit", unit, "replace")

    def stop(self, unit: str) -> None:
        """Queue a stop of ``unit``."""
        self._call("StopUnit", unit, "replace")

    def start(self, unit: str) -> None:
        """Queue a start of ``unit``."""
        self._call("StartUnit", unit, "replace")

    def _call(self, member: str, *arguments: str) -> None:
        self._serial += 1
        message = method_call(self._serial, self.PATH, self.INTERFACE, member, "org.freedesktop.systemd1", arguments)
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.settimeout(self.timeout)
            try:
                connection.connect(self.socket_path)
            except OSError as error:
                raise AgentError(f"cannot reach systemd at {self.socket_path}: {error}") from None
            authenticate(connection)
            connection.sendall(message)
            kind, fields, body = read_reply(connection, self._serial)
        if kind == 3:
            raise AgentError(f"systemd refused {member}({', '.join(arguments)}): {fields.get(4)}: {body}")


def _pad(buffer: bytearray, alignment: int) -> None:
    buffer.extend(b"\0" * (-len(buffer) % alignment))


def _put_string(buffer: bytearray, text: str) -> None:
    data = text.encode()
    _pad(buffer, 4)
    buffer.extend(struct.pack("<I", len(data)) + data + b"\0")


def _put_signature(buffer: bytearray, text: str) -> None:
    buffer.extend(bytes([len(text)]) + text.encode() + b"\0")


def method_call(serial: int, path: str, interface: str, member: str, destination: str, arguments: Sequence[str]) -> bytes:
    """A little-endian D-Bus METHOD_CALL with string arguments (D-Bus specification, "Message Format")."""
    body = bytearray()
    for argument in arguments:
        _put_string(body, argument)
    fields: List[Tuple[int, str, str]] = [(1, "o", path), (2, "s", interface), (3, "s", member), (6, "s", destination)]
    if arguments:
        fields.append((8, "g", "s" * len(arguments)))
    message = bytearray(b"l\x01\x00\x01" + struct.pack("<II", len(body), serial))
    length_at = len(message)
    message.extend(b"\0\0\0\0")
    start = len(message)  # the array's elements are structs: 8-aligned, and 16 already is
    for code, signature, value in fields:
        _pad(message, 8)
        message.append(code)
        _put_signature(message, signature)
        if signature == "g":
            _put_signature(message, value)
        else:
            _put_string(message, value)
    struct.pack_into("<I", message, length_at, len(message) - start)
    _pad(message, 8)
    return bytes(message + body)


def authenticate(connection: socket.socket) -> None:
    """SASL EXTERNAL authentication with this process's uid (D-Bus specification, "Authentication Protocol")."""
    uid = str(os.getuid()).encode().hex()
    connection.sendall(b"\0AUTH EXTERNAL " + uid.encode() + b"\r\n")
    line = b""
    while not line.endswith(b"\r\n"):
        chunk = connection.recv(1)
        if not chunk:
            raise AgentError("systemd closed the connection during authentication")
        line += chunk
    if not line.startswith(b"OK "):
        raise AgentError(f"systemd refused authentication as uid {os.getuid()}: {line.strip().decode(errors='replace')}")
    connection.sendall(b"BEGIN\r\n")


def _receive(connection: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = connection.recv(size - len(data))
        if not chunk:
            raise AgentError("systemd closed the connection before replying")
        data += chunk
    return data


def parse_message(data: bytes) -> Tuple[int, Dict[int, Any], List[str]]:
    """(message type, header fields by code, leading string arguments of the body) of one message."""
    order = "<" if data[0:1] == b"l" else ">"
    kind = data[1]
    body_length, _serial, fields_length = struct.unpack(order + "III", data[4:16])
    fields: Dict[int, Any] = {}
    position, end = 16, 16 + fields_length
    while position < end:
        position += -position % 8
        code = data[position]
        signature_length = data[position + 1]
        signature = data[position + 2:position + 2 + signature_length].decode()
        position += signature_length + 3
        if signature in ("s", "o"):
            position += -position % 4
            (length,) = struct.unpack(order + "I", data[position:position + 4])
            fields[code] = data[position + 4:position + 4 + length].decode()
            position += 4 + length + 1
        elif signature == "u":
            position += -position % 4
            (fields[code],) = struct.unpack(order + "I", data[position:position + 4])
            position += 4
        elif signature == "g":
            length = data[position]
            fields[code] = data[position + 1:position + 1 + length].decode()
            position += length + 2
        else:
            raise AgentError(f"unexpected D-Bus header field type {signature!r}")
    body_start = end + (-end % 8)
    body = data[body_start:body_start + body_length]
    strings: List[str] = []
    position = 0
    for letter in fields.get(8, ""):
        if letter not in "so":
            break
        position += -position % 4
        (length,) = struct.unpack(order + "I", body[position:position + 4])
        strings.append(body[position + 4:position + 4 + length].decode())
        position += 4 + length + 1
    return kind, fields, strings


def read_reply(connection: socket.socket, serial: int) -> Tuple[int, Dict[int, Any], str]:
    """Read messages until the METHOD_RETURN (2) or ERROR (3) answering ``serial``."""
    while True:
        head = _receive(connection, 16)
        order = "<" if head[0:1] == b"l" else ">"
        body_length, _, fields_length = struct.unpack(order + "III", head[4:16])
        header_end = 16 + fields_length
        rest = _receive(connection, header_end + (-header_end % 8) - 16 + body_length)
        kind, fields, strings = parse_message(head + rest)
        if kind in (2, 3) and fields.get(5) == serial:
            return kind, fields, strings[0] if strings else ""


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


# -- the agent ---------------------------------------------------------------------------------------


@dataclass
class Status:
    """What the agent last found; the readiness probe passes only when ``ready``."""

    ready: bool
    message: str
    changed: bool = False


@dataclass
class Agent:
    """One node's reconciler; every side effect goes through the collaborators, so tests can fake the host."""

    proc: Path
    files: HostFiles
    dropin_name: str
    dropin: bytes
    desired: Dict[str, Any]
    services: Any
    """``restart(unit)``, ``stop(unit)``, ``start(unit)``: :class:`SystemdBus` on a node."""
    lease: Any
    """``acquire() -> bool``, ``release()``, ``holder_now() -> str``: :class:`RestartLease` on a node."""
    configz: Callable[[KubeletProcess], Dict[str, Any]]
    cordoned: Callable[[], bool]
    unit: str = "kubelet.service"
    stop_timeout: float = 120.0
    sleep: Callable[[float], None] = time.sleep
    log: Callable[[str], None] = field(default=lambda line: print(line, flush=True))

    def reconcile(self) -> Status:
        """One pass: identify, plan, change (only if needed, under the lease), then compare /configz."""
        try:
            kubelet = find_kubelet(self.proc)
            plan = make_plan(kubelet, self.files, self.dropin_name, self.dropin, self.desired)
        except AgentError as error:
            return Status(False, str(error))
        pending = plan.target.with_name(plan.target.name + PENDING_SUFFIX)
        changed = False
        # A pending marker naming the running kubelet means the file was written but the restart never
        # happened (the pod died in between); a marker naming another pid means it did: only wait then.
        if plan.content is not None or _marker_pid(pending) == kubelet.pid:
            try:
                outcome = self._apply(kubelet, plan, pending)
            except AgentError as error:
                return Status(False, str(error))
            if outcome is not None:
                return outcome
            changed = True
            kubelet = self._wait_for_new_kubelet(kubelet.pid) or kubelet
        return self._check(kubelet, pending, changed)

    def _apply(self, kubelet: KubeletProcess, plan: Plan, pending: Path) -> Optional[Status]:
        state_file = self.files.path(os.path.join(kubelet.root_dir, CPU_MANAGER_STATE_FILE))
        cpu_policy_changes = state_file.exists() and _state_policy(state_file) != self.desired.get("cpuManagerPolicy", "none")
        if cpu_policy_changes and not self.cordoned():
            return Status(False, (
                f"the CPU manager policy changes from {_state_policy(state_file)!r} to {self.desired.get('cpuManagerPolicy')!r}: "
                "cordon and drain this node first (kubectl drain --ignore-daemonsets), as the kubelet documentation "
                "requires; nothing was changed"))
        if not self.lease.acquire():
            return Status(False, f"waiting for the restart lease, held by {self.lease.holder_now() or 'another node'}; nothing was changed yet")
        atomic_write(pending, str(kubelet.pid).encode())
        if cpu_policy_changes:
            # kubelet docs, "Changing the CPU Manager Policy": stop the kubelet, remove the state file,
            # change the policy, start the kubelet (a stale state file makes the kubelet crash-loop).
            self.services.stop(self.unit)
            self._wait_for_stop()
            state_file.unlink()
            self._write(plan)
            self.services.start(self.unit)
            self.log(f"stopped {self.unit}, removed {state_file.name}, wrote {plan.host_path} ({plan.mode}), started {self.unit}")
        else:
            self._write(plan)
            self.services.restart(self.unit)
            self.log(f"wrote {plan.host_path} ({plan.mode}) and restarted {self.unit}")
        return None

    def _write(self, plan: Plan) -> None:
        if plan.content is None:
            return  # an earlier pass wrote it; only the restart was left
        if plan.backup is not None and plan.target.exists():
            atomic_write(plan.backup, plan.target.read_bytes())
        atomic_write(plan.target, plan.content)

    def _wait_for_stop(self) -> None:
        waited = 0.0
        while waited < self.stop_timeout:
            try:
                find_kubelet(self.proc)
            except AgentError:
                return
            self.sleep(1.0)
            waited += 1.0
        self.services.start(self.unit)
        raise AgentError(f"{self.unit} did not stop within {self.stop_timeout:.0f}s; started it again, nothing was changed")

    def _wait_for_new_kubelet(self, old_pid: int) -> Optional[KubeletProcess]:
        # systemd runs the queued job asynchronously: until the pid changes, the old kubelet answers.
        for _ in range(60):
            try:
                kubelet = find_kubelet(self.proc)
                if kubelet.pid != old_pid:
                    return kubelet
            except AgentError:
                pass
            self.sleep(1.0)
        return None

    def _check(self, kubelet: KubeletProcess, pending: Path, changed: bool) -> Status:
        wanted = running_topology(self.desired)
        if _marker_pid(pending) == kubelet.pid:
            self.lease.acquire()  # renew: this node's restart is still queued
            return Status(False, f"waiting for systemd to restart {self.unit} (pid {kubelet.pid} still runs)", changed)
        try:
            running = running_topology(self.configz(kubelet))
        except AgentError as error:
            if pending.exists():
                self.lease.acquire()  # renew while this node's kubelet comes back
            return Status(False, str(error), changed)
        # /configz answers only once the restarted kubelet has loaded its files: what it shows now is
        # what this node runs with, so the restart is over either way and the next node may go.
        if pending.exists():
            pending.unlink()
            self.lease.release()
        differing = {key: running[key] for key in TOPOLOGY_KEYS if running[key] != wanted[key]}
        if not differing:
            return Status(True, "the kubelet reports the pool's topology settings", changed)
        return Status(False, (
            f"the kubelet's files hold the pool's settings but /configz shows {differing}: another configuration "
            "source (a later drop-in file or a command-line flag) overrides them; not restarting again"), changed)


def _marker_pid(marker: Path) -> Optional[int]:
    try:
        return int(marker.read_text().strip())
    except (OSError, ValueError):
        return None


def _state_policy(state_file: Path) -> str:
    try:
        return str(json.loads(state_file.read_text()).get("policyName") or "none")
    except (OSError, ValueError):
        return "unreadable"


def kubelet_certificate(kubelet: KubeletProcess, files: HostFiles) -> Optional[bytes]:
    """The kubelet's serving certificate from the node, if it is self-signed and readable."""
    candidates = [kubelet.tls_cert_file] if kubelet.tls_cert_file else [os.path.join(kubelet.cert_dir, "kubelet.crt")]
    for host_path in candidates:
        try:
            return files.path(host_path).read_bytes()
        except (AgentError, OSError):
            continue
    return None


# -- entry points ------------------------------------------------------------------------------------


def agent_from_environment() -> Agent:
    environment = os.environ
    settings_dir = Path(environment.get("SETTINGS_DIR", "/etc/gpu-fabric"))
    dropin_name = environment["DROPIN_NAME"]
    files = HostFiles(Path(environment.get("HOST_ROOT", "/host")), tuple(environment["HOST_PATHS"].split(":")))
    service_account = Path(environment.get("SERVICE_ACCOUNT_DIR", SERVICE_ACCOUNT_DIR))
    api_host = environment.get("KUBERNETES_SERVICE_HOST", "kubernetes.default.svc")
    api = ClusterApi(f"https://{api_host}:{environment.get('KUBERNETES_SERVICE_PORT', '443')}", service_account)
    node = environment["NODE_NAME"]

    def configz(kubelet: KubeletProcess) -> Dict[str, Any]:
        try:
            client = KubeletConfigz(environment["HOST_IP"], service_account / "token", service_account / "ca.crt",
                                    kubelet_certificate(kubelet, files))
        except OSError as error:  # includes ssl.SSLError: an unreadable CA bundle or kubelet certificate
            raise AgentError(f"cannot set up TLS to the kubelet: {error}") from None
        return client.read()

    return Agent(
        proc=Path(environment.get("PROC_ROOT", "/proc")),
        files=files,
        dropin_name=dropin_name,
        dropin=(settings_dir / dropin_name).read_bytes(),
        desired=json.loads((settings_dir / "topology.json").read_text()),
        services=SystemdBus(environment.get("SYSTEMD_SOCKET", "/run/systemd/private")),
        lease=RestartLease(api, environment["POD_NAMESPACE"], environment["LEASE_NAME"], node),
        configz=configz,
        cordoned=lambda: node_is_cordoned(api, node),
        unit=environment.get("KUBELET_UNIT", "kubelet.service"),
    )


def main(argv: Sequence[str]) -> int:
    """``run``: reconcile forever, publishing the status; ``probe``: exit 0 only when the last status was ready."""
    status_file = Path(os.environ.get("STATUS_FILE", "/run/gpu-fabric/status.json"))
    command = argv[1] if len(argv) > 1 else "run"
    if command == "probe":
        try:
            status = json.loads(status_file.read_text())
        except (OSError, ValueError):
            print("no status yet")
            return 1
        print(status.get("message", ""))
        return 0 if status.get("ready") else 1
    if command != "run":
        print(f"usage: {argv[0]} run|probe", file=sys.stderr)
        return 2
    agent = agent_from_environment()
    interval = float(os.environ.get("INTERVAL_SECONDS", "30"))
    last = ""
    while True:
        status = agent.reconcile()
        atomic_write(status_file, json.dumps({"ready": status.ready, "message": status.message}).encode())
        if status.message != last:
            print(("ready: " if status.ready else "not ready: ") + status.message, flush=True)
            last = status.message
        time.sleep(interval if status.ready else min(interval, 5.0))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
