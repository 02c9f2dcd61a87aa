"""Which workloads reach into the kubelet: its configuration files, its service manager, its process.

Changing a node's kubelet is the most privileged thing a fabric stack does, and exactly one part
of gpu-fabric does it: the ``KubeletTopologyAgent`` DaemonSet. This module decides, from a manifest
alone, (a) whether a pod spec reaches the kubelet and (b) whether the agent stays within the host
access it needs. The component checks its own DaemonSet with it before registering anything, and
the ``kubelet-host-access`` policy checks every workload of a stack with it.
"""

from __future__ import annotations

import posixpath
from typing import Any, Iterable, Mapping

from gpu_fabric.kube.topology_agent import COMPONENT_ANNOTATION, SYSTEMD_SOCKET, TOPOLOGY_AGENT

# Host paths through which a pod can rewrite the kubelet's configuration or drive the service
# manager that runs it.
KUBELET_HOST_PATHS = (
    "/etc/kubernetes",
    "/var/lib/kubelet",
    "/etc/systemd",
    "/run/systemd",
    "/var/run/systemd",
    "/run/dbus",
    "/var/run/dbus",
)
# Sockets under the kubelet root that device plugins and CSI drivers must share with the kubelet;
# they expose no configuration.
KUBELET_PLUGIN_PATHS = (
    "/var/lib/kubelet/device-plugins",
    "/var/lib/kubelet/plugins",
    "/var/lib/kubelet/plugins_registry",
    "/var/lib/kubelet/pod-resources",
)


def _inside(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def _host_paths(pod_spec: Mapping[str, Any]) -> list[str]:
    paths = []
    for volume in pod_spec.get("volumes") or []:
        host_path = (volume or {}).get("hostPath") if isinstance(volume, Mapping) else None
        if isinstance(host_path, Mapping) and isinstance(host_path.get("path"), str):
            paths.append(posixpath.normpath(host_path["path"]))
    return paths


def _containers(pod_spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [c for c in [*(pod_spec.get("initContainers") or []), *(pod_spec.get("containers") or [])] if isinstance(c, Mapping)]


def kubelet_access(pod_spec: Mapping[str, Any]) -> list[str]:
    """How a pod reaches the kubelet's configuration, service manager or process ([] when it does not)."""
    reasons = []
    if pod_spec.get("hostPID") is True:
        reasons.append("hostPID: true (sees and signals the kubelet process)")
    for path in _host_paths(pod_spec):
        if any(_inside(path, plugin) for plugin in KUBELET_PLUGIN_PATHS):
            continue
        if any(_inside(path, kubelet) or _inside(kubelet, path) for kubelet in KUBELET_HOST_PATHS):
            reasons.append(f"hostPath {path}")
    return reasons


def is_topology_agent(manifest: Mapping[str, Any]) -> bool:
    """A workload that declares itself gpu-fabric's kubelet topology agent."""
    annotations = (manifest.get("metadata") or {}).get("annotations") or {}
    return manifest.get("kind") == "DaemonSet" and annotations.get(COMPONENT_ANNOTATION) == TOPOLOGY_AGENT


def topology_agent_excess(pod_spec: Mapping[str, Any]) -> list[str]:
    """Host access of a topology agent pod beyond what restarting the kubelet needs ([] when none).

    Needed: the host PID namespace (the kubelet's command line), uid 0 without any capability,
    systemd's private socket, and kubelet directories. Anything else is excess.
    """
    excess = []
    for flag in ("hostNetwork", "hostIPC"):
        if pod_spec.get(flag) is True:
            excess.append(f"{flag}: true")
    for path in _host_paths(pod_spec):
        if path != SYSTEMD_SOCKET and not any(_inside(path, kubelet) for kubelet in KUBELET_HOST_PATHS[:2]):
            excess.append(f"hostPath {path} (only {SYSTEMD_SOCKET} and directories under {', '.join(KUBELET_HOST_PATHS[:2])})")
    for container in _containers(pod_spec):
        name = container.get("name", "?")
        context = container.get("securityContext") or {}
        capabilities = context.get("capabilities") or {}
        if context.get("privileged") is True:
            excess.append(f"container {name}: privileged")
        if context.get("allowPrivilegeEscalation") is not False:
            excess.append(f"container {name}: allowPrivilegeEscalation is not false")
        if capabilities.get("add"):
            excess.append(f"container {name}: adds capabilities {list(capabilities['add'])}")
        if "ALL" not in (capabilities.get("drop") or []):
            excess.append(f"container {name}: does not drop ALL capabilities")
    return excess


def host_access_findings(manifests: Iterable[tuple[str, Mapping[str, Any], Mapping[str, Any]]]) -> list[tuple[str, str]]:
    """``(label, message)`` for each workload that reaches the kubelet without being the agent, or an agent with excess.

    ``manifests`` are ``(label, workload manifest, its pod spec)``; the label is what messages name.
    """
    findings: list[tuple[str, str]] = []
    for label, manifest, pod_spec in manifests:
        if is_topology_agent(manifest):
            findings.extend((label, f"kubelet topology agent exceeds the host access it needs: {item}")
                            for item in topology_agent_excess(pod_spec))
            continue
        reasons = kubelet_access(pod_spec)
        if reasons:
            findings.append((label, (
                f"reaches the kubelet's configuration or service manager ({'; '.join(reasons)}); only gpu-fabric's "
                "kubelet topology agent is expected to")))
    return findings
