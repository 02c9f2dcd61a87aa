"""The ``KubeletTopologyAgent`` objects of one pool, as plain manifests.

For a pool whose nodes the stack does not provision (so no user data can carry the kubelet
topology), one DaemonSet on exactly the pool's nodes runs :mod:`gpu_fabric.kubelet_agent`,
which installs :func:`gpu_fabric.kube.topology.kubelet_config_dropin` on the node and restarts the
kubelet, one node at a time. The objects:

* an immutable ConfigMap named by the digest of what it carries (the agent's modules, the drop-in,
  the topology keys): running pods never see their settings change underneath them;
* a ``coordination.k8s.io`` Lease: the pool-wide restart lock;
* a ServiceAccount, a Role on exactly that Lease, and a ClusterRole for ``nodes/configz`` (the
  readiness check) and ``nodes`` get (is the node cordoned before a CPU manager policy change?);
* the DaemonSet, whose pod template carries the digest, so a settings change rolls it.

One node at a time, twice over: the DaemonSet rolls with ``maxUnavailable: 1`` and a pod is Ready
only when its kubelet's ``/configz`` shows the settings, so a rollout moves to the next node only
after the previous kubelet came back with them; and since a DaemonSet *creation* (or a new node
joining) starts all pods at once, each pod also holds the Lease from before its write until its
kubelet reports the settings.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
from importlib import resources
from typing import Any, Mapping, Sequence

from gpu_fabric.kube.device_plugins import MANAGED_BY, tolerations_for_taints
from gpu_fabric.config.topology import KubeletTopology
from gpu_fabric.kube.topology import DROPIN_PATH, kubelet_config_dropin_yaml, kubelet_config_fields

COMPONENT_ANNOTATION = "gpu-fabric.io/component"
"""Annotation naming the gpu-fabric part a workload is; the host-access policy reads it."""
TOPOLOGY_AGENT = "kubelet-topology-agent"
DIGEST_ANNOTATION = "gpu-fabric.io/settings-digest"
POOL_ANNOTATION = "gpu-fabric.io/pool"

TOPOLOGY_KEY = "topology.json"
DROPIN_NAME = posixpath.basename(DROPIN_PATH)
SETTINGS_DIR = "/etc/gpu-fabric"
AGENT_PACKAGE = "kubelet_agent"
"""The top-level package name the agent's modules are mounted as (under :data:`AGENT_PATH`)."""
AGENT_PATH = "/opt/gpu-fabric"
HOST_ROOT = "/host"
STATUS_DIR = "/run/gpu-fabric"
SYSTEMD_SOCKET = "/run/systemd/private"
"""systemd's private D-Bus socket, the one ``systemctl`` uses as root; the only way in to the service manager."""


def agent_modules() -> dict[str, str]:
    """The node program's modules (file name -> source), exactly as the package ships them."""
    package = resources.files("gpu_fabric.kubelet_agent")
    return {entry.name: entry.read_text(encoding="utf-8")
            for entry in sorted(package.iterdir(), key=lambda entry: entry.name) if entry.name.endswith(".py")}


def agent_name(pool: str) -> str:
    """``kubelet-topology-<pool>``, shortened with a hash to stay a 63-character label value."""
    name = f"kubelet-topology-{pool}"
    if len(name) <= 63:
        return name
    digest = hashlib.sha256(pool.encode()).hexdigest()[:8]
    return f"{name[:54].rstrip('-.')}-{digest}"


def settings_data(topology: KubeletTopology) -> dict[str, str]:
    """The ConfigMap data: the agent's modules, the drop-in file and the topology keys (for merging and ``/configz``)."""
    return {
        DROPIN_NAME: kubelet_config_dropin_yaml(topology),
        TOPOLOGY_KEY: json.dumps(kubelet_config_fields(topology), sort_keys=True, indent=2) + "\n",
        **agent_modules(),
    }


def settings_digest(data: Mapping[str, str]) -> str:
    """sha256 over the ConfigMap data (keys sorted): equal settings, equal digest."""
    hasher = hashlib.sha256()
    for key in sorted(data):
        hasher.update(key.encode() + b"\0" + data[key].encode() + b"\0")
    return hasher.hexdigest()


def _host_volume_name(index: int) -> str:
    return f"host-dir-{index}"


