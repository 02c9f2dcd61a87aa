"""This node's kubelet as the agent sees it: its process in ``/proc`` and the flags on its command line."""

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from .errors import AgentError

# The kubelet flags of the topology keys (kubelet --help; deprecated in favour of --config, still honoured).
TOPOLOGY_FLAGS = (
    "topology-manager-policy",
    "topology-manager-scope",
    "topology-manager-policy-options",
    "cpu-manager-policy",
    "cpu-manager-policy-options",
    "reserved-cpus",
)
CPU_MANAGER_STATE_FILE = "cpu_manager_state"
DEFAULT_ROOT_DIR = "/var/lib/kubelet"


@dataclass(frozen=True)
class KubeletProcess:
    """The kubelet as its command line describes it."""

    pid: int
    config: str
    config_dir: Optional[str]
    root_dir: str
    tls_cert_file: Optional[str]
    cert_dir: str
    topology_flags: Tuple[str, ...] = ()
    """Command-line flags that set topology settings; flags win over every config file."""


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
            comm = (entry / "comm").read_bytes().decode("utf-8", "replace").strip()
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
        topology_flags=tuple(sorted(f"--{name}" for name in TOPOLOGY_FLAGS if name in flags)),
    )
