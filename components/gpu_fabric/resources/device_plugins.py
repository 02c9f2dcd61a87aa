"""Pulumi components for the device-plugin DaemonSets (thin: build, check coverage, register).

Each component builds its manifests with ``gpu_fabric.kube.device_plugins``, refuses to
register anything when ``gpu_fabric.kube.coverage`` finds a pool its DaemonSets would not schedule on,
and registers the manifests as typed ``kubernetes.apps.v1.DaemonSet`` resources.

Manifest dicts go to pulumi-kubernetes unchanged: the SDK translates snake_case keys of input
dicts by type metadata but passes every key it does not know (all camelCase Kubernetes names)
through verbatim, and never touches map-typed values such as labels. So the engine, the mock
monitor and a policy's ``args.props`` all see exactly the builder's camelCase manifest.
"""

from typing import Any, Mapping, Optional, Sequence, TypedDict

import pulumi
import pulumi_kubernetes as kubernetes

from gpu_fabric.kube.device_plugins import device_manager_access_for, device_managers_for_pools, efa_plugin_for_pools
from gpu_fabric.config.constants import MANUFACTURER_LABEL
from gpu_fabric.kube.coverage import CoverageGap, uncovered_pools
from gpu_fabric.resources.args import TaintArgs
from gpu_fabric.resources.inputs import DeferredInputs, InvalidInputError
from gpu_fabric.resources.kubernetes_objects import OBJECT_IDENTITY_REPLACE_ON_CHANGES
from gpu_fabric.resources.outputs import register_declared_outputs

# A DaemonSet's selector is immutable, so a new selector means a new DaemonSet. pulumi-kubernetes
# means to replace on it (provider/pkg/provider/diff.go) but keys its table "Daemonset", which no
# apps/v1 DaemonSet matches; declaring it makes the replacement happen instead of a failed update.
DAEMONSET_REPLACE_ON_CHANGES: tuple[str, ...] = (*OBJECT_IDENTITY_REPLACE_ON_CHANGES, "spec.selector")


class DevicePluginPoolArgs(TypedDict, total=False):
    """A node pool a device plugin serves, described by what its nodes carry."""

    name: str
    """Pool (node group) name, used in error messages."""
    fabric: str
    """``efa``, ``rdma`` or ``none``."""
    labels: Mapping[str, str]
    """Labels the pool's nodes carry, e.g. ``vpc.amazonaws.com/efa.present: "true"`` on EFA pools."""
    taints: Sequence[TaintArgs]
    """Taints the pool's nodes carry; the plugin tolerates each of them."""
    manufacturer: str
    """Accelerator manufacturer (``nvidia``, ``amd``, ...); NFD labels such nodes with its PCI vendor."""


class EfaDevicePluginArgs(TypedDict, total=False):
    """Arguments of ``EfaDevicePlugin``. Pools are plain: their coverage is checked before registration."""

    namespace: pulumi.Input[str]
    """Namespace of the DaemonSet. Default ``kube-system``."""
    image_repository: pulumi.Input[str]
    """Plugin image repository. Default: the us-west-2 EKS ECR repository; use your region's."""
    image_tag: pulumi.Input[str]
    """Plugin image tag. Default ``v0.5.20``; at least ``v0.5.6`` for P6 instances."""
    pools: Sequence[DevicePluginPoolArgs]
    """Pools the plugin serves. EFA pools must be covered; their taints become tolerations."""
    resources: Mapping[str, Any]
    """Container ``resources``. Default requests 10m CPU / 20Mi, memory limit 128Mi."""
    exclude_dra_nodes: bool
    """Keep the plugin off nodes labelled ``gpu-fabric.io/device-allocation: dra`` (the nodes of ``deviceAllocation:
    dra`` pools, whose EFA devices DRANET allocates). Default false."""


