"""Device-plugin DaemonSets as plain manifests: AWS's EFA plugin and GPUStack's Device Manager.

Both builders return ``kubectl apply``-ready dicts (camelCase keys) and nothing else, so the
components, ``gpu-fabric render`` and the tests all see the same object. Each DaemonSet carries
the ``gpu-fabric.io/advertises`` annotation, which ``gpu_fabric.kube.coverage`` reads to know which
extended resources it provides.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import copy
from typing import Any, Mapping, Sequence

from gpu_fabric.config.constants import DEVICE_ALLOCATION_DRA, DEVICE_ALLOCATION_LABEL, MANUFACTURER_LABEL
from gpu_fabric.kube.coverage import (
    ADVERTISES_ANNOTATION,
    EFA_PRESENT_LABEL,
    EFA_RESOURCE,
    PCI_VENDOR_IDS,
    RDMA_PARTITIONED_RESOURCE,
    RDMA_RESOURCE,
    RDMA_SHARED_RESOURCE,
    nfd_pci_label,
)
from gpu_fabric.gpustack.device_manager_access import VENDOR_DRIVER_PATHS, service_account_name, vendor_driver_paths
from gpu_fabric.config.taints import normalize_effect

MANAGED_BY = "gpu-fabric"

EFA_PLUGIN_IMAGE_REPOSITORY = "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/aws-efa-k8s-device-plugin"
# P6 devices are only recognised from v0.5.6 (aws-ia/terraform-aws-eks-data-addons#53); v0.5.20 is
# the appVersion of the current aws/eks-charts chart (v0.5.30).
EFA_PLUGIN_IMAGE_TAG = "v0.5.20"

DEVICE_MANAGER_IMAGE = "gpustack/gpustack-operator"
# First operator line whose docs cover KVCacheBackend; pin the version you validate against.
DEVICE_MANAGER_IMAGE_TAG = "v0.9.0"

_CRITICAL_ADDONS_ONLY = {"key": "CriticalAddonsOnly", "operator": "Exists"}

# Manufacturers whose driver is injected by a vendor container runtime; the chart sets the
# RuntimeClass of the same name for them (templates/device-manager/runtimeclass.yaml).
_RUNTIME_CLASS_MANUFACTURERS = ("mthreads", "nvidia")


def tolerations_for_taints(taints: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """Convert node-group taints ``{key, value?, effect}`` into one toleration per distinct taint.

    Effects may use EKS spelling (``NO_SCHEDULE``). A taint with a value becomes an ``Equal``
    toleration for exactly that value; one without becomes ``Exists``. Sorted for stable output.
    """
    distinct: dict[tuple[str, str, str, str], dict[str, str]] = {}
    for taint in taints:
        key = taint.get("key")
        if not key:
            raise ValueError(f"taint {dict(taint)!r} has no key")
        effect = normalize_effect(taint.get("effect", ""))
        value = taint.get("value") or ""
        if value:
            toleration = {"key": key, "operator": "Equal", "value": value, "effect": effect}
        else:
            toleration = {"key": key, "operator": "Exists", "effect": effect}
        distinct[(key, toleration["operator"], value, effect)] = toleration
    return [distinct[identity] for identity in sorted(distinct)]


def _with_critical_addons(tolerations: list[dict[str, str]]) -> list[dict[str, str]]:
    merged = {(t["key"], t["operator"], t.get("value", ""), t.get("effect", "")): t for t in tolerations}
    merged[("CriticalAddonsOnly", "Exists", "", "")] = dict(_CRITICAL_ADDONS_ONLY)
    return [merged[identity] for identity in sorted(merged)]


def _host_path_volume(name: str, path: str, host_path_type: str | None = None) -> dict[str, Any]:
    host_path: dict[str, str] = {"path": path}
    if host_path_type:
        host_path["type"] = host_path_type
    return {"name": name, "hostPath": host_path}


def efa_device_plugin_daemonset(
    *,
    name: str = "aws-efa-k8s-device-plugin",
    namespace: str = "kube-system",
    image_repository: str = EFA_PLUGIN_IMAGE_REPOSITORY,
    image_tag: str = EFA_PLUGIN_IMAGE_TAG,
    tolerations_from_taints: Sequence[Mapping[str, Any]] = (),
    extra_labels: Mapping[str, str] | None = None,
    resources: Mapping[str, Any] | None = None,
    exclude_dra_nodes: bool = False,
) -> dict[str, Any]:
    """AWS's EFA device plugin DaemonSet, advertising ``vpc.amazonaws.com/efa``.

    Selects nodes by ``vpc.amazonaws.com/efa.present: "true"``, the label our EFA node groups set,
    never by an instance-type list (static lists lag new instance types and leave the plugin at
    ``DESIRED=0``; selecting EFA-capable types without an EFA attached crash-loops it).
    ``tolerations_from_taints`` are the serving pools' taints, one toleration each, plus
    ``CriticalAddonsOnly``. ``exclude_dra_nodes`` keeps it off the nodes of ``deviceAllocation: dra`` pools
    (labelled ``gpu-fabric.io/device-allocation: dra``): their EFA devices are DRANET's, and a plugin beside a
    DRA driver hands them out twice (EKS user guide, "Manage EFA devices").
    """
    selector_labels = {"app.kubernetes.io/name": name}
    labels = {**dict(extra_labels or {}), **selector_labels, "app.kubernetes.io/managed-by": MANAGED_BY}
    # Chart requests; the memory limit is the chart's suggested one. No CPU limit, so a
    # node-critical plugin is never throttled while it re-registers with the kubelet.
    container_resources = copy.deepcopy(dict(resources)) if resources else {
        "requests": {"cpu": "10m", "memory": "20Mi"},
        "limits": {"memory": "128Mi"},
    }
    container = {
        "name": "aws-efa-k8s-device-plugin",
        "image": f"{image_repository}:{image_tag}",
        "securityContext": {
            # The plugin only lists EFA devices and serves the kubelet's device-plugin gRPC API
            # over a socket in a hostPath; eksctl's manifest and older charts run it without
            # privileges, so the chart's privileged default buys nothing but blast radius.
            "privileged": False,
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            # It writes only its socket under the hostPath mount, never into the image.
            "readOnlyRootFilesystem": True,
        },
        "resources": container_resources,
        "volumeMounts": [
            {"name": "device-plugin", "mountPath": "/var/lib/kubelet/device-plugins"},
            # Newer plugin versions need the EFA device nodes (eksctl#8201).
            {"name": "infiniband-volume", "mountPath": "/dev/infiniband"},
        ],
    }
    manifest: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": dict(labels),
            "annotations": {ADVERTISES_ANNOTATION: EFA_RESOURCE},
        },
        "spec": {
            "selector": {"matchLabels": dict(selector_labels)},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
            "template": {
                "metadata": {"labels": dict(labels)},
                "spec": {
                    "nodeSelector": {EFA_PRESENT_LABEL: "true"},
                    "tolerations": _with_critical_addons(tolerations_for_taints(tolerations_from_taints)),
                    # Without the plugin no EFA pod can start on the node, so it must not be
                    # preempted by workloads.
                    "priorityClassName": "system-node-critical",
                    # Kept as the chart and eksctl's manifest ship it: that is the configuration
                    # AWS releases and tests the plugin with.
                    "hostNetwork": True,
                    # It never talks to the API server; a mounted token would only be a credential
                    # to steal.
                    "automountServiceAccountToken": False,
                    "containers": [container],
                    "volumes": [
                        _host_path_volume("device-plugin", "/var/lib/kubelet/device-plugins"),
                        _host_path_volume("infiniband-volume", "/dev/infiniband"),
                    ],
                },
            },
        },
    }
    if exclude_dra_nodes:
        manifest["spec"]["template"]["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": DEVICE_ALLOCATION_LABEL, "operator": "NotIn", "values": [DEVICE_ALLOCATION_DRA]}]}]}}}
    return manifest


def _https_get(path: str) -> dict[str, Any]:
    return {"httpGet": {"path": path, "port": "https", "scheme": "HTTPS"}}


def _downward_api_env() -> list[dict[str, Any]]:
    fields = (
        ("KUBERNETES_POD_IP", "status.podIP"),
        ("KUBERNETES_POD_NAME", "metadata.name"),
        ("KUBERNETES_POD_NAMESPACE", "metadata.namespace"),
        ("KUBERNETES_NODE_NAME", "spec.nodeName"),
    )
    return [{"name": env, "valueFrom": {"fieldRef": {"fieldPath": path}}} for env, path in fields]


# (volume name, host path, hostPath type, mount read-only), as the chart's daemonset.yaml mounts
# them. Read-only where the Device Manager only reads; the others it writes or must be able to:
_DEVICE_MANAGER_HOST_PATHS: tuple[tuple[str, str, str | None, bool], ...] = (
    # Device nodes are opened read-write for monitoring and partitioning (NVML, vendor libraries);
    # kept writable as the chart has it: whether any vendor path creates nodes under /dev (MIG
    # capability nodes) is not verified, and a read-only /dev would break exactly that.
    ("dev-dir", "/dev", "Directory", False),
    # Discovery reads sysfs, but the partitioning drivers (pkg/devicemanager/allocator/*/
    # *_driver_linux.go: AMD CU masks, Hygon/T-Head/NVIDIA MIG) are not verified to leave it
    # untouched, so it stays writable as in the chart.
    ("sys-dir", "/sys", "Directory", False),
    # The chart's scratch space on the host; vendor tools write there.
    ("tmp-dir", "/tmp", None, False),
    # containerd's socket: the Device Manager talks to the runtime (a socket needs write).
    ("containerd-run-dir", "/run/containerd", "DirectoryOrCreate", False),
    # The init container stages the slicing libraries here and allocations keep per-pod state.
    ("gpustack-data-dir", "/var/lib/gpustack", "DirectoryOrCreate", False),
    # CDI specs are read to resolve devices; the operator chart mounts both CDI directories read-only
    # (gpustack/gpustack-operator deploy/gpustack-operator/chart/templates/device-manager/daemonset.yaml).
    ("cdi-etc-dir", "/etc/cdi", "DirectoryOrCreate", True),
    ("cdi-run-dir", "/var/run/cdi", "DirectoryOrCreate", True),
    # Device-plugin sockets are created here and registered with the kubelet (serving.go).
    ("kubelet-device-plugins-dir", "/var/lib/kubelet/device-plugins", "DirectoryOrCreate", False),
    # The Device Manager edits the containerd configuration (runtime handlers for sliced workloads).
    ("containerd-config-dir", "/etc/containerd", "DirectoryOrCreate", False),
    # The chart also mounts /run/docker; EKS nodes run containerd only, so it is left out.
)



def device_manager_host_paths() -> frozenset[str]:
    """Every host path a Device Manager DaemonSet of this builder may mount (any manufacturer)."""
    return frozenset({path for _, path, _, _ in _DEVICE_MANAGER_HOST_PATHS} | vendor_driver_paths())


def _device_manager_daemonset(
    *,
    manufacturer: str,
    namespace: str,
    release_name: str,
    image: str,
    tolerations: list[dict[str, str]],
    secure_port: int,
    switches: list[str],
) -> dict[str, Any]:
    name = f"{release_name}-device-manager-{manufacturer}"
    selector_labels = {
        "app.kubernetes.io/name": "device-manager",
        "app.kubernetes.io/instance": release_name,
        MANUFACTURER_LABEL: manufacturer,
    }
    labels = {**selector_labels, "app.kubernetes.io/managed-by": MANAGED_BY}
    advertised = [RDMA_RESOURCE]
    if "--no-shared" not in switches:
        advertised.append(RDMA_SHARED_RESOURCE)
    if "--no-partitioned" not in switches:
        advertised.append(RDMA_PARTITIONED_RESOURCE)
    pod_spec: dict[str, Any] = {
        "nodeSelector": {nfd_pci_label(manufacturer): "true"},
        # The chart's account name; device_manager_rbac creates it with exactly the API access
        # the Device Manager's code uses (gpu_fabric.gpustack.device_manager_access).
        "serviceAccountName": service_account_name(release_name),
        # Same class the chart uses: the Device Manager must run before accelerator workloads can
        # be granted devices, but it is not needed for the node itself to function.
        "priorityClassName": "system-cluster-critical",
        "initContainers": [
            {
                "name": "stage-libs",
                "image": image,
                # Stages the slicing libraries baked into the image onto the host, where the
                # allocator mounts them into sliced workload containers.
                "command": ["copy-dir.sh", "/etc/gpustack/lib", "/var/lib/gpustack/operator/lib"],
                "volumeMounts": [{"name": "gpustack-data-dir", "mountPath": "/var/lib/gpustack"}],
            }
        ],
        "containers": [
            {
                "name": "main",
                "image": image,
                "args": [
                    "gpustack-operator",
                    "device-manager",
                    "serve",
                    "-v=2",
                    f"--secure-port={secure_port}",
                    f"--manufacturer={manufacturer}",
                    *switches,
                ],
                # It enumerates every accelerator and RDMA device under /dev and /sys, edits the
                # containerd configuration and serves device plugins to the kubelet; the chart
                # runs it privileged as root for that, and so does this builder. hostPID and
                # hostIPC stay unset: the chart version read sets neither, and none of those
                # tasks needs the host's process or IPC namespace.
                "securityContext": {"privileged": True, "allowPrivilegeEscalation": True, "runAsNonRoot": False},
                "env": [
                    *_downward_api_env(),
                    {"name": "KUBERNETES_SERVICE_NAME", "value": f"{release_name}-device-manager"},
                    {"name": f"GPUSTACK_{manufacturer.upper()}_PCI_VENDOR_ID", "value": PCI_VENDOR_IDS[manufacturer]},
                ],
                "ports": [{"name": "https", "containerPort": secure_port}],
                "startupProbe": {**_https_get("/readyz"), "failureThreshold": 10, "periodSeconds": 5},
                "readinessProbe": {
                    **_https_get("/readyz"), "failureThreshold": 3, "timeoutSeconds": 5, "periodSeconds": 5
                },
                "livenessProbe": {
                    **_https_get("/livez"), "failureThreshold": 10, "timeoutSeconds": 5, "periodSeconds": 10
                },
                "volumeMounts": [
                    *(
                        {"name": volume, "mountPath": path, **({"readOnly": True} if read_only else {})}
                        for volume, path, _, read_only in _DEVICE_MANAGER_HOST_PATHS
                    ),
                    *(
                        {"name": volume, "mountPath": path, "readOnly": True}
                        for volume, path in VENDOR_DRIVER_PATHS.get(manufacturer, ())
                    ),
                ],
            }
        ],
        "volumes": [
            *(
                _host_path_volume(volume, path, host_path_type)
                for volume, path, host_path_type, _ in _DEVICE_MANAGER_HOST_PATHS
            ),
            *(
                _host_path_volume(volume, path, "DirectoryOrCreate")
                for volume, path in VENDOR_DRIVER_PATHS.get(manufacturer, ())
            ),
        ],
    }
    if tolerations:
        pod_spec["tolerations"] = [dict(toleration) for toleration in tolerations]
    if manufacturer in _RUNTIME_CLASS_MANUFACTURERS:
        pod_spec["runtimeClassName"] = manufacturer
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": dict(labels),
            "annotations": {ADVERTISES_ANNOTATION: ",".join(advertised)},
        },
        "spec": {
            # One at a time, never surging: two Device Managers on one node would both register
            # the same device-plugin sockets.
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
            "revisionHistoryLimit": 5,
            "selector": {"matchLabels": dict(selector_labels)},
            "template": {"metadata": {"labels": dict(labels)}, "spec": pod_spec},
        },
    }


def gpustack_device_manager_daemonsets(
    *,
    manufacturers: Sequence[str],
    namespace: str = "gpustack-system",
    release_name: str = "gpustack-operator",
    image: str = DEVICE_MANAGER_IMAGE,
    image_tag: str = DEVICE_MANAGER_IMAGE_TAG,
    shared: bool = True,
    partitioned: bool = True,
    sliced: bool = True,
    tolerations_from_taints: Sequence[Mapping[str, Any]] = (),
    secure_port: int = 32443,
    extra_args: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """GPUStack Device Manager DaemonSets, one per accelerator manufacturer, sorted by manufacturer.

    Mirrors the operator chart's ``templates/device-manager/daemonset.yaml``: each runs
    ``gpustack-operator device-manager serve`` on the nodes NFD labels with the manufacturer's PCI
    vendor and advertises ``device.gpustack.ai/rdma`` (plus ``.shared`` / ``.partitioned`` unless
    switched off). Use it only for clusters whose operator chart does not deploy its own.
    """
    if not manufacturers:
        raise ValueError("manufacturers: must name at least one accelerator manufacturer")
    unknown = sorted(set(manufacturers) - set(PCI_VENDOR_IDS))
    if unknown:
        raise ValueError(
            f"manufacturers: unknown accelerator manufacturer(s) {', '.join(unknown)}; "
            f"expected one of {', '.join(sorted(PCI_VENDOR_IDS))}"
        )
    switches = [
        *([] if shared else ["--no-shared"]),
        *([] if partitioned else ["--no-partitioned"]),
        *([] if sliced else ["--no-sliced"]),
        *extra_args,
    ]
    tolerations = tolerations_for_taints(tolerations_from_taints)
    return [
        _device_manager_daemonset(
            manufacturer=manufacturer,
            namespace=namespace,
            release_name=release_name,
            image=f"{image}:{image_tag}",
            tolerations=tolerations,
            secure_port=secure_port,
            switches=switches,
        )
        for manufacturer in sorted(set(manufacturers))
    ]

if TYPE_CHECKING:  # the coverage module imports this one's constants
    from gpu_fabric.kube.coverage import PoolPlacement


def efa_plugin_for_pools(args: Mapping[str, Any]) -> tuple[dict[str, Any], list["PoolPlacement"]]:
    """The EFA plugin DaemonSet for ``EfaDevicePluginArgs``-shaped ``args``, and the EFA pools it must cover.

    Only EFA pools' taints become tolerations: the plugin must not run where no EFA is attached.
    """
    from gpu_fabric.kube.coverage import PoolPlacement

    pools = [PoolPlacement.from_mapping(pool) for pool in args.get("pools") or []]
    efa_pools = [pool for pool in pools if pool.fabric == "efa"]
    manifest = efa_device_plugin_daemonset(
        namespace=args.get("namespace") or "kube-system",
        image_repository=args.get("image_repository") or EFA_PLUGIN_IMAGE_REPOSITORY,
        image_tag=args.get("image_tag") or EFA_PLUGIN_IMAGE_TAG,
        tolerations_from_taints=[taint for pool in efa_pools for taint in pool.taints],
        resources=args.get("resources"),
        exclude_dra_nodes=bool(args.get("exclude_dra_nodes")),
    )
    return manifest, efa_pools


def device_managers_for_pools(args: Mapping[str, Any]) -> tuple[list[dict[str, Any]], list["PoolPlacement"]]:
    """Device Manager DaemonSets for ``GpuStackDeviceManagerArgs``-shaped ``args``, and the RDMA pools to cover."""
    from gpu_fabric.kube.coverage import PoolPlacement

    pools = [PoolPlacement.from_mapping(pool) for pool in args.get("pools") or []]
    manufacturers = args.get("manufacturers") or sorted({pool.manufacturer for pool in pools if pool.manufacturer})
    manifests = gpustack_device_manager_daemonsets(
        manufacturers=manufacturers,
        namespace=args.get("namespace") or "gpustack-system",
        release_name=args.get("release_name") or "gpustack-operator",
        image=args.get("image") or DEVICE_MANAGER_IMAGE,
        image_tag=args.get("image_tag") or DEVICE_MANAGER_IMAGE_TAG,
        shared=args.get("shared", True),
        partitioned=args.get("partitioned", True),
        sliced=args.get("sliced", True),
        tolerations_from_taints=[taint for pool in pools for taint in pool.taints],
        secure_port=args.get("secure_port") or 32443,
        extra_args=args.get("extra_args") or (),
    )
    return manifests, [pool for pool in pools if pool.fabric == "rdma"]


def device_manager_access_for(args: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ServiceAccount, roles and bindings the Device Managers of ``args`` run with."""
    from gpu_fabric.gpustack.device_manager_access import device_manager_rbac

    release_name = args.get("release_name") or "gpustack-operator"
    labels = {"app.kubernetes.io/name": "device-manager", "app.kubernetes.io/instance": release_name,
              "app.kubernetes.io/managed-by": MANAGED_BY}
    return device_manager_rbac(namespace=args.get("namespace") or "gpustack-system", release_name=release_name, labels=labels)
