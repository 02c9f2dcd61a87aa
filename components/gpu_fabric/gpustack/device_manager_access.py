"""What GPUStack's Device Manager may do: its ServiceAccount, RBAC and host access, and the check.

The operator chart binds the Device Manager's ServiceAccount to ``cluster-admin``
(``deploy/gpustack-operator/chart/templates/device-manager/serviceaccount.yaml``). When the stack
deploys the Device Manager itself (``devicePlugins.deviceManager.deployedBy: stack``) it grants
instead exactly the API access the Device Manager's own code uses, read in the
gpustack/gpustack-operator repository; each rule below cites the Go function that needs it.
Not granted, because the code does not use them: ``leases`` (``pkg/devicemanager/option.go``
``Options.AddFlags`` passes ``manager.WithoutKubeElectionOptions()``, which sets
``KubeLeaderElection = false`` in ``pkg/manager/option.go``), ``events`` (no event recorder in
``pkg/deviceplugin/controller.go`` ``DevicesReconciler``), ``nodes/status`` (the ``.sliced.*``
capacity patch is ``pkg/worker`` ``NodeCapacityReconciler``, which runs in the operator's worker,
not here: ``pkg/devicemanager/controllers/setup.go`` registers only ``DevicesReconciler``).

The builder (:func:`device_manager_rbac`), the component and the ``device-manager-least-privilege``
policy all read the tables of this module, so what is created is what is checked.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Optional, Sequence

from gpu_fabric.findings import Rule

DEVICE_MANAGER_LEAST_PRIVILEGE = Rule(
    "device-manager-least-privilege",
    "the Device Manager runs as its own ServiceAccount bound to exactly the access its code uses, without host "
    "namespaces or host paths beyond its own", "gpustack/gpustack-operator: pkg/devicemanager",
    policy="device-manager-least-privilege")

RBAC_API_VERSION = "rbac.authorization.k8s.io/v1"


@dataclass(frozen=True)
class AccessRule:
    """One RBAC rule the Device Manager needs, with the upstream code that needs it."""

    api_group: str
    resources: tuple[str, ...]
    verbs: tuple[str, ...]
    needed_by: str

    def as_policy_rule(self) -> dict[str, Any]:
        return {"apiGroups": [self.api_group], "resources": list(self.resources), "verbs": list(self.verbs)}


# Cluster-scoped access (ClusterRole). References are to gpustack/gpustack-operator.
CLUSTER_RULES: tuple[AccessRule, ...] = (
    AccessRule("", ("nodes",), ("get",),
               "pkg/devicemanager/detector/detector.go Detector.reportDevices: CoreV1().Nodes().Get (managed label, "
               "NodeFeature owner, waiting for NFD to apply the labels)"),
    AccessRule("", ("pods",), ("list", "watch"),
               "pkg/deviceplugin/controller.go DevicesReconciler.SetupController Watches(&core.Pod{}) and "
               "getAllocatingPod Client.List (controller-runtime cache, all namespaces)"),
    AccessRule("", ("pods",), ("patch",),
               "pkg/deviceplugin/controller.go DevicesReconciler.patchAllocatingPod: strategic-merge patch of the "
               "device.gpustack.ai/accelerator.allocated annotation"),
    AccessRule("worker.gpustack.ai", ("devices",), ("get", "create", "update"),
               "pkg/devicemanager/detector/detector.go Detector.reportDevices: kubeclientset.Create with "
               "WithUpdateIfExisted (pkg/kubeclientset/operate.go Create: Get, Create, Update)"),
    AccessRule("worker.gpustack.ai", ("devices",), ("list", "watch"),
               "pkg/deviceplugin/controller.go DevicesReconciler.SetupController For(&workercore.Devices{})"),
    AccessRule("worker.gpustack.ai", ("devices/status",), ("update",),
               "pkg/deviceplugin/controller.go DevicesReconciler.Reconcile: Client.Status().Update"),
)

# Access in the Device Manager's own namespace (Role). The NodeFeature objects live in
# kuberess.SystemNamespaceName, assumed to be the namespace the Device Manager runs in.
NAMESPACED_RULES: tuple[AccessRule, ...] = (
    AccessRule("nfd.k8s-sigs.io", ("nodefeatures",), ("get", "create", "update", "delete"),
               "pkg/devicemanager/detector/detector.go Detector.reportDevices: NodeFeatures(SystemNamespaceName) "
               "kubeclientset.Create with WithUpdateIfExisted, and kubeclientset.Delete when NFD does not apply it"),
)

# Host paths of the Device Manager DaemonSet: host path -> must the mount be read-only. The
# builder mounts exactly these (plus the vendor driver trees, all read-only); anything else is
# excess. Why each one is there is said beside the builder's table.
READ_ONLY_HOST_PATHS = frozenset({"/etc/cdi", "/var/run/cdi"})


def _triples(rules: Iterable[Mapping[str, Any]]) -> tuple[set[tuple[str, str, str]], list[str]]:
    """(apiGroup, resource, verb) triples a list of RBAC rules grants, and what cannot be expressed so."""
    granted: set[tuple[str, str, str]] = set()
    other: list[str] = []
    for rule in rules:
        if not isinstance(rule, Mapping):
            continue
        if rule.get("nonResourceURLs"):
            other.append(f"nonResourceURLs {list(rule['nonResourceURLs'])}")
        groups = [g for g in rule.get("apiGroups") or [] if isinstance(g, str)]
        resources = [r for r in rule.get("resources") or [] if isinstance(r, str)]
        verbs = [v for v in rule.get("verbs") or [] if isinstance(v, str)]
        granted.update((g, r, v) for g in groups for r in resources for v in verbs)
    return granted, other


def _needed(rules: Sequence[AccessRule]) -> set[tuple[str, str, str]]:
    return {(rule.api_group, resource, verb) for rule in rules for resource in rule.resources for verb in rule.verbs}


def _describe(triples: Iterable[tuple[str, str, str]]) -> str:
    return ", ".join(f"{verb} {resource}" + (f".{group}" if group else "") for group, resource, verb in sorted(triples))


def rules_excess(kind: str, rules: Iterable[Mapping[str, Any]]) -> list[str]:
    """What a Device Manager ``ClusterRole``/``Role`` grants beyond the code's needs ([] when nothing)."""
    allowed = _needed(CLUSTER_RULES if kind == "ClusterRole" else NAMESPACED_RULES)
    granted, other = _triples(rules)
    excess = sorted(granted - allowed)
    return [*other, *([f"grants {_describe(excess)}"] if excess else [])]