class GpuStackDeviceManagerArgs(TypedDict, total=False):
    """Arguments of ``GpuStackDeviceManager``. Pools and manufacturers are plain: they decide the DaemonSets."""

    namespace: pulumi.Input[str]
    """Namespace of the DaemonSets. Default ``gpustack-system``."""
    release_name: str
    """Name prefix, as the operator chart's release name. Default ``gpustack-operator``."""
    image: pulumi.Input[str]
    """Operator image repository. Default ``gpustack/gpustack-operator``."""
    image_tag: pulumi.Input[str]
    """Operator image tag; pin the operator version you validate against."""
    manufacturers: Sequence[str]
    """Accelerator manufacturers to serve (one DaemonSet each). Default: the manufacturers of the given pools."""
    pools: Sequence[DevicePluginPoolArgs]
    """Pools the Device Managers serve. RDMA pools must be covered; all taints become tolerations."""
    shared: bool
    """Serve ``device.gpustack.ai/rdma.shared``. Default true."""
    partitioned: bool
    """Serve ``device.gpustack.ai/rdma.partitioned`` (SR-IOV virtual functions). Default true."""
    sliced: bool
    """Serve sliced accelerators. Default true."""
    secure_port: int
    """HTTPS port of the Device Manager (probes, metrics). Default 32443."""
    extra_args: Sequence[str]
    """Extra ``gpustack-operator device-manager serve`` arguments."""


_POOLS_PLAIN = "the pools decide which nodes the DaemonSets must schedule on, checked before registration"
EFA_PLUGIN_DEFERRABLE = (("namespace",), ("image_repository",), ("image_tag",))
DEVICE_MANAGER_DEFERRABLE = (("namespace",), ("image",), ("image_tag",))
PLAIN_REASONS = {
    "pools": _POOLS_PLAIN,
    "manufacturers": "each manufacturer gets its own DaemonSet",
    "release_name": "it names the DaemonSets",
    "resources": "the container resources are part of the checked manifest",
    "shared": "it decides the Device Manager's arguments",
    "partitioned": "it decides the Device Manager's arguments",
    "sliced": "it decides the Device Manager's arguments",
    "secure_port": "it decides the probes of the manifest",
    "extra_args": "they are part of the checked manifest",
}


def _refuse_gaps(component: str, name: str, pools: Sequence[Mapping[str, Any]], gaps: Sequence[CoverageGap]) -> None:
    if gaps:
        position = {pool.get("name"): i for i, pool in enumerate(pools)}
        raise InvalidInputError(
            [(f"pools[{position.get(gap.pool, '?')}]",
              f"{component} {name!r} would leave pool {gap.pool!r} ({gap.fabric}) without its fabric resource: {gap.reason}")
             for gap in gaps],
            component,
        )


def _register_daemonset(
    resource_name: str, manifest: Mapping[str, Any], parent: pulumi.Resource,
    depends_on: Sequence[pulumi.Resource] = (),
) -> kubernetes.apps.v1.DaemonSet:
    # apiVersion and kind come from the resource type; metadata and spec pass through verbatim.
    return kubernetes.apps.v1.DaemonSet(
        resource_name,
        metadata=manifest["metadata"],
        spec=manifest["spec"],
        opts=pulumi.ResourceOptions(parent=parent, replace_on_changes=list(DAEMONSET_REPLACE_ON_CHANGES),
                                    depends_on=list(depends_on)),
    )


def _register_access(name: str, manifests: Sequence[Mapping[str, Any]], parent: pulumi.Resource) -> list[pulumi.Resource]:
    """The Device Manager's ServiceAccount, roles and bindings (gpu_fabric.gpustack.device_manager_access)."""
    opts = pulumi.ResourceOptions(parent=parent, replace_on_changes=list(OBJECT_IDENTITY_REPLACE_ON_CHANGES))
    registered: list[pulumi.Resource] = []
    for manifest in manifests:
        kind, metadata = manifest["kind"], manifest["metadata"]
        suffix = kind.lower()  # as KubeletTopologyAgent names its account and roles
        if kind == "ServiceAccount":
            registered.append(kubernetes.core.v1.ServiceAccount(f"{name}-{suffix}", metadata=metadata, opts=opts))
        elif kind == "ClusterRole":
            registered.append(kubernetes.rbac.v1.ClusterRole(f"{name}-{suffix}", metadata=metadata, rules=manifest["rules"], opts=opts))
        elif kind == "Role":
            registered.append(kubernetes.rbac.v1.Role(f"{name}-{suffix}", metadata=metadata, rules=manifest["rules"], opts=opts))
        else:
            binding = kubernetes.rbac.v1.ClusterRoleBinding if kind == "ClusterRoleBinding" else kubernetes.rbac.v1.RoleBinding
            registered.append(binding(f"{name}-{suffix}", metadata=metadata, role_ref=manifest["roleRef"],
                                      subjects=manifest["subjects"], opts=opts))
    return registered


