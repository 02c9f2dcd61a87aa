"""One node's reconcile pass: plan the file, change it only when needed under the Lease, then compare /configz."""

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Optional

from . import kubelet as kubelet_files
from .errors import AgentError
from .kubelet import CPU_MANAGER_STATE_FILE, HostFiles, KubeletProcess, find_kubelet
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
    target: Path
    content: Optional[bytes]
    backup: Optional[Path]


def make_plan(kubelet: KubeletProcess, files: HostFiles, dropin_name: str, dropin: bytes, desired: Dict[str, Any]) -> Plan:
    """Decide where the settings go on this node and whether the file must change."""
    if kubelet.topology_flags:
        raise AgentError(
            f"the kubelet (pid {kubelet.pid}) sets {', '.join(kubelet.topology_flags)} on its command line, which overrides "
            "every config file; remove the flag from its unit, then the agent applies the pool's settings; nothing was changed")
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
        kubelet_files.atomic_write(pending, str(kubelet.pid).encode())
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
            kubelet_files.atomic_write(plan.backup, plan.target.read_bytes())
        kubelet_files.atomic_write(plan.target, plan.content)

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
            "source overrides them (a later drop-in file, or a key of the main config file that a drop-in cannot unset); "
            "not restarting again"), changed)


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