def topology_agent_manifests(
    *,
    pool: str,
    topology: KubeletTopology,
    node_labels: Mapping[str, str],
    taints: Sequence[Mapping[str, Any]] = (),
    namespace: str = "kube-system",
    image: str,
    host_paths: Sequence[str],
    kubelet_unit: str = "kubelet.service",
) -> list[dict[str, Any]]:
    """Every object of one pool's agent, in apply order (ConfigMap, Lease, RBAC, DaemonSet)."""
    name = agent_name(pool)
    data = settings_data(topology)
    digest = settings_digest(data)
    config_map_name = f"{name[:52].rstrip('-.')}-{digest[:10]}"
    lease_name = f"{name}-restart"
    labels = {"app.kubernetes.io/name": TOPOLOGY_AGENT, "app.kubernetes.io/instance": name,
              "app.kubernetes.io/managed-by": MANAGED_BY}
    selector = {"app.kubernetes.io/name": TOPOLOGY_AGENT, "app.kubernetes.io/instance": name}
    annotations = {COMPONENT_ANNOTATION: TOPOLOGY_AGENT, POOL_ANNOTATION: pool}

    def metadata(object_name: str, *, namespaced: bool = True) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": object_name, "labels": dict(labels), "annotations": dict(annotations)}
        if namespaced:
            meta["namespace"] = namespace
        return meta

    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata(config_map_name),
                  # Immutable and named by content: pods of the previous revision keep their settings
                  # until the rolling update replaces them.
                  "immutable": True, "data": data}
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": metadata(lease_name), "spec": {}}
    service_account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": metadata(name)}
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": metadata(name), "rules": [
        # Exactly the pool's restart lock; the stack creates it, so no create permission is needed.
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "resourceNames": [lease_name],
         "verbs": ["get", "update"]},
    ]}
    cluster_role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                    "metadata": metadata(name, namespaced=False), "rules": [
        # Readiness: the kubelet authorises GET /configz as nodes/configz (fine-grained kubelet
        # authorization, Kubernetes >= 1.33). nodes/proxy, which older kubelets ask for instead, is
        # deliberately not granted: it would allow exec into every pod of the node.
        {"apiGroups": [""], "resources": ["nodes/configz"], "verbs": ["get"]},
        # Is this node cordoned (kubectl drain) before the CPU manager policy changes?
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]},
    ]}
    subject = [{"kind": "ServiceAccount", "name": name, "namespace": namespace}]
    role_binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": metadata(name),
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name}, "subjects": subject}
    cluster_role_binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                            "metadata": metadata(name, namespaced=False),
                            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
                            "subjects": subject}
    daemonset = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": metadata(name),
        "spec": {
            "selector": {"matchLabels": dict(selector)},
            # One pod replaced at a time, never two on a node; the next only once this one is Ready,
            # i.e. once its kubelet reports the new settings (see the module docstring).
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
            "revisionHistoryLimit": 5,
            "template": {
                "metadata": {"labels": dict(labels),
                             "annotations": {**annotations, DIGEST_ANNOTATION: digest}},
                "spec": _pod_spec(name=name, config_map=config_map_name, modules=sorted(agent_modules()),
                                  lease=lease_name, image=image,
                                  host_paths=host_paths, kubelet_unit=kubelet_unit, node_labels=node_labels, taints=taints),
            },
        },
    }
    return [config_map, lease, service_account, role, role_binding, cluster_role, cluster_role_binding, daemonset]


