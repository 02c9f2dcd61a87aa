"""Pulumi components for the device-plugin DaemonSets (thin: build, check coverage, register).

Each component builds its manifests with ``gpu_fabric.builders.device_plugins``, refuses to
register anything when ``gpu_fabric.coverage`` finds a pool its DaemonSets would not schedule on,
and registers the manifests as typed ``kubernetes.apps.v1.DaemonSet`` resources.

Manifest dicts go to pulumi-kubernetes unchanged: the SDK translates snake_case keys of input
dicts by type metadata but passes every key it does not know (all camelCase Kubernetes names)
through verbatim, and never touches map-typed values such as labels. So the engine, the mock
monitor and a policy's ``args.props`` all see exactly the builder's camelCase manifest.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence, TypedDict

import pulumi
import pulumi_kubernetes as kubernetes

from gpu_fabric.builders.device_plugins import device_managers_for_pools, efa_plugin_for_pools
from gpu_fabric.coverage import CoverageGap, uncovered_pools
from gpu_fabric.resources.kubernetes_objects import OBJECT_IDENTITY_REPLACE_ON_CHANGES

# A DaemonSet's selector is immutable, so a new selector means a new DaemonSet. pulumi-kubernetes
# means to replace on it (provider/pkg/provider/diff.go) but keys its table "Daemonset", which no
# apps/v1 DaemonSet matches; declaring it makes the replacement happen instead of a failed update.
DAEMONSET_REPLACE_ON_CHANGES: tuple[str, ...] = (*OBJECT_IDENTITY_REPLACE_ON_CHANGES, "spec.selector")


class TaintArgs(TypedDict, total=False):
    """A node-group taint."""

    key: str
    """Taint key, e.g. ``nvidia.com/gpu``."""
    value: str
    """Taint value; empty or absent means the derived toleration uses ``Exists``."""
    effect: str
    """``NoSchedule``/``NoExecute``/``PreferNoSchedule``, or EKS's ``NO_SCHEDULE`` spelling."""


class DevicePluginPoolArgs(TypedDict, total=False):
    """A node pool a device plugin serves, described by what its nodes carry."""

    name: str
    """Pool (node group) name, used in error messages."""
    fabric: str
    """``efa``, ``rdma`` or ``none``."""
    labels: dict[str, str]
    """Labels the pool's nodes carry, e.g. ``vpc.amazonaws.com/efa.present: "true"`` on EFA pools."""
    taints: list[TaintArgs]
    """Taints the pool's nodes carry; the plugin tolerates each of them."""
    manufacturer: str
    """Accelerator manufacturer (``nvidia``, ``amd``, ...); NFD labels such nodes with its PCI vendor."""


class EfaDevicePluginArgs(TypedDict, total=False):
    """Arguments of ``EfaDevicePlugin``. Plain values: coverage is checked before registration."""

    namespace: str
    """Namespace of the DaemonSet. Default ``kube-system``."""
    image_repository: str
    """Plugin image repository. Default: the us-west-2 EKS ECR repository; use your region's."""
    image_tag: str
    """Plugin image tag. Default ``v0.5.20``; at least ``v0.5.6`` for P6 instances."""
    pools: list[DevicePluginPoolArgs]
    """Pools the plugin serves. EFA pools must be covered; their taints become tolerations."""
    resources: dict[str, Any]
    """Container ``resources``. Default requests 10m CPU / 20Mi, memory limit 128Mi."""


class GpuStackDeviceManagerArgs(TypedDict, total=False):
    """Arguments of ``GpuStackDeviceManager``. Plain values: coverage is checked before registration."""

    namespace: str
    """Namespace of the DaemonSets. Default ``gpustack-system``."""
    release_name: str
    """Name prefix, as the operator chart's release name. Default ``gpustack-operator``."""
    image: str
    """Operator image repository. Default ``gpustack/gpustack-operator``."""
    image_tag: str
    """Operator image tag; pin the operator version you validate against."""
    manufacturers: list[str]
    """Accelerator manufacturers to serve. Default: the manufacturers of the given pools."""
    pools: list[DevicePluginPoolArgs]
    """Pools the Device Managers serve. RDMA pools must be covered; all taints become tolerations."""
    shared: bool
    """Serve ``device.gpustack.ai/rdma.shared``. Default true."""
    partitioned: bool
    """Serve ``device.gpustack.ai/rdma.partitioned`` (SR-IOV virtual functions). Default true."""
    sliced: bool
    """Serve sliced accelerators. Default true."""
    secure_port: int
    """HTTPS port of the Device Manager (probes, metrics). Default 32443."""
    extra_args: list[str]
    """Extra ``gpustack-operator device-manager serve`` arguments."""


