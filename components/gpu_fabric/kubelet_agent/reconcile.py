"""One node's reconcile pass: plan the file, change it only when needed under the Lease, then compare /configz."""

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Optional

from .errors import AgentError
from .host_files import HostFiles
from .kubelet import CPU_MANAGER_STATE_FILE, KubeletProcess, find_kubelet
from .kubelet_config import TOPOLOGY_KEYS, merge_config_text, running_topology

BACKUP_SUFFIX = ".gpu-fabric.bak"
# Written before the first change and removed once /configz agrees: a pod that dies between writing
# the file and seeing the restarted kubelet finishes the restart instead of leaving it half-applied.
PENDING_SUFFIX = ".gpu-fabric.pending"



# -- the plan ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """What this node needs: the file to write (``content`` ``None`` when it already holds the settings)."""

    mode: str
    """``drop-in`` or ``config-file``."""
    host_path: str
    """The file on the host, every symbolic link resolved inside the mounted directories."""
    content: Optional[bytes]
    previous: Optional[bytes] = None
    """What the file holds now (``None``: absent): restored when a change fails half-way."""
    backup: Optional[str] = None
    """Host path of the backup kept of a merged config file."""

    @property
    def pending(self) -> str:
        """Host path of the marker written before a change and removed once /configz agrees."""
        return self.host_path + PENDING_SUFFIX