def _pod_spec(*, name: str, config_map: str, modules: Sequence[str], lease: str, image: str, host_paths: Sequence[str], kubelet_unit: str,
              node_labels: Mapping[str, str], taints: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    field = lambda path: {"fieldRef": {"fieldPath": path}}  # noqa: E731
    environment = [
        {"name": "NODE_NAME", "valueFrom": field("spec.nodeName")},
        {"name": "HOST_IP", "valueFrom": field("status.hostIP")},
        {"name": "POD_NAMESPACE", "valueFrom": field("metadata.namespace")},
        {"name": "LEASE_NAME", "value": lease},
        {"name": "DROPIN_NAME", "value": DROPIN_NAME},
        {"name": "HOST_ROOT", "value": HOST_ROOT},
        {"name": "HOST_PATHS", "value": ":".join(host_paths)},
        {"name": "SETTINGS_DIR", "value": SETTINGS_DIR},
        {"name": "STATUS_FILE", "value": f"{STATUS_DIR}/status.json"},
        {"name": "SYSTEMD_SOCKET", "value": SYSTEMD_SOCKET},
        {"name": "KUBELET_UNIT", "value": kubelet_unit},
        {"name": "PYTHONPATH", "value": AGENT_PATH},
        {"name": "PYTHONDONTWRITEBYTECODE", "value": "1"},
    ]
    program = ["python3", "-m", AGENT_PACKAGE]
    container = {
        "name": "agent",
        "image": image,
        "command": [*program, "run"],
        "env": environment,
        "securityContext": {
            # uid 0: systemd takes private-socket calls only from root (it checks the peer's uid),
            # and the kubelet's files are root's. No capability is needed for either: root owns
            # those files, so plain owner permissions apply, and D-Bus needs none.
            "runAsUser": 0,
            "runAsNonRoot": False,
            "privileged": False,
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "readOnlyRootFilesystem": True,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "readinessProbe": {"exec": {"command": [*program, "probe"]}, "periodSeconds": 10, "timeoutSeconds": 5},
        "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "128Mi"}},
        "volumeMounts": [
            {"name": "settings", "mountPath": SETTINGS_DIR, "readOnly": True},
            {"name": "agent", "mountPath": f"{AGENT_PATH}/{AGENT_PACKAGE}", "readOnly": True},
            # Read-write: the drop-in / config file and its backup are written here, and
            # cpu_manager_state is removed from the kubelet root dir. Only these directories.
            *({"name": _host_volume_name(index), "mountPath": f"{HOST_ROOT}{path}"} for index, path in enumerate(host_paths)),
            # The service manager: restart (or stop/start) the kubelet unit, nothing else is reachable.
            {"name": "systemd-socket", "mountPath": SYSTEMD_SOCKET},
            # The readiness status the probe reads; the root filesystem stays read-only.
            {"name": "status", "mountPath": STATUS_DIR},
        ],
    }
    tolerations = tolerations_for_taints(taints)
    return {
        # The host's PID namespace: the running kubelet's command line (/proc/<pid>/cmdline) is the
        # only place its effective --config / --config-dir / --root-dir exist (flags may come from
        # environment files). Nothing else: no hostNetwork, no hostIPC.
        "hostPID": True,
        "serviceAccountName": name,
        "nodeSelector": dict(sorted(node_labels.items())),
        **({"tolerations": tolerations} if tolerations else {}),
        # The agent restarts the kubelet; it must not be evicted half-way for ordinary workloads.
        "priorityClassName": "system-node-critical",
        "terminationGracePeriodSeconds": 30,
        "containers": [container],
        "volumes": [
            # One ConfigMap, two views: the settings, and the agent's modules as a package.
            {"name": "settings", "configMap": {"name": config_map, "items": [
                {"key": key, "path": key} for key in (DROPIN_NAME, TOPOLOGY_KEY)]}},
            {"name": "agent", "configMap": {"name": config_map, "items": [{"key": key, "path": key} for key in modules]}},
            *({"name": _host_volume_name(index), "hostPath": {"path": path, "type": "Directory"}}
              for index, path in enumerate(host_paths)),
            {"name": "systemd-socket", "hostPath": {"path": SYSTEMD_SOCKET, "type": "Socket"}},
            {"name": "status", "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}},
        ],
    }


def topology_agent_for_pool(args: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The agent's manifests for ``KubeletTopologyAgentArgs``-shaped ``args`` (snake_case keys).

    Raises ``ValueError`` naming the argument when the topology is one the kubelet would refuse.
    """
    from pydantic import ValidationError

    from gpu_fabric.config.base import ConfigError
    from gpu_fabric.config.topology_agent import DEFAULT_AGENT_IMAGE, DEFAULT_HOST_PATHS, TopologyAgentSpec

    from gpu_fabric.config.pool import labels_identify_pool

    pool = args.get("pool") or {}
    if not pool.get("name"):
        raise ValueError("pool.name: the pool's name is required")
    if not labels_identify_pool(pool.get("labels") or {}):
        # The labels are the DaemonSet's node selector: without one that only the pool's nodes
        # carry, the agent would restart the kubelet of every node in the cluster.
        raise ValueError(f"pool.labels: {sorted(pool.get('labels') or {}) or 'no labels'} select every node of the cluster; "
                         "add a label that only this pool's nodes carry")
    try:
        topology = KubeletTopology.model_validate(dict(pool.get("topology") or {}))
        settings = TopologyAgentSpec.model_validate({
            key: args[key] for key in ("namespace", "image", "host_paths", "kubelet_unit") if args.get(key) is not None})
    except ValidationError as error:
        raise ConfigError.from_validation_error(error) from None
    return topology_agent_manifests(
        pool=pool["name"],
        topology=topology,
        node_labels=dict(pool.get("labels") or {}),
        taints=list(pool.get("taints") or []),
        namespace=settings.namespace,
        image=settings.image or DEFAULT_AGENT_IMAGE,
        host_paths=settings.host_paths or list(DEFAULT_HOST_PATHS),
        kubelet_unit=settings.kubelet_unit,
    )


def topology_agent_daemonset(args: Mapping[str, Any]) -> dict[str, Any]:
    """Just the DaemonSet of :func:`topology_agent_for_pool`."""
    return next(m for m in topology_agent_for_pool(args) if m["kind"] == "DaemonSet")