def _refuse_gaps(component: str, name: str, gaps: Sequence[CoverageGap]) -> None:
    if gaps:
        lines = "\n  ".join(f"pool {gap.pool!r} ({gap.fabric}): {gap.reason}" for gap in gaps)
        raise ValueError(f"{component} {name!r} would leave pools without their fabric resource:\n  {lines}")


def _register_daemonset(
    resource_name: str, manifest: Mapping[str, Any], parent: pulumi.Resource
) -> kubernetes.apps.v1.DaemonSet:
    # apiVersion and kind come from the resource type; metadata and spec pass through verbatim.
    return kubernetes.apps.v1.DaemonSet(
        resource_name,
        metadata=manifest["metadata"],
        spec=manifest["spec"],
        opts=pulumi.ResourceOptions(parent=parent, replace_on_changes=list(DAEMONSET_REPLACE_ON_CHANGES)),
    )


class EfaDevicePlugin(pulumi.ComponentResource):
    """AWS's EFA device plugin, advertising ``vpc.amazonaws.com/efa`` on every EFA pool it serves."""

    daemonset_name: pulumi.Output[str]
    """Name of the plugin DaemonSet."""
    namespace: pulumi.Output[str]
    """Namespace of the plugin DaemonSet."""

    def __init__(self, name: str, args: EfaDevicePluginArgs, opts: Optional[pulumi.ResourceOptions] = None):
        manifest, efa_pools = efa_plugin_for_pools(args)
        # Checked before super().__init__ so that a refused configuration registers nothing.
        _refuse_gaps("EfaDevicePlugin", name, uncovered_pools(efa_pools, [manifest]))

        super().__init__("gpu-fabric:index:EfaDevicePlugin", name, {}, opts)
        daemonset = _register_daemonset(f"{name}-daemonset", manifest, self)
        self.daemonset_name = daemonset.metadata.apply(lambda metadata: metadata.name)
        self.namespace = daemonset.metadata.apply(lambda metadata: metadata.namespace)
        # Without register_outputs the component stays "creating" and its outputs are not saved.
        self.register_outputs({"daemonset_name": self.daemonset_name, "namespace": self.namespace})


class GpuStackDeviceManager(pulumi.ComponentResource):
    """GPUStack Device Manager DaemonSets, one per manufacturer, advertising the RDMA resources.

    For clusters whose GPUStack operator chart does not deploy its own Device Managers.
    """

    daemonset_names: pulumi.Output[list[str]]
    """Names of the Device Manager DaemonSets, sorted by manufacturer."""
    namespace: pulumi.Output[str]
    """Namespace of the Device Manager DaemonSets."""

    def __init__(self, name: str, args: GpuStackDeviceManagerArgs, opts: Optional[pulumi.ResourceOptions] = None):
        manifests, rdma_pools = device_managers_for_pools(args)
        namespace = args.get("namespace") or "gpustack-system"
        # Checked before super().__init__ so that a refused configuration registers nothing.
        _refuse_gaps("GpuStackDeviceManager", name, uncovered_pools(rdma_pools, manifests))

        super().__init__("gpu-fabric:index:GpuStackDeviceManager", name, {}, opts)
        daemonsets = [
            _register_daemonset(f"{name}-{manifest['metadata']['labels']['gpustack.ai/manufacturer']}", manifest, self)
            for manifest in manifests
        ]
        self.daemonset_names = pulumi.Output.all(
            *(daemonset.metadata.apply(lambda metadata: metadata.name) for daemonset in daemonsets)
        )
        self.namespace = pulumi.Output.from_input(namespace)
        # Without register_outputs the component stays "creating" and its outputs are not saved.
        self.register_outputs({"daemonset_names": self.daemonset_names, "namespace": self.namespace})