class EfaDevicePlugin(pulumi.ComponentResource):
    """AWS's EFA device plugin, advertising ``vpc.amazonaws.com/efa`` on every EFA pool it serves."""

    daemonset: pulumi.Output[kubernetes.apps.v1.DaemonSet]
    """The plugin DaemonSet."""
    daemonset_name: pulumi.Output[str]
    """Name of the plugin DaemonSet."""
    namespace: pulumi.Output[str]
    """Namespace of the plugin DaemonSet."""

    def __init__(self, name: str, args: EfaDevicePluginArgs, opts: Optional[pulumi.ResourceOptions] = None):
        inputs = DeferredInputs("EfaDevicePlugin", args, EfaDevicePluginArgs, EFA_PLUGIN_DEFERRABLE, PLAIN_REASONS)

        def plan(values: Mapping[str, Any]) -> dict[str, Any]:
            manifest, efa_pools = efa_plugin_for_pools(values)
            _refuse_gaps("EfaDevicePlugin", name, values.get("pools") or [], uncovered_pools(efa_pools, [manifest]))
            return manifest

        # Checked before super().__init__ so that a refused configuration registers nothing.
        manifest = inputs.validate(plan, default_path="pools")

        super().__init__("gpu-fabric:index:EfaDevicePlugin", name, {}, opts)
        daemonset = _register_daemonset(f"{name}-daemonset", inputs.restore(manifest), self)
        self.daemonset = pulumi.Output.from_input(daemonset)
        self.daemonset_name = daemonset.metadata.apply(_name_of)
        self.namespace = daemonset.metadata.apply(_namespace_of)
        register_declared_outputs(self)


class GpuStackDeviceManager(pulumi.ComponentResource):
    """GPUStack Device Manager DaemonSets, one per manufacturer, advertising the RDMA resources.

    For clusters whose GPUStack operator chart does not deploy its own Device Managers.
    """

    daemonsets: pulumi.Output[list[kubernetes.apps.v1.DaemonSet]]
    """The Device Manager DaemonSets, sorted by manufacturer."""
    daemonset_names: pulumi.Output[list[str]]
    """Names of the Device Manager DaemonSets, sorted by manufacturer."""
    namespace: pulumi.Output[str]
    """Namespace of the Device Manager DaemonSets."""

    def __init__(self, name: str, args: GpuStackDeviceManagerArgs, opts: Optional[pulumi.ResourceOptions] = None):
        inputs = DeferredInputs("GpuStackDeviceManager", args, GpuStackDeviceManagerArgs, DEVICE_MANAGER_DEFERRABLE, PLAIN_REASONS)

        def plan(values: Mapping[str, Any]) -> list[dict[str, Any]]:
            manifests, rdma_pools = device_managers_for_pools(values)
            _refuse_gaps("GpuStackDeviceManager", name, values.get("pools") or [], uncovered_pools(rdma_pools, manifests))
            return manifests

        # Checked before super().__init__ so that a refused configuration registers nothing.
        manifests = inputs.validate(plan, default_path="pools")
        access = device_manager_access_for(inputs.values)

        super().__init__("gpu-fabric:index:GpuStackDeviceManager", name, {}, opts)
        # The pods run as ServiceAccount <release>-device-manager, bound to a ClusterRole and a Role
        # granting exactly the API access the Device Manager's code uses
        # (gpu_fabric.gpustack.device_manager_access): create them before the DaemonSets.
        access_resources = _register_access(name, [inputs.restore(manifest) for manifest in access], self)
        daemonsets = [
            _register_daemonset(f"{name}-{manifest['metadata']['labels'][MANUFACTURER_LABEL]}", inputs.restore(manifest), self,
                                depends_on=access_resources)
            for manifest in manifests
        ]
        self.daemonsets = pulumi.Output.from_input(daemonsets)
        self.daemonset_names = pulumi.Output.all(*(daemonset.metadata.apply(_name_of) for daemonset in daemonsets))
        self.namespace = pulumi.Output.from_input(inputs.restore(inputs.get("namespace") or "gpustack-system"))
        register_declared_outputs(self)


def _name_of(metadata: Any) -> str:
    return str(metadata.name)


def _namespace_of(metadata: Any) -> str:
    return str(metadata.namespace)
