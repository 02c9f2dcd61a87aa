"""The kubelet topology agent's node program, against a fake host: /proc, files, systemd, the kubelet, the lease."""

from __future__ import annotations

import json
import os
import socket
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_fabric.kubelet_agent import __main__ as entry
from gpu_fabric.kubelet_agent import errors
from gpu_fabric.kubelet_agent import host_files
from gpu_fabric.kubelet_agent import kubelet
from gpu_fabric.kubelet_agent import kubelet_config
from gpu_fabric.kubelet_agent import reconcile
from gpu_fabric.kubelet_agent import systemd
from gpu_fabric.config.topology import KubeletTopology
from gpu_fabric.kube.topology import DROPIN_PATH, kubelet_config_dropin_yaml, kubelet_config_fields

DROPIN_NAME = os.path.basename(DROPIN_PATH)
SEED = KubeletTopology.fabric_default()

# What kubeadm writes to /var/lib/kubelet/config.yaml (shortened; the walkthrough edits this file by hand).
KUBEADM_CONFIG = """\
apiVersion: kubelet.config.k8s.io/v1beta1
authentication:
  anonymous:
    enabled: false
  webhook:
    cacheTTL: 0s
    enabled: true
# cluster DNS, as kubeadm renders it
clusterDNS:
- 10.96.0.10
clusterDomain: cluster.local
cgroupDriver: systemd
kind: KubeletConfiguration
rotateCertificates: true
staticPodPath: /etc/kubernetes/manifests
"""


class FakeHost:
    """A node: /proc with the kubelet, the host directories, systemd and a kubelet that reads its files."""

    def __init__(self, root: Path, argv: list[str]) -> None:
        self.root = root
        self.proc = root / "proc"
        self.host = root / "host"
        self.proc.mkdir()
        self.argv = argv
        self.pid = 100
        self.calls: list[str] = []
        self.running: dict[str, Any] = {}
        self.kubelet_up = False
        self.crashed = ""
        self._spawn()

    # -- the kubelet --------------------------------------------------------------------------------

    def flags(self) -> dict[str, str]:
        return kubelet.parse_flags(self.argv)

    def file(self, host_path: str) -> Path:
        return self.host / host_path.lstrip("/")

    def _load(self) -> dict[str, Any]:
        flags = self.flags()
        config = yaml.safe_load(self.file(flags["config"]).read_text()) or {}
        if flags.get("config-dir"):
            # kubelet --config-dir: *.conf files in lexical order, each overriding what came before.
            for dropin in sorted(self.file(flags["config-dir"]).glob("*.conf")):
                config.update(yaml.safe_load(dropin.read_text()) or {})
        return config

    def _spawn(self) -> None:
        config = self._load()
        state = self.file(os.path.join(self.flags().get("root-dir", "/var/lib/kubelet"), "cpu_manager_state"))
        policy = config.get("cpuManagerPolicy", "none")
        if state.exists() and json.loads(state.read_text())["policyName"] != policy:
            # What the kubelet docs warn of: a stale state file makes the kubelet crash-loop.
            self.crashed = "could not restore state from checkpoint"
            return
        state.parent.mkdir(parents=True, exist_ok=True)
        state.write_text(json.dumps({"policyName": policy, "defaultCpuSet": "0-7", "checksum": 1}))
        self.pid += 1
        directory = self.proc / str(self.pid)
        directory.mkdir()
        (directory / "comm").write_text("kubelet\n")
        (directory / "cmdline").write_bytes(b"\0".join(arg.encode() for arg in self.argv) + b"\0")
        self.running = config
        self.kubelet_up = True

    def _kill(self) -> None:
        for process in self.proc.iterdir():
            for child in process.iterdir():
                child.unlink()
            process.rmdir()
        self.kubelet_up = False

    # -- systemd ------------------------------------------------------------------------------------

    def restart(self, unit: str) -> None:
        self.calls.append(f"restart {unit}")
        self._kill()
        self._spawn()

    def stop(self, unit: str) -> None:
        self.calls.append(f"stop {unit}")
        self._kill()

    def start(self, unit: str) -> None:
        self.calls.append(f"start {unit}")
        self._spawn()

    def configz(self, kubelet: kubelet.KubeletProcess) -> dict[str, Any]:
        if not self.kubelet_up:
            raise errors.AgentError("connection refused")
        return self.running

    def snapshot(self) -> dict[str, bytes]:
        return {str(path.relative_to(self.host)): path.read_bytes() for path in sorted(self.host.rglob("*")) if path.is_file()}


