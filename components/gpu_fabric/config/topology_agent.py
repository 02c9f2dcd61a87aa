"""``topologyAgent`` of a pool: deliver its kubelet topology to nodes the stack does not provision."""

from __future__ import annotations

import posixpath
import re
from typing import Any

from pydantic import Field, field_validator

from gpu_fabric.config.base import SpecModel

# The directories the agent may write by default: kubeadm's /var/lib/kubelet/config.yaml (and the
# kubelet root dir holding cpu_manager_state), and /etc/kubernetes, where --config-dir drop-in
# directories and EKS's kubelet config live.
DEFAULT_HOST_PATHS = ("/etc/kubernetes", "/var/lib/kubelet")
# Pinned by tag; pin a digest of the image you validate against in production. The agent needs
# only the Python standard library.
DEFAULT_AGENT_IMAGE = "python:3.12-slim"
_UNIT = re.compile(r"^[A-Za-z0-9:_.\\@-]+\.service\Z", re.ASCII)


class TopologyAgentSpec(SpecModel):
    """How the ``KubeletTopologyAgent`` DaemonSet reaches a pool's nodes. ``topologyAgent: true`` takes the defaults."""

    namespace: str = "kube-system"
    """Namespace of the agent's DaemonSet, ConfigMap, restart Lease and ServiceAccount."""
    image: str = DEFAULT_AGENT_IMAGE
    """Image with ``python3`` (standard library only)."""
    host_paths: list[str] = Field(default_factory=lambda: list(DEFAULT_HOST_PATHS))
    """Host directories the agent may write: they must hold the kubelet's ``--config`` file or ``--config-dir``
    and its ``--root-dir``. Nothing else of the host is mounted."""
    kubelet_unit: str = "kubelet.service"
    """The systemd unit that runs the kubelet."""

    @field_validator("host_paths")
    @classmethod
    def _host_paths(cls, paths: list[str]) -> list[str]:
        if not paths:
            raise ValueError("hostPaths needs at least the directory of the kubelet's config file")
        normal = []
        for path in paths:
            clean = posixpath.normpath(path)
            if not path.startswith("/") or clean != path.rstrip("/") or clean == "/":
                raise ValueError(f"hostPaths entry {path!r} must be an absolute, normalised directory other than /")
            normal.append(clean)
        for path in normal:
            for other in normal:
                if path != other and other.startswith(path + "/"):
                    raise ValueError(f"hostPaths {other!r} lies inside {path!r}; list the outer directory only")
        if len(set(normal)) != len(normal):
            raise ValueError("hostPaths lists a directory twice")
        return sorted(normal)

    @field_validator("kubelet_unit")
    @classmethod
    def _unit(cls, unit: str) -> str:
        if not _UNIT.fullmatch(unit):
            raise ValueError(f"kubeletUnit {unit!r} is not a systemd service unit name such as 'kubelet.service'")
        return unit


def topology_agent_input(value: Any) -> Any:
    """``true`` means the defaults, ``false`` (or nothing) no agent; a mapping is the full setting."""
    if value is True:
        return {}
    if value is False:
        return None
    return value
