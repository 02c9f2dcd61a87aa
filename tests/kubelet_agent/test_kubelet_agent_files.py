"""The node agent's files cannot be redirected, and no failure leaves the kubelet stopped or the pod crash-looping.

Against the fake host of ``test_kubelet_agent_script``: planted symbolic links, directories and FIFOs
where files belong, text that is not UTF-8, a read-only folder, and failures after the kubelet was
stopped. Each ends not Ready with the reason, nothing written outside the mounted directories, and
the kubelet running.
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest
import yaml

from gpu_fabric.kubelet_agent import __main__ as entry
from gpu_fabric.kubelet_agent import errors, host_files, reconcile
from test_kubelet_agent_script import (
    DROPIN_NAME,
    KUBEADM_CONFIG,
    STATIC,
    FakeLease,
    make_agent,
    make_host,
)

CONFIG = "/var/lib/kubelet/config.yaml"
DROPINS = "/etc/kubernetes/kubelet.conf.d"


def assert_untouched(fake, before, *, status, fragment):
    assert not status.ready and fragment in status.message, status.message
    assert fake.calls == [] and fake.kubelet_up
    assert fake.snapshot() == before


# -- links that leave the mounted directories --------------------------------------------------------


@pytest.mark.parametrize("relative", [True, False])
def test_a_config_file_linking_outside_the_mounts_is_not_read(tmp_path: Path, relative: bool) -> None:
    fake = make_host(tmp_path)
    elsewhere = fake.file("/opt/site/config.yaml")
    elsewhere.parent.mkdir(parents=True)
    elsewhere.write_text(KUBEADM_CONFIG)
    config = fake.file(CONFIG)
    config.unlink()
    config.symlink_to("../../../opt/site/config.yaml" if relative else "/opt/site/config.yaml")
    before = fake.snapshot()
    status = make_agent(fake).reconcile()
    assert_untouched(fake, before, status=status, fragment=f"{CONFIG} is a symbolic link to ")
    assert "outside the host directories mounted into the agent" in status.message
    assert elsewhere.read_text() == KUBEADM_CONFIG


def test_a_link_that_stays_inside_the_mounts_is_followed_as_the_host_would(tmp_path: Path) -> None:
    fake = make_host(tmp_path)
    real = fake.file("/etc/kubernetes/kubelet/config.yaml")
    real.parent.mkdir(parents=True)
    fake.file(CONFIG).rename(real)
    # Relative, so that the fake kubelet (which reads through the test's file system) follows it too.
    fake.file(CONFIG).symlink_to("../../../etc/kubernetes/kubelet/config.yaml")
    status = make_agent(fake).reconcile()
    assert status.ready, status.message
    assert fake.file(CONFIG).is_symlink(), "the link stays; the file it names is what changed"
    assert yaml.safe_load(real.read_text())["topologyManagerPolicy"] == "restricted"
    assert real.with_name("config.yaml" + reconcile.BACKUP_SUFFIX).read_text() == KUBEADM_CONFIG


def test_a_config_dir_that_is_a_link_outside_the_mounts_is_refused(tmp_path: Path) -> None:
    fake = make_host(tmp_path, config_dir=True)
    dropins = fake.file(DROPINS)
    dropins.rmdir()
    outside = fake.file("/tmp/evil")
    outside.mkdir(parents=True)
    dropins.symlink_to("/tmp/evil")
    before = fake.snapshot()
    status = make_agent(fake).reconcile()
    assert_untouched(fake, before, status=status, fragment=f"{DROPINS} is a symbolic link to /tmp/evil")
    assert list(outside.iterdir()) == []


@pytest.mark.parametrize("suffix", [reconcile.PENDING_SUFFIX, reconcile.BACKUP_SUFFIX])
def test_a_link_planted_at_the_pending_or_backup_path_is_not_written_through(tmp_path: Path, suffix: str) -> None:
    fake = make_host(tmp_path)
    victim = fake.file("/etc/passwd")
    victim.parent.mkdir(parents=True, exist_ok=True)
    victim.write_text("root:x:0:0\n")
    planted = fake.file(CONFIG + suffix)
    planted.symlink_to("/etc/passwd")
    before = fake.snapshot()
    status = make_agent(fake).reconcile()
    assert not status.ready and f"{CONFIG}{suffix} is a symbolic link where the agent expects" in status.message, status.message
    assert fake.calls == [] and victim.read_text() == "root:x:0:0\n" and fake.snapshot() == before


@pytest.mark.parametrize("suffix", [reconcile.PENDING_SUFFIX, reconcile.BACKUP_SUFFIX])
def test_the_agents_own_files_are_never_links_even_inside_the_mounts(tmp_path: Path, suffix: str) -> None:
    fake = make_host(tmp_path)
    kubeconfig = fake.file("/etc/kubernetes/kubelet.conf")
    kubeconfig.parent.mkdir(parents=True, exist_ok=True)
    kubeconfig.write_text("the kubelet's credentials\n")
    fake.file(CONFIG + suffix).symlink_to("/etc/kubernetes/kubelet.conf")  # inside the mounts, still not ours
    before = fake.snapshot()
    status = make_agent(fake).reconcile()
    assert_untouched(fake, before, status=status, fragment=f"{CONFIG}{suffix} is a symbolic link where the agent expects")
    assert kubeconfig.read_text() == "the kubelet's credentials\n"


def test_a_link_planted_inside_the_mounts_is_replaced_not_written_through(tmp_path: Path) -> None:
    fake = make_host(tmp_path)
    kubeconfig = fake.file("/etc/kubernetes/kubelet.conf")
    kubeconfig.parent.mkdir(parents=True, exist_ok=True)
    kubeconfig.write_text("the kubelet's credentials\n")
    # The old fixed temporary name, pointed at another mounted file: O_EXCL under a fresh name ignores it.
    fake.file("/var/lib/kubelet/.config.yaml.gpu-fabric.tmp").symlink_to("/etc/kubernetes/kubelet.conf")
    status = make_agent(fake).reconcile()
    assert status.ready, status.message
    assert kubeconfig.read_text() == "the kubelet's credentials\n"


# -- what is where a file belongs ------------------------------------------------------------------


@pytest.mark.parametrize("what", ["directory", "fifo"])
def test_a_directory_or_fifo_as_the_config_file_is_refused_without_waiting(tmp_path: Path, what: str) -> None:
    fake = make_host(tmp_path)
    config = fake.file(CONFIG)
    config.unlink()
    config.mkdir() if what == "directory" else os.mkfifo(config)
    status = make_agent(fake).reconcile()
    kind = "a directory" if what == "directory" else "a FIFO"
    assert not status.ready and f"{CONFIG} is {kind}, not a regular file" in status.message, status.message
    assert fake.calls == []


@pytest.mark.parametrize("what", ["directory", "fifo"])
def test_a_directory_or_fifo_as_the_dropin_or_marker_is_refused(tmp_path: Path, what: str) -> None:
    fake = make_host(tmp_path, config_dir=True)
    for path in (fake.file(f"{DROPINS}/{DROPIN_NAME}"), fake.file(f"{DROPINS}/{DROPIN_NAME}{reconcile.PENDING_SUFFIX}")):
        path.mkdir() if what == "directory" else os.mkfifo(path)
        status = make_agent(fake).reconcile()
        assert not status.ready and str(path.name) in status.message, status.message
        assert fake.calls == [] and fake.kubelet_up
        path.rmdir() if what == "directory" else path.unlink()


def test_a_config_file_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    fake = make_host(tmp_path)
    fake.file(CONFIG).write_bytes(KUBEADM_CONFIG.encode() + b"# caf\xe9\n")
    before = fake.snapshot()
    status = make_agent(fake).reconcile()
    assert_untouched(fake, before, status=status, fragment=f"{CONFIG} is not UTF-8 text (byte 0xe9 at offset")


@pytest.mark.parametrize("text, reason", [
    ('{"a": ' * 100_000 + "1" + "}" * 100_000, "nests JSON too deeply"),
    ('{"kind": "KubeletConfiguration"} [1]', "is not valid JSON"),
    ("[" * 100_000 + "]" * 100_000, "cannot read line 1 of the kubelet config file as block YAML"),
    ("- " * 5000 + "x\n", "cannot read line 1"),
    ("a:\n" + "".join(" " * i + "b:\n" for i in range(1, 1500)) + "--- \n", "more than one YAML document"),
])
def test_deeply_nested_or_odd_config_is_a_reason_not_a_crash(tmp_path: Path, text: str, reason: str) -> None:
    fake = make_host(tmp_path, config_text=KUBEADM_CONFIG)
    fake.file(CONFIG).write_text(text)
    before = fake.snapshot()
    status = make_agent(fake).reconcile()
    assert_untouched(fake, before, status=status, fragment=reason)


def test_host_paths_resolve_links_as_the_host_does(tmp_path: Path) -> None:
    files = host_files.HostFiles(tmp_path, ("/etc/kubernetes", "/var/lib/kubelet"))
    (tmp_path / "etc/kubernetes").mkdir(parents=True)
    (tmp_path / "var/lib/kubelet").mkdir(parents=True)
    (tmp_path / "var/lib/kubelet/real.yaml").write_text("kind: KubeletConfiguration\n")
    (tmp_path / "etc/kubernetes/config.yaml").symlink_to("/var/lib/kubelet/real.yaml")  # a host path, not ours
    assert files.resolve("/etc/kubernetes/config.yaml") == "/var/lib/kubelet/real.yaml"
    assert files.read("/etc/kubernetes/config.yaml") == b"kind: KubeletConfiguration\n"
    (tmp_path / "etc/kubernetes/loop").symlink_to("/etc/kubernetes/loop")
    with pytest.raises(errors.AgentError, match="more than 40 symbolic links"):
        files.read("/etc/kubernetes/loop")
    assert files.read("/etc/kubernetes/absent/config.yaml") is None and files.kind("/etc/kubernetes/absent") is None


def test_a_huge_config_file_is_not_read_whole(tmp_path: Path) -> None:
    fake = make_host(tmp_path)
    fake.file(CONFIG).write_bytes(b"# x\n" * (host_files.MAX_HOST_FILE_BYTES // 4 + 1))
    status = make_agent(fake).reconcile()
    assert not status.ready and "is larger than" in status.message and fake.calls == []


def test_a_read_only_folder_changes_nothing_and_keeps_the_kubelet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = make_host(tmp_path)
    real_open = os.open

    def read_only(path, flags, *args, **kwargs):
        if flags & os.O_CREAT:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        return real_open(path, flags, *args, **kwargs)

    lease = FakeLease()
    before = fake.snapshot()
    monkeypatch.setattr(host_files.os, "open", read_only)
    status = make_agent(fake, lease=lease).reconcile()
    monkeypatch.undo()
    assert_untouched(fake, before, status=status, fragment="Read-only file system")
    assert lease.holder == "", "the lease is handed back when nothing could change"


# -- never a stopped kubelet -------------------------------------------------------------------------


def test_a_cpu_manager_state_that_is_a_directory_is_refused_before_stopping(tmp_path: Path) -> None:
    fake = make_host(tmp_path)
    state = fake.file("/var/lib/kubelet/cpu_manager_state")
    state.unlink()
    state.mkdir()
    status = make_agent(fake, STATIC, cordoned=True).reconcile()
    assert not status.ready and "cpu_manager_state is a directory" in status.message, status.message
    assert fake.calls == [] and fake.kubelet_up


def test_a_failure_after_stop_starts_the_kubelet_again_with_the_previous_configuration(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = make_host(tmp_path)
    config = fake.file(CONFIG)
    state = fake.file("/var/lib/kubelet/cpu_manager_state")
    state_before = state.read_text()
    original = host_files.HostFiles.write

    def failing(self, host_path, content, follow=True):
        if host_path == CONFIG:
            raise errors.AgentError(f"cannot write {host_path}: No space left on device; nothing was changed")
        original(self, host_path, content, follow)

    monkeypatch.setattr(host_files.HostFiles, "write", failing)
    lease = FakeLease()
    status = make_agent(fake, STATIC, cordoned=True, lease=lease).reconcile()
    assert not status.ready and "No space left on device" in status.message
    assert "started it again with the previous configuration" in status.message
    assert fake.calls == ["stop kubelet.service", "start kubelet.service"]
    assert fake.kubelet_up and not fake.crashed and fake.running.get("cpuManagerPolicy", "none") == "none"
    assert config.read_text() == KUBEADM_CONFIG and json.loads(state.read_text()) == json.loads(state_before)
    assert lease.holder == "" and not fake.file(CONFIG + reconcile.PENDING_SUFFIX).exists()


def test_a_kubelet_that_does_not_stop_is_started_again(tmp_path: Path) -> None:
    fake = make_host(tmp_path)
    fake.stop = lambda unit: fake.calls.append(f"stop {unit}")  # systemd accepts, the kubelet keeps running
    agent = make_agent(fake, STATIC, cordoned=True)
    agent.stop_timeout = 3
    status = agent.reconcile()
    assert not status.ready and "did not stop within 3s" in status.message and "started it again" in status.message
    assert fake.calls == ["stop kubelet.service", "start kubelet.service"]
    assert fake.file(CONFIG).read_text() == KUBEADM_CONFIG


def test_a_refused_restart_puts_the_previous_file_back(tmp_path: Path) -> None:
    fake = make_host(tmp_path)

    def refused(unit):
        fake.calls.append(f"restart {unit}")
        raise errors.AgentError("systemd refused RestartUnit(kubelet.service, replace): access denied")

    fake.restart = refused
    status = make_agent(fake).reconcile()
    assert not status.ready and "access denied" in status.message and "put the previous configuration back" in status.message
    assert fake.file(CONFIG).read_text() == KUBEADM_CONFIG and fake.kubelet_up


def test_an_unforeseen_error_is_a_status_not_a_crash(tmp_path: Path) -> None:
    fake = make_host(tmp_path)

    def broken(kubelet_process):
        raise KeyError("surprise")

    agent = make_agent(fake)
    agent.configz = broken
    status = agent.reconcile()
    assert not status.ready and "unexpected KeyError" in status.message


# -- the pod keeps running, not Ready, with the reason ------------------------------------------------


def test_settings_that_cannot_be_read_keep_the_pod_running_not_ready(tmp_path: Path) -> None:
    status_file = tmp_path / "run" / "status.json"
    lines: list[str] = []

    def unreadable():
        raise UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte")

    entry.serve(status_file, unreadable, 30, sleep=lambda seconds: None, log=lines.append, passes=3)
    published = json.loads(status_file.read_text())
    assert published["ready"] is False and "cannot read the agent's settings" in published["message"]
    assert len(lines) == 1, "said once, not once per pass"


def test_a_status_file_that_cannot_be_written_is_logged_not_fatal(tmp_path: Path) -> None:
    fake = make_host(tmp_path)
    status_file = tmp_path / "status.json"
    status_file.mkdir()  # a directory where the status belongs
    lines: list[str] = []
    entry.serve(status_file, lambda: make_agent(fake), 30, sleep=lambda seconds: None, log=lines.append, passes=2)
    assert any("cannot publish the status" in line for line in lines)
    assert any(line.startswith("ready: ") for line in lines)
    assert entry.main(["agent", "probe"]) == 1


@pytest.mark.parametrize("content", [b"[true]", b"\xff\xfe", b'{"ready": "yes"}'])
def test_the_probe_fails_on_a_status_it_cannot_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: bytes) -> None:
    status = tmp_path / "status.json"
    status.write_bytes(content)
    monkeypatch.setenv("STATUS_FILE", str(status))
    assert entry.main(["agent", "probe"]) == 1