def _config_text(data: bytes, host_path: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise AgentError(f"{host_path} is not UTF-8 text (byte 0x{data[error.start]:02x} at offset {error.start}); "
                         "edit it by hand; nothing was changed") from None


def make_plan(kubelet: KubeletProcess, files: HostFiles, dropin_name: str, dropin: bytes, desired: Dict[str, Any]) -> Plan:
    """Decide where the settings go on this node and whether the file must change."""
    if kubelet.topology_flags:
        raise AgentError(
            f"the kubelet (pid {kubelet.pid}) sets {', '.join(kubelet.topology_flags)} on its command line, which overrides "
            "every config file; remove the flag from its unit, then the agent applies the pool's settings; nothing was changed")
    if kubelet.config_dir:
        host_path = files.resolve(os.path.join(kubelet.config_dir, dropin_name))
        current = files.read(host_path)
        return Plan("drop-in", host_path, None if current == dropin else dropin, current)
    host_path = files.resolve(kubelet.config)
    data = files.read(host_path)
    if data is None:
        raise AgentError(f"the kubelet's --config file {kubelet.config} does not exist; nothing was changed")
    merged = merge_config_text(_config_text(data, host_path), desired)
    return Plan("config-file", host_path, None if merged is None else merged.encode(), data, host_path + BACKUP_SUFFIX)


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
        """One pass: identify, plan, change (only if needed, under the lease), then compare /configz.

        Never raises: every reason not to go on -- including one nobody foresaw -- becomes a not-Ready
        status with the reason, so the pod keeps running and says why instead of crash-looping.
        """
        try:
            return self._reconcile()
        except AgentError as error:
            return Status(False, str(error))
        except Exception as error:  # noqa: BLE001 - a status to publish, never a crash loop on a node
            return Status(False, f"unexpected {type(error).__name__}: {error}; the agent stopped this pass")

    def _reconcile(self) -> Status:
        kubelet = find_kubelet(self.proc)
        plan = make_plan(kubelet, self.files, self.dropin_name, self.dropin, self.desired)
        changed = False
        # A pending marker naming the running kubelet means the file was written but the restart never
        # happened (the pod died in between); a marker naming another pid means it did: only wait then.
        if plan.content is not None or _marker_pid(self.files, plan.pending) == kubelet.pid:
            outcome = self._apply(kubelet, plan)
            if outcome is not None:
                return outcome
            changed = True
            kubelet = self._wait_for_new_kubelet(kubelet.pid) or kubelet
        return self._check(kubelet, plan.pending, changed)

    def _refuse_odd_files(self, plan: Plan, state_file: str) -> None:
        # Checked before the lease, before stopping anything: a directory, FIFO or device where a file
        # belongs would otherwise fail half-way through the change.
        # The marker and the backup are the agent's own files: not even a link inside the mounts is
        # followed there (a link to the kubelet's kubeconfig would have it overwritten).
        own = [plan.pending] + ([plan.backup] if plan.backup else [])
        for host_path, follow in [(plan.host_path, True), (state_file, True), *((path, False) for path in own)]:
            kind = self.files.kind(host_path, follow=follow)
            if kind not in (None, "file"):
                raise AgentError(f"{host_path} is {kind} where the agent expects a regular file (or nothing); "
                                 "remove it; nothing was changed")

    def _apply(self, kubelet: KubeletProcess, plan: Plan) -> Optional[Status]:
        files = self.files
        state_file = files.resolve(os.path.join(kubelet.root_dir, CPU_MANAGER_STATE_FILE))
        self._refuse_odd_files(plan, state_file)
        state = files.read(state_file)
        current_policy = _state_policy(state) if state is not None else None
        wanted_policy = self.desired.get("cpuManagerPolicy", "none")
        cpu_policy_changes = current_policy is not None and current_policy != wanted_policy
        if cpu_policy_changes and not self.cordoned():
            return Status(False, (
                f"the CPU manager policy changes from {current_policy!r} to {self.desired.get('cpuManagerPolicy')!r}: "
                "cordon and drain this node first (kubectl drain --ignore-daemonsets), as the kubelet documentation "
                "requires; nothing was changed"))
        if not self.lease.acquire():
            return Status(False, f"waiting for the restart lease, held by {self.lease.holder_now() or 'another node'}; nothing was changed yet")
        try:
            files.write(plan.pending, str(kubelet.pid).encode(), follow=False)
        except AgentError:
            self.lease.release()
            raise
        if cpu_policy_changes:
            # kubelet docs, "Changing the CPU Manager Policy": stop the kubelet, remove the state file,
            # change the policy, start the kubelet (a stale state file makes the kubelet crash-loop).
            # Any failure once the stop is asked for puts the previous files back and starts the
            # kubelet again: the agent never leaves a node without its kubelet.
            written = False
            try:
                self.services.stop(self.unit)
                self._wait_for_stop()
                files.remove(state_file)
                written = True  # from here on the config file may be half-way: restore it on failure
                self._write(plan)
                self.services.start(self.unit)
            except Exception as error:  # noqa: BLE001 - whatever failed, the kubelet must run again
                return self._roll_back(plan, state_file, state, written, error)
            self.log(f"stopped {self.unit}, removed {os.path.basename(state_file)}, wrote {plan.host_path} ({plan.mode}), "
                     f"started {self.unit}")
        else:
            try:
                self._write(plan)
            except AgentError:
                self._forget(plan)
                raise
            try:
                self.services.restart(self.unit)
            except Exception as error:  # noqa: BLE001 - the old kubelet still runs: put its file back
                return self._roll_back(plan, state_file, None, True, error, restart=False)
            self.log(f"wrote {plan.host_path} ({plan.mode}) and restarted {self.unit}")
        return None

    def _forget(self, plan: Plan) -> None:
        """Nothing is pending any more: drop the marker and hand the Lease on (best effort: it also expires)."""
        try:
            self.files.remove(plan.pending, follow=False)
        except AgentError as error:
            self.log(f"cannot remove {plan.pending}: {error}")
        try:
            self.lease.release()
        except AgentError as error:
            self.log(f"cannot release the restart lease (it expires by itself): {error}")

    def _roll_back(self, plan: Plan, state_file: str, state: Optional[bytes], written: bool, error: BaseException,
                   restart: bool = True) -> Status:
        """Put the previous configuration (and CPU manager state) back and make sure the kubelet runs."""
        problems = []
        if written and plan.content is not None:
            try:
                if plan.previous is None:
                    self.files.remove(plan.host_path)
                else:
                    self.files.write(plan.host_path, plan.previous)
            except AgentError as restore_error:
                problems.append(f"restoring {plan.host_path} failed: {restore_error}")
        if state is not None:
            try:
                if self.files.kind(state_file) is None:
                    self.files.write(state_file, state)
            except AgentError as restore_error:
                problems.append(f"restoring {state_file} failed: {restore_error}")
        if restart:
            try:
                self.services.start(self.unit)
            except Exception as start_error:  # noqa: BLE001 - said in the status, loudly
                problems.append(f"starting {self.unit} again failed too ({start_error}): THE KUBELET MAY BE STOPPED, "
                                f"start it by hand (systemctl start {self.unit})")
        self._forget(plan)
        what = "started it again with the previous configuration" if restart else "put the previous configuration back"
        message = f"changing the kubelet configuration failed ({error}); {what}"
        if problems:
            message += "; " + "; ".join(problems)
        self.log(message)
        return Status(False, message)

    def _write(self, plan: Plan) -> None:
        if plan.content is None:
            return  # an earlier pass wrote it; only the restart was left
        if plan.backup is not None and plan.previous is not None:
            self.files.write(plan.backup, plan.previous, follow=False)
        self.files.write(plan.host_path, plan.content)

    def _wait_for_stop(self) -> None:
        waited = 0.0
        while waited < self.stop_timeout:
            try:
                find_kubelet(self.proc)
            except AgentError:
                return
            self.sleep(1.0)
            waited += 1.0
        raise AgentError(f"{self.unit} did not stop within {self.stop_timeout:.0f}s")

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

    def _check(self, kubelet: KubeletProcess, pending: str, changed: bool) -> Status:
        wanted = running_topology(self.desired)
        if _marker_pid(self.files, pending) == kubelet.pid:
            self.lease.acquire()  # renew: this node's restart is still queued
            return Status(False, f"waiting for systemd to restart {self.unit} (pid {kubelet.pid} still runs)", changed)
        try:
            running = running_topology(self.configz(kubelet))
        except AgentError as error:
            if self.files.kind(pending, follow=False) is not None:
                self.lease.acquire()  # renew while this node's kubelet comes back
            return Status(False, str(error), changed)
        # /configz answers only once the restarted kubelet has loaded its files: what it shows now is
        # what this node runs with, so the restart is over either way and the next node may go.
        if self.files.kind(pending, follow=False) is not None:
            self.files.remove(pending, follow=False)
            self.lease.release()
        differing = {key: running[key] for key in TOPOLOGY_KEYS if running[key] != wanted[key]}
        if not differing:
            return Status(True, "the kubelet reports the pool's topology settings", changed)
        return Status(False, (
            f"the kubelet's files hold the pool's settings but /configz shows {differing}: another configuration "
            "source overrides them (a later drop-in file, or a key of the main config file that a drop-in cannot unset); "
            "not restarting again"), changed)


def _marker_pid(files: HostFiles, marker: str) -> Optional[int]:
    data = files.read(marker, limit=64, follow=False)
    if data is None:
        return None
    try:
        return int(data.decode("ascii").strip())
    except ValueError:
        return None


def _state_policy(state: bytes) -> str:
    try:
        document = json.loads(state)
    except (ValueError, RecursionError):
        return "unreadable"
    if not isinstance(document, dict):
        return "unreadable"
    return str(document.get("policyName") or "none")


def kubelet_certificate(kubelet: KubeletProcess, files: HostFiles) -> Optional[bytes]:
    """The kubelet's serving certificate from the node, if it is self-signed and readable."""
    candidates = [kubelet.tls_cert_file] if kubelet.tls_cert_file else [os.path.join(kubelet.cert_dir, "kubelet.crt")]
    for host_path in candidates:
        try:
            found = files.read(host_path, limit=1 << 20)
        except AgentError:
            continue
        if found is not None:
            return found
    return None
