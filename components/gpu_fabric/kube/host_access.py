"""Which workloads reach into the kubelet: its configuration files, its service manager, its process.

Changing a node's kubelet is the most privileged thing a fabric stack does, and exactly one part
of gpu-fabric does it: the ``KubeletTopologyAgent`` DaemonSet. This module decides, from a manifest
alone, (a) whether a pod spec reaches the kubelet and (b) whether the agent stays within the host
access it needs. The component checks its own DaemonSet with it before registering anything, and
the ``kubelet-host-access`` policy checks every workload of a stack with it.
"""

from __future__ import annotations

import posixpath
from typing import Any, Mapping

from gpu_fabric.findings import FieldPath, Finding, ObjectRef, Rule
from gpu_fabric.kube.topology_agent import COMPONENT_ANNOTATION, SYSTEMD_SOCKET, TOPOLOGY_AGENT

KUBELET_HOST_ACCESS = Rule(
    "kubelet-host-access",
    "only gpu-fabric's kubelet topology agent reaches into the kubelet, and it stays within the access it needs",
    "https://kubernetes.io/docs/concepts/security/pod-security-standards/", policy="kubelet-host-access")

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


def _agent_excess(pod_spec: Mapping[str, Any]) -> list[tuple[FieldPath, str]]:
    """``(path in the pod spec, what)`` of every host access of an agent pod beyond its needs."""
    excess: list[tuple[FieldPath, str]] = []
    for flag in ("hostNetwork", "hostIPC"):
        if pod_spec.get(flag) is True:
            excess.append((FieldPath.of(flag), f"{flag}: true"))
    for path in _host_paths(pod_spec):
        if path != SYSTEMD_SOCKET and not any(_inside(path, kubelet) for kubelet in KUBELET_HOST_PATHS[:2]):
            excess.append((FieldPath.of("volumes"),
                           f"hostPath {path} (only {SYSTEMD_SOCKET} and directories under {', '.join(KUBELET_HOST_PATHS[:2])})"))
    for key, index, container in _containers_at(pod_spec):
        name = container.get("name", "?")
        context = container.get("securityContext") or {}
        capabilities = context.get("capabilities") or {}
        where = FieldPath.of(key, index, "securityContext")
        if context.get("privileged") is True:
            excess.append((where, f"container {name}: privileged"))
        if context.get("allowPrivilegeEscalation") is not False:
            excess.append((where, f"container {name}: allowPrivilegeEscalation is not false"))
        if capabilities.get("add"):
            excess.append((where, f"container {name}: adds capabilities {list(capabilities['add'])}"))
        if "ALL" not in (capabilities.get("drop") or []):
            excess.append((where, f"container {name}: does not drop ALL capabilities"))
    return excess


def _containers_at(pod_spec: Mapping[str, Any]) -> list[tuple[str, int, Mapping[str, Any]]]:
    return [(key, index, container) for key in ("initContainers", "containers")
            for index, container in enumerate(pod_spec.get(key) or []) if isinstance(container, Mapping)]


def topology_agent_excess(pod_spec: Mapping[str, Any]) -> list[str]:
    """Host access of a topology agent pod beyond what restarting the kubelet needs ([] when none).

    Needed: the host PID namespace (the kubelet's command line), uid 0 without any capability,
    systemd's private socket, and kubelet directories. Anything else is excess.
    """
    return [what for _, what in _agent_excess(pod_spec)]


def host_access_findings(manifest: Mapping[str, Any], pod_spec: Mapping[str, Any],
                         subject: ObjectRef | None = None) -> list[Finding]:
    """What a workload reaching the kubelet without being the agent, or an agent with excess access, is refused.

    ``pod_spec`` is the workload's pod spec; ``subject`` names the workload in the findings, whose paths are
    relative to the pod spec (an agent's container excess is at that container's ``securityContext``).
    """
    if is_topology_agent(manifest):
        return [Finding.of(KUBELET_HOST_ACCESS, where, f"kubelet topology agent exceeds the host access it needs: {item}",
                           subject=subject) for where, item in _agent_excess(pod_spec)]
    reasons = kubelet_access(pod_spec)
    if not reasons:
        return []
    return [Finding.of(KUBELET_HOST_ACCESS, "", (
        f"reaches the kubelet's configuration or service manager ({'; '.join(reasons)}); only gpu-fabric's "
        "kubelet topology agent is expected to"), subject=subject)]