class FakeLease:
    def __init__(self, holder: str = "") -> None:
        self.holder = holder
        self.acquired = 0
        self.released = 0

    def acquire(self) -> bool:
        if self.holder not in ("", "node-a"):
            return False
        self.holder = "node-a"
        self.acquired += 1
        return True

    def release(self) -> None:
        if self.holder == "node-a":
            self.holder = ""
            self.released += 1

    def holder_now(self) -> str:
        return self.holder


def make_host(tmp_path: Path, *, config_dir: bool = False, config_text: str = KUBEADM_CONFIG,
              config: str = "/var/lib/kubelet/config.yaml", extra: tuple[str, ...] = ()) -> FakeHost:
    host = tmp_path / "host"
    (host / config.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
    (host / config.lstrip("/")).write_text(config_text)
    argv = ["/usr/bin/kubelet", "--kubeconfig=/etc/kubernetes/kubelet.conf", f"--config={config}", *extra]
    if config_dir:
        (host / "etc/kubernetes/kubelet.conf.d").mkdir(parents=True, exist_ok=True)
        argv.append("--config-dir=/etc/kubernetes/kubelet.conf.d")
    return FakeHost(tmp_path, argv)


def make_agent(fake: FakeHost, topology: KubeletTopology = SEED, *, lease: FakeLease | None = None,
               cordoned: bool = False, mounted: tuple[str, ...] = ("/etc/kubernetes", "/var/lib/kubelet")) -> reconcile.Agent:
    return reconcile.Agent(
        proc=fake.proc,
        files=host_files.HostFiles(fake.host, mounted),
        dropin_name=DROPIN_NAME,
        dropin=kubelet_config_dropin_yaml(topology).encode(),
        desired=kubelet_config_fields(topology),
        services=fake,
        lease=lease or FakeLease(),
        configz=fake.configz,
        cordoned=lambda: cordoned,
        sleep=lambda seconds: None,
        log=lambda line: None,
    )


@pytest.fixture
def writes(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every atomic write the agent makes (pending markers excluded)."""
    written: list[Path] = []
    original = host_files.HostFiles.write

    def counting(self: host_files.HostFiles, host_path: str, content: bytes, follow: bool = True) -> None:
        if not host_path.endswith(reconcile.PENDING_SUFFIX):
            written.append(self.path(host_path))
        original(self, host_path, content, follow)

    monkeypatch.setattr(host_files.HostFiles, "write", counting)
    return written


# -- the config-file variant (the walkthrough's own edit) -------------------------------------------


def test_config_file_change_is_one_atomic_write_and_one_restart_with_a_backup(tmp_path: Path, writes: list[Path]) -> None:
    fake = make_host(tmp_path)
    config = fake.file("/var/lib/kubelet/config.yaml")
    inode_before = config.stat().st_ino
    agent = make_agent(fake)

    status = agent.reconcile()

    assert status.ready and status.changed, status.message
    assert writes == [config.with_name("config.yaml" + reconcile.BACKUP_SUFFIX), config]
    assert fake.calls == ["restart kubelet.service"]
    assert config.stat().st_ino != inode_before  # replaced by rename, never rewritten in place
    assert config.with_name("config.yaml" + reconcile.BACKUP_SUFFIX).read_text() == KUBEADM_CONFIG
    merged = yaml.safe_load(config.read_text())
    assert merged == {**yaml.safe_load(KUBEADM_CONFIG), **kubelet_config_fields(SEED)}
    # Every line the walkthrough does not touch stays as it was, comments included.
    assert config.read_text().startswith(KUBEADM_CONFIG.split("rotateCertificates")[0])
    assert "topologyManagerPolicy: restricted\ntopologyManagerScope: container\n" in config.read_text()
    assert fake.running["topologyManagerPolicy"] == "restricted"
    assert not list(config.parent.glob("*.tmp")) and not list(config.parent.glob("*" + reconcile.PENDING_SUFFIX))


def test_no_change_means_no_write_and_no_restart(tmp_path: Path, writes: list[Path]) -> None:
    fake = make_host(tmp_path)
    agent = make_agent(fake)
    agent.reconcile()
    writes.clear()
    fake.calls.clear()
    before = fake.snapshot()

    for _ in range(3):
        status = agent.reconcile()
        assert status.ready and not status.changed

    assert writes == [] and fake.calls == []
    assert fake.snapshot() == before


def test_semantically_equal_settings_in_another_spelling_are_left_alone(tmp_path: Path, writes: list[Path]) -> None:
    text = KUBEADM_CONFIG + 'topologyManagerPolicy: "restricted"   # set by hand\ntopologyManagerScope: \'container\'\n'
    fake = make_host(tmp_path, config_text=text)
    status = make_agent(fake).reconcile()
    assert status.ready and writes == [] and fake.calls == []


def test_a_settings_change_replaces_exactly_the_topology_keys(tmp_path: Path, writes: list[Path]) -> None:
    fake = make_host(tmp_path)
    make_agent(fake).reconcile()
    options = KubeletTopology.model_validate({"policy": "single-numa-node", "policyOptions": {"prefer-closest-numa-nodes": True}})
    fake.calls.clear()

    status = make_agent(fake, options).reconcile()

    assert status.ready and fake.calls == ["restart kubelet.service"]
    document = yaml.safe_load(fake.file("/var/lib/kubelet/config.yaml").read_text())
    assert document["topologyManagerPolicy"] == "single-numa-node"
    assert document["topologyManagerPolicyOptions"] == {"prefer-closest-numa-nodes": "true"}
    assert document["clusterDNS"] == ["10.96.0.10"]
    assert fake.file("/var/lib/kubelet/config.yaml").read_text().count("topologyManagerPolicy:") == 1


def test_json_config_files_are_merged_as_json(tmp_path: Path) -> None:
    original = {"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration", "maxPods": 110,
                "topologyManagerPolicy": "none"}
    fake = make_host(tmp_path, config="/etc/kubernetes/kubelet/config.json", config_text=json.dumps(original))
    status = make_agent(fake).reconcile()
    assert status.ready and fake.calls == ["restart kubelet.service"]
    assert json.loads(fake.file("/etc/kubernetes/kubelet/config.json").read_text()) == {**original, **kubelet_config_fields(SEED)}


# -- the drop-in variant ----------------------------------------------------------------------------


def test_dropin_directory_gets_the_dropin_and_the_config_file_stays_untouched(tmp_path: Path, writes: list[Path]) -> None:
    fake = make_host(tmp_path, config_dir=True)
    agent = make_agent(fake)

    status = agent.reconcile()

    dropin = fake.file("/etc/kubernetes/kubelet.conf.d/" + DROPIN_NAME)
    assert status.ready and status.changed
    assert writes == [dropin]
    assert dropin.read_text() == kubelet_config_dropin_yaml(SEED)
    assert fake.file("/var/lib/kubelet/config.yaml").read_text() == KUBEADM_CONFIG
    assert fake.calls == ["restart kubelet.service"]
    writes.clear()
    assert agent.reconcile().ready and writes == [] and fake.calls == ["restart kubelet.service"]


def test_a_later_dropin_that_overrides_ours_is_reported_without_restart_loops(tmp_path: Path) -> None:
    fake = make_host(tmp_path, config_dir=True)
    fake.file("/etc/kubernetes/kubelet.conf.d/90-site.conf").write_text("topologyManagerPolicy: best-effort\n")
    agent = make_agent(fake)
    first = agent.reconcile()
    assert not first.ready and fake.calls == ["restart kubelet.service"]
    second = agent.reconcile()
    assert not second.ready and "overrides" in second.message and "best-effort" in second.message
    assert fake.calls == ["restart kubelet.service"]


# -- refusing to touch a node it cannot read --------------------------------------------------------


@pytest.mark.parametrize(("argv", "expected"), [
    (None, "no kubelet process"),
    (["/usr/bin/kubelet", "--kubeconfig=/etc/kubernetes/kubelet.conf"], "runs without --config"),
    (["/usr/bin/kubelet", "--config", "/opt/kubelet/config.yaml"], "outside the host directories mounted"),
    (["/usr/bin/kubelet", "--config=/var/lib/kubelet/config.yaml", "--topology-manager-policy=none"],
     "sets --topology-manager-policy on its command line, which overrides every config file"),
])
def test_unidentifiable_kubelet_means_no_write_and_a_clear_message(tmp_path: Path, writes: list[Path], argv, expected) -> None:
    fake = make_host(tmp_path)
    if argv is None:
        fake._kill()
    else:
        (fake.proc / str(fake.pid) / "cmdline").write_bytes(b"\0".join(a.encode() for a in argv))
    before = fake.snapshot()

    status = make_agent(fake).reconcile()

    assert not status.ready and expected in status.message
    assert writes == [] and fake.calls == [] and fake.snapshot() == before


def test_two_kubelets_are_not_guessed_between(tmp_path: Path, writes: list[Path]) -> None:
    fake = make_host(tmp_path)
    other = fake.proc / "7"
    other.mkdir()
    (other / "comm").write_text("kubelet\n")
    (other / "cmdline").write_bytes(b"/usr/local/bin/kubelet\0--config=/var/lib/kubelet/config.yaml\0")
    status = make_agent(fake).reconcile()
    assert not status.ready and "found 2 kubelet processes (pids 7, 101)" in status.message
    assert writes == [] and fake.calls == []


def test_flags_are_read_in_both_spellings() -> None:
    flags = kubelet.parse_flags(["kubelet", "--config", "/a", "--config-dir=/b", "--v=2", "--fail-swap-on"])
    assert flags == {"config": "/a", "config-dir": "/b", "v": "2", "fail-swap-on": "true"}


# -- one node at a time -----------------------------------------------------------------------------


def test_another_nodes_restart_lease_holds_the_change_back(tmp_path: Path, writes: list[Path]) -> None:
    fake = make_host(tmp_path)
    lease = FakeLease(holder="node-b")
    status = make_agent(fake, lease=lease).reconcile()
    assert not status.ready and "held by node-b" in status.message
    assert writes == [] and fake.calls == []
    lease.holder = ""
    status = make_agent(fake, lease=lease).reconcile()
    assert status.ready and lease.acquired == 1 and lease.released == 1 and lease.holder == ""


def test_a_restart_interrupted_before_it_happened_is_finished_once(tmp_path: Path, writes: list[Path]) -> None:
    fake = make_host(tmp_path, config_dir=True)
    dropin = fake.file("/etc/kubernetes/kubelet.conf.d/" + DROPIN_NAME)
    dropin.write_text(kubelet_config_dropin_yaml(SEED))  # written, then the pod died before restarting
    dropin.with_name(dropin.name + reconcile.PENDING_SUFFIX).write_text(str(fake.pid))
    lease = FakeLease()
    agent = make_agent(fake, lease=lease)

    assert agent.reconcile().ready
    assert writes == [] and fake.calls == ["restart kubelet.service"]
    assert lease.released == 1 and not dropin.with_name(dropin.name + reconcile.PENDING_SUFFIX).exists()


def test_the_lease_is_kept_until_the_kubelet_reports_the_settings(tmp_path: Path) -> None:
    fake = make_host(tmp_path)
    lease = FakeLease()
    agent = make_agent(fake, lease=lease)
    fake.restart = lambda unit: (fake.calls.append(f"restart {unit}"), fake._kill())  # the kubelet is slow to come back
    status = agent.reconcile()
    assert not status.ready and lease.holder == "node-a" and lease.released == 0
    fake._spawn()
    assert agent.reconcile().ready and lease.released == 1 and fake.calls == ["restart kubelet.service"]


# -- the CPU manager state file ---------------------------------------------------------------------


STATIC = KubeletTopology.model_validate({"cpuManagerPolicy": "static", "reservedSystemCPUs": "0-1"})


def test_cpu_manager_policy_change_waits_for_a_cordoned_node(tmp_path: Path, writes: list[Path]) -> None:
    fake = make_host(tmp_path)
    status = make_agent(fake, STATIC, cordoned=False).reconcile()
    assert not status.ready and "cordon and drain" in status.message and "'none' to 'static'" in status.message
    assert writes == [] and fake.calls == []


def test_cpu_manager_policy_change_stops_removes_the_state_file_and_starts(tmp_path: Path) -> None:
    fake = make_host(tmp_path)
    status = make_agent(fake, STATIC, cordoned=True).reconcile()
    assert status.ready, status.message
    assert fake.calls == ["stop kubelet.service", "start kubelet.service"]
    state = json.loads(fake.file("/var/lib/kubelet/cpu_manager_state").read_text())
    assert state["policyName"] == "static"  # written afresh by the kubelet, not the stale one
    assert fake.running["reservedSystemCPUs"] == "0-1"


def test_without_the_state_file_step_the_kubelet_would_crash(tmp_path: Path) -> None:
    # The fake kubelet models the documented failure, so the test above is a real check.
    fake = make_host(tmp_path)
    config = fake.file("/var/lib/kubelet/config.yaml")
    config.write_text(KUBEADM_CONFIG + "cpuManagerPolicy: static\nreservedSystemCPUs: \"0-1\"\n")
    fake.restart("kubelet.service")
    assert fake.crashed and not fake.kubelet_up


def test_cpu_manager_state_is_read_under_the_kubelets_root_dir(tmp_path: Path) -> None:
    fake = make_host(tmp_path, extra=("--root-dir=/var/lib/kubelet/alt",))
    status = make_agent(fake, STATIC, cordoned=True).reconcile()
    assert status.ready and fake.calls == ["stop kubelet.service", "start kubelet.service"]
    assert fake.file("/var/lib/kubelet/alt/cpu_manager_state").exists()


# -- merging, and agreeing with gpu_fabric.kube.topology -------------------------------------------------


@pytest.mark.parametrize("topology", [
    SEED,
    STATIC,
    KubeletTopology.model_validate({"policy": "best-effort", "scope": "pod", "policyOptions": {"max-allowable-numa-nodes": 16}}),
    KubeletTopology.model_validate({"cpuManagerPolicy": "static", "reservedSystemCPUs": "0",
                                    "cpuManagerPolicyOptions": {"full-pcpus-only": True}}),
])
def test_merged_yaml_means_what_the_topology_says(topology: KubeletTopology) -> None:
    start = KUBEADM_CONFIG + "reservedSystemCPUs: \"2-3\"\ncpuManagerPolicyOptions:\n  full-pcpus-only: \"true\"\n"
    merged = kubelet_config.merge_config_text(start, kubelet_config_fields(topology))
    assert merged is not None
    document = yaml.safe_load(merged)
    assert KubeletTopology.from_kubelet_config(document) == topology
    assert kubelet_config.running_topology(document) == kubelet_config.running_topology(kubelet_config_fields(topology))
    assert {key: value for key, value in document.items() if key not in kubelet_config.TOPOLOGY_KEYS} == {
        key: value for key, value in yaml.safe_load(KUBEADM_CONFIG).items()}
    assert kubelet_config.merge_config_text(merged, kubelet_config_fields(topology)) is None


def test_yaml_the_agent_cannot_edit_safely_is_refused() -> None:
    with pytest.raises(errors.AgentError, match="more than one YAML document"):
        kubelet_config.merge_config_text("kind: KubeletConfiguration\n---\nkind: Other\n", kubelet_config_fields(SEED))
    with pytest.raises(errors.AgentError, match="twice"):
        kubelet_config.merge_config_text("cpuManagerPolicy: none\ncpuManagerPolicy: static\n", kubelet_config_fields(SEED))


# -- systemd over D-Bus -----------------------------------------------------------------------------


def test_restart_is_a_dbus_call_that_jeepney_reads_as_restart_unit() -> None:
    from jeepney.low_level import Parser

    parser = Parser()
    parser.add_data(systemd.method_call(7, "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager",
                                       "RestartUnit", "org.freedesktop.systemd1", ("kubelet.service", "replace")))
    message = parser.get_next_message()
    assert message.header.serial == 7
    fields = {key.name: value for key, value in message.header.fields.items()}
    assert fields["path"] == "/org/freedesktop/systemd1"
    assert fields["interface"] == "org.freedesktop.systemd1.Manager"
    assert fields["member"] == "RestartUnit"
    assert fields["signature"] == "ss"
    assert message.body == ("kubelet.service", "replace")


def _fake_systemd(server: socket.socket, received: list, error: bool) -> None:
    from jeepney import new_error, new_method_return
    from jeepney.low_level import Parser

    connection, _ = server.accept()
    with connection:
        handshake = b""
        while not handshake.endswith(b"\r\n"):
            handshake += connection.recv(1)
        received.append(handshake)
        connection.sendall(b"OK 1234deadbeef\r\n")
        begin = b""
        while not begin.endswith(b"\r\n"):
            begin += connection.recv(1)
        parser = Parser()
        message = None
        while message is None:
            parser.add_data(connection.recv(4096))
            message = parser.get_next_message()
        received.append(message)
        if error:
            reply = new_error(message, "org.freedesktop.systemd1.NoSuchUnit", "s", ("Unit kubelet.service not found.",))
        else:
            reply = new_method_return(message, "o", ("/org/freedesktop/systemd1/job/42",))
        connection.sendall(reply.serialise(serial=1))


@pytest.mark.parametrize("error", [False, True])
def test_systemd_bus_talks_to_a_dbus_peer(tmp_path: Path, error: bool) -> None:
    path = str(tmp_path / "private")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(1)
    received: list = []
    thread = threading.Thread(target=_fake_systemd, args=(server, received, error))
    thread.start()
    try:
        bus = systemd.SystemdBus(path, timeout=5)
        if error:
            with pytest.raises(errors.AgentError, match="systemd refused StopUnit.*NoSuchUnit.*not found"):
                bus.stop("kubelet.service")
        else:
            bus.restart("kubelet.service")
    finally:
        thread.join(5)
        server.close()
    handshake, message = received
    assert handshake == b"\0AUTH EXTERNAL " + str(os.getuid()).encode().hex().encode() + b"\r\n"
    assert message.body == ("kubelet.service", "replace")


def test_unreachable_systemd_is_an_agent_error(tmp_path: Path) -> None:
    with pytest.raises(errors.AgentError, match="cannot reach systemd"):
        systemd.SystemdBus(str(tmp_path / "missing")).restart("kubelet.service")


def test_probe_reflects_the_last_status(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    status = tmp_path / "status.json"
    monkeypatch.setenv("STATUS_FILE", str(status))
    assert entry.main(["agent", "probe"]) == 1
    status.write_text(json.dumps({"ready": False, "message": "waiting"}))
    assert entry.main(["agent", "probe"]) == 1
    status.write_text(json.dumps({"ready": True, "message": "ok"}))
    assert entry.main(["agent", "probe"]) == 0


def test_a_queued_restart_is_waited_for_not_mistaken_for_the_new_kubelet(tmp_path: Path) -> None:
    fake = make_host(tmp_path)
    lease = FakeLease()
    agent = make_agent(fake, lease=lease)
    fake.restart = lambda unit: fake.calls.append(f"restart {unit}")  # systemd has queued the job, not run it
    status = agent.reconcile()
    assert not status.ready and "waiting for systemd to restart" in status.message
    assert lease.holder == "node-a" and lease.released == 0
    fake._kill()
    fake._spawn()  # the job runs
    assert agent.reconcile().ready and lease.released == 1 and fake.calls == ["restart kubelet.service"]


# -- property: merging into any block-YAML config means exactly "the rest, plus the topology" ------


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_names = st.from_regex(r"[a-z][a-zA-Z]{0,12}", fullmatch=True).filter(lambda n: n not in kubelet_config.TOPOLOGY_KEYS)
_scalars = st.one_of(st.integers(-5, 10**6), st.booleans(), st.text(st.characters(codec="ascii", exclude_categories=["Cc"]), max_size=30))
_values = st.recursive(_scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                         st.dictionaries(_names, inner, max_size=3)), max_leaves=6)
_existing_topology = st.fixed_dictionaries({}, optional={
    "topologyManagerPolicy": st.sampled_from(["none", "best-effort", "restricted"]),
    "cpuManagerPolicy": st.sampled_from(["none", "static"]),
    "reservedSystemCPUs": st.sampled_from(["0", "0-1", "2,3"]),
    "cpuManagerPolicyOptions": st.just({"full-pcpus-only": "true"}),
})
_topologies = st.sampled_from([
    SEED, STATIC,
    KubeletTopology.model_validate({"policy": "single-numa-node", "scope": "pod", "policyOptions": {"prefer-closest-numa-nodes": True}}),
    KubeletTopology.model_validate({"policy": "best-effort", "policyOptions": {"max-allowable-numa-nodes": 16}}),
])


def test_a_quoted_top_level_key_is_read_and_kept():
    # yaml.safe_dump quotes a key that reads as a YAML 1.1 word; the agent once refused the file for it.
    text = "'no': 1\ntopologyManagerPolicy: none\n"
    merged = kubelet_config.merge_config_text(text, {"topologyManagerPolicy": "restricted"})
    assert merged is not None and yaml.safe_load(merged) == {"no": 1, "topologyManagerPolicy": "restricted"}


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(_names, _values, max_size=6), _existing_topology, _topologies, st.booleans())
def test_merging_keeps_every_other_key_and_sets_exactly_the_topology(rest, existing, topology, as_json) -> None:
    document = {**rest, **existing}
    text = json.dumps(document, indent=2) if as_json else yaml.safe_dump(document, sort_keys=False, default_flow_style=False)
    desired = kubelet_config_fields(topology)
    merged = kubelet_config.merge_config_text(text, desired)
    if merged is None:
        assert kubelet_config.running_topology(document) == kubelet_config.running_topology(desired)
        return
    assert yaml.safe_load(merged) == {**rest, **desired}
    assert kubelet_config.merge_config_text(merged, desired) is None  # idempotent: a second pass changes nothing
