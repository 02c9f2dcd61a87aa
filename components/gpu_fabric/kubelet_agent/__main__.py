"""gpu-fabric kubelet topology agent: installs a pool's TopologyManager settings on this node's kubelet.

Runs in a DaemonSet pod on each node of a pool whose nodes gpu-fabric does not provision (the
walkthrough's step 2 done by hand: edit the kubelet configuration, restart the kubelet, check
``/configz``). Standard library only: the package is shipped verbatim in a ConfigMap and run as
``python3 -m kubelet_agent run`` (``probe`` for the readiness probe).

One reconcile pass (:meth:`reconcile.Agent.reconcile`):

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

import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, Optional, Sequence

from .cluster import SERVICE_ACCOUNT_DIR, ClusterApi, KubeletConfigz, RestartLease, node_is_cordoned
from .errors import AgentError
from .host_files import HostFiles, atomic_write
from .kubelet import KubeletProcess
from .reconcile import Agent, Status, kubelet_certificate
from .systemd import SystemdBus


def _settings(path: Path) -> Dict[str, Any]:
    desired = json.loads(path.read_bytes())
    if not isinstance(desired, dict):
        raise ValueError(f"{path} must hold a JSON object of KubeletConfiguration keys")
    return desired


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
        desired=_settings(settings_dir / "topology.json"),
        services=SystemdBus(environment.get("SYSTEMD_SOCKET", "/run/systemd/private")),
        lease=RestartLease(api, environment["POD_NAMESPACE"], environment["LEASE_NAME"], node),
        configz=configz,
        cordoned=lambda: node_is_cordoned(api, node),
        unit=environment.get("KUBELET_UNIT", "kubelet.service"),
    )


def publish(status_file: Path, status: Status, log: Callable[[str], None]) -> None:
    """Write the status the readiness probe reads; a status file that cannot be written is said, not fatal
    (the probe then finds no fresh status and the pod stays not Ready -- running, never crash-looping)."""
    try:
        atomic_write(status_file, json.dumps({"ready": status.ready, "message": status.message}).encode())
    except AgentError as error:
        log(f"not ready: cannot publish the status ({error})")


def serve(status_file: Path, make_agent: Callable[[], Agent], interval: float,
          sleep: Callable[[float], None] = time.sleep, log: Callable[[str], None] = lambda line: print(line, flush=True),
          passes: Optional[int] = None) -> None:
    """Reconcile every ``interval`` seconds (5 while not Ready), publishing each status; ``passes`` bounds it (tests).

    Nothing here ends the process: settings that cannot be read, or a pass that fails, become a
    not-Ready status with the reason, and the loop goes on.
    """
    agent: Optional[Agent] = None
    last = ""
    done = 0
    while passes is None or done < passes:
        done += 1
        if agent is None:
            try:
                agent = make_agent()
            except Exception as error:  # noqa: BLE001 - a status to publish, never a crash loop
                status = Status(False, f"cannot read the agent's settings: {type(error).__name__}: {error}; nothing was changed")
        if agent is not None:
            status = agent.reconcile()
        publish(status_file, status, log)
        if status.message != last:
            log(("ready: " if status.ready else "not ready: ") + status.message)
            last = status.message
        if passes is None or done < passes:
            sleep(interval if status.ready else min(interval, 5.0))


def main(argv: Sequence[str]) -> int:
    """``run``: reconcile forever, publishing the status; ``probe``: exit 0 only when the last status was ready."""
    status_file = Path(os.environ.get("STATUS_FILE", "/run/gpu-fabric/status.json"))
    command = argv[1] if len(argv) > 1 else "run"
    if command == "probe":
        try:
            status = json.loads(status_file.read_bytes())
        except (OSError, ValueError, RecursionError):
            print("no status yet")
            return 1
        if not isinstance(status, dict):
            print("no status yet")
            return 1
        print(status.get("message", ""))
        return 0 if status.get("ready") is True else 1
    if command != "run":
        print(f"usage: {argv[0]} run|probe", file=sys.stderr)
        return 2
    try:
        interval = float(os.environ.get("INTERVAL_SECONDS", "30"))
    except ValueError:
        interval = 30.0
    serve(status_file, agent_from_environment, interval if interval > 0 else 30.0)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