def rules_missing(cluster_rules: Iterable[Mapping[str, Any]], namespaced_rules: Iterable[Mapping[str, Any]]) -> list[str]:
    """What the Device Manager needs that the bound roles do not grant ([] when nothing)."""
    missing = []
    cluster, _ = _triples(cluster_rules)
    namespaced, _ = _triples(namespaced_rules)
    if lacking := _needed(CLUSTER_RULES) - cluster:
        missing.append(f"cluster-wide {_describe(lacking)}")
    if lacking := _needed(NAMESPACED_RULES) - namespaced - cluster:
        missing.append(f"in its namespace {_describe(lacking)}")
    return missing


def _metadata(name: str, namespace: Optional[str], labels: Mapping[str, str]) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "labels": dict(labels)}
    if namespace is not None:
        metadata["namespace"] = namespace
    return metadata


def service_account_name(release_name: str) -> str:
    """The Device Manager's ServiceAccount (and role) name: the chart's ``<release>-device-manager``."""
    return f"{release_name}-device-manager"


def device_manager_rbac(*, namespace: str, release_name: str, labels: Mapping[str, str]) -> list[dict[str, Any]]:
    """ServiceAccount, ClusterRole, ClusterRoleBinding, Role and RoleBinding of the Device Manager.

    All share the name ``<release>-device-manager``; the bindings reference exactly the roles and
    ServiceAccount created here. ``kubectl apply``-ready dicts, in that order.
    """
    name = service_account_name(release_name)
    subject = {"kind": "ServiceAccount", "name": name, "namespace": namespace}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _metadata(name, namespace, labels)},
        {"apiVersion": RBAC_API_VERSION, "kind": "ClusterRole", "metadata": _metadata(name, None, labels),
         "rules": [rule.as_policy_rule() for rule in CLUSTER_RULES]},
        {"apiVersion": RBAC_API_VERSION, "kind": "ClusterRoleBinding", "metadata": _metadata(name, None, labels),
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
         "subjects": [dict(subject)]},
        {"apiVersion": RBAC_API_VERSION, "kind": "Role", "metadata": _metadata(name, namespace, labels),
         "rules": [rule.as_policy_rule() for rule in NAMESPACED_RULES]},
        {"apiVersion": RBAC_API_VERSION, "kind": "RoleBinding", "metadata": _metadata(name, namespace, labels),
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
         "subjects": [dict(subject)]},
    ]


def pod_excess(pod_spec: Mapping[str, Any], expected_host_paths: Iterable[str]) -> list[str]:
    """Host access of a Device Manager pod beyond what the builder gives it ([] when none).

    ``expected_host_paths`` are the host paths the builder may mount; any other host path, the
    host PID/IPC/network namespaces, and a writable mount of a path the Device Manager only reads
    (:func:`read_only_host_paths`) are excess.
    """
    excess = []
    for flag in ("hostPID", "hostIPC", "hostNetwork"):
        if pod_spec.get(flag) is True:
            excess.append(f"{flag}: true")
    expected = {posixpath.normpath(p) for p in expected_host_paths}
    volumes = {}
    for volume in pod_spec.get("volumes") or []:
        if isinstance(volume, Mapping) and isinstance(volume.get("hostPath"), Mapping):
            path = volume["hostPath"].get("path")
            if isinstance(path, str):
                volumes[volume.get("name")] = posixpath.normpath(path)
                if posixpath.normpath(path) not in expected:
                    excess.append(f"hostPath {path}")
    for container in [*(pod_spec.get("initContainers") or []), *(pod_spec.get("containers") or [])]:
        if not isinstance(container, Mapping):
            continue
        for mount in container.get("volumeMounts") or []:
            if not isinstance(mount, Mapping) or mount.get("name") not in volumes:
                continue
            path = volumes[mount["name"]]
            if path in read_only_host_paths(expected) and mount.get("readOnly") is not True:
                excess.append(f"container {container.get('name', '?')} mounts {path} writable")
    return excess


def read_only_host_paths(expected_host_paths: Iterable[str]) -> set[str]:
    """The host paths among ``expected_host_paths`` that the Device Manager only reads."""
    return {p for p in expected_host_paths if p in READ_ONLY_HOST_PATHS or p in vendor_driver_paths()}


# Host driver/toolkit trees the chart mounts read-only per manufacturer (volume name, host path).
# NVIDIA and MThreads need none: their runtime class injects the driver.
VENDOR_DRIVER_PATHS: Mapping[str, tuple[tuple[str, str], ...]] = {
    "amd": (("gpustack-amd-driver", "/opt/rocm"),),
    "ascend": (("gpustack-ascend-driver", "/usr/local/dcmi"), ("gpustack-ascend-toolkit", "/usr/local/Ascend")),
    "cambricon": (("gpustack-cambricon-driver", "/usr/local/neuware"),),
    "hygon": (("gpustack-hygon-driver", "/opt/hyhal"), ("gpustack-hygon-toolkit", "/opt/dtk")),
    "iluvatar": (("gpustack-iluvatar-toolkit", "/usr/local/corex"),),
    "metax": (("gpustack-metax-driver", "/opt/mxdriver"), ("gpustack-metax-toolkit", "/opt/maca")),
    "thead": (("gpustack-thead-toolkit", "/usr/local/PPU_SDK"),),
}


def vendor_driver_paths() -> frozenset[str]:
    """The vendor driver and toolkit trees, which the Device Manager only reads."""
    return frozenset(path for paths in VENDOR_DRIVER_PATHS.values() for _, path in paths)
