"""Cluster-wide settings: which device plugins the stack deploys, and how it reaches Kubernetes."""

from __future__ import annotations

from typing import Annotated, Literal, Optional

from pydantic import Field, model_validator

from gpu_fabric.config import syntax
from gpu_fabric.config.base import SpecModel


# Docker's tag grammar (distribution/reference: tag = [\w][\w.-]{0,127}).
ImageTag = Annotated[str, syntax.pattern_validator(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}", "an image tag (letters, digits, '_', '.', '-')")]
# Helm release names are DNS-1123 labels of at most 53 characters (helm: chartutil.ValidateReleaseName).
ReleaseName = Annotated[str, syntax.pattern_validator(r"[a-z0-9]([-a-z0-9]{0,51}[a-z0-9])?", "a Helm release name (DNS-1123 label, at most 53)")]


class Toleration(SpecModel):
    """A pod toleration, as in a DaemonSet's pod spec."""

    key: Optional[syntax.TaintKey] = None
    """Taint key it tolerates; with ``operator: Exists`` and no key, every taint."""
    operator: Literal["Exists", "Equal"] = "Equal"
    """``Equal`` (default: key and value must match) or ``Exists`` (any value)."""
    value: Optional[syntax.TaintValue] = None
    """Taint value it tolerates (with ``operator: Equal``)."""
    effect: Optional[Literal["NoSchedule", "NoExecute", "PreferNoSchedule"]] = None
    """Taint effect it tolerates; every effect when absent."""


class ExternalEfaPlugin(SpecModel):
    """How the EFA device plugin reaches the EFA pools when the stack does not deploy it.

    The scheduling facts of that DaemonSet are stated here so that coverage is checked as for the
    stack's own plugin: every EFA pool's labels must match ``nodeSelector`` and its taints must be
    tolerated.
    """

    source: syntax.PlainText = Field(min_length=1, max_length=256)
    """Who installs it, e.g. ``EKS add-on`` or ``Helm chart eks/aws-efa-k8s-device-plugin in kube-system``."""
    node_selector: syntax.Labels = Field(default_factory=dict)
    """The DaemonSet's ``nodeSelector`` (the chart's default is ``vpc.amazonaws.com/efa.present: "true"``)."""
    tolerations: list[Toleration] = Field(default_factory=list, max_length=64)
    """The DaemonSet's tolerations."""


class EfaPluginSettings(SpecModel):
    """AWS's EFA device plugin (``vpc.amazonaws.com/efa``)."""

    deploy: bool = True
    """Deploy it for the stack's EFA pools; ``false`` when something else installs it (then say how in ``providedBy``)."""
    provided_by: Optional[ExternalEfaPlugin] = None
    """With ``deploy: false``: the plugin installed outside the stack, checked to schedule on every EFA pool."""
    namespace: syntax.Namespace = "kube-system"
    """Namespace of the EFA device plugin DaemonSet (default ``kube-system``)."""
    image_repository: Optional[syntax.Image] = None
    """Default: the us-west-2 EKS ECR repository; use your region's."""
    image_tag: Optional[ImageTag] = None
    """Default ``v0.5.20`` (P6 instances need at least ``v0.5.6``)."""

    @model_validator(mode="after")
    def _coverage_is_stated(self) -> "EfaPluginSettings":
        if not self.deploy and self.provided_by is None:
            raise ValueError("deploy: false needs providedBy: who installs the EFA device plugin and its nodeSelector and "
                             "tolerations, so that coverage of the EFA pools can still be checked")
        if self.deploy and self.provided_by is not None:
            raise ValueError("providedBy describes a plugin installed outside the stack; it applies only with deploy: false")
        return self


class DeviceManagerSettings(SpecModel):
    """GPUStack's Device Manager, which advertises ``device.gpustack.ai/rdma*`` on RDMA nodes."""

    deployed_by: Literal["operator-chart", "stack"] = "operator-chart"
    """``operator-chart`` when the GPUStack chart runs its own (the default chart does); ``stack`` otherwise."""
    namespace: syntax.Namespace = "gpustack-system"
    """Namespace of the Device Manager (default ``gpustack-system``)."""
    release_name: ReleaseName = "gpustack-operator"
    """Release name the Device Manager's objects are named after (``<release>-device-manager``; default ``gpustack-operator``)."""
    image: Optional[syntax.Image] = None
    """Device Manager image repository (default: the GPUStack operator's)."""
    image_tag: Optional[ImageTag] = None
    """Pin the operator version you validate against."""


class DevicePluginSettings(SpecModel):
    """The device plugins that make fabric NICs schedulable."""

    efa: EfaPluginSettings = Field(default_factory=EfaPluginSettings)
    """AWS's EFA device plugin, which advertises ``vpc.amazonaws.com/efa``."""
    device_manager: DeviceManagerSettings = Field(default_factory=DeviceManagerSettings)
    """GPUStack's Device Manager, which advertises ``device.gpustack.ai/rdma*``."""


class EksClusterRef(SpecModel):
    """An existing EKS cluster, reached with ``aws eks get-token`` (exec authentication)."""

    name: syntax.EksClusterName
    """Name of the EKS cluster."""
    region: Optional[syntax.Region] = None
    """Defaults to the AWS provider's region (``aws:region``)."""


DRA_KUBERNETES_VERSION = (1, 34)
"""Dynamic Resource Allocation's ``resource.k8s.io/v1`` is served from Kubernetes 1.34, where DRA went GA
(kubernetes/enhancements keps/sig-node/4381-dra-structured-parameters/kep.yaml, ``stable: "v1.34"``)."""


def kubernetes_minor(text: str) -> tuple[int, int]:
    """``"1.34"`` -> ``(1, 34)``."""
    major, minor = text.split(".", 1)
    return int(major), int(minor)


class ClusterSpec(SpecModel):
    """Facts about the cluster the stack deploys into that decide what it may render."""

    kubernetes_version: Optional[syntax.KubernetesVersion] = None
    """The control plane's Kubernetes minor version, quoted (``"1.34"``). Required when a pool has
    ``deviceAllocation: dra``: DRA's ``resource.k8s.io/v1`` is served from 1.34, and a ``dra`` pool on an older
    cluster is refused."""
    eks_auto_mode: bool = False
    """The cluster runs EKS Auto Mode, which launches the nodes of pools the stack does not provision (pools
    without ``aws``). Auto Mode ships its own DRA drivers only from Kubernetes 1.36 (docs/dra.md)."""


class KubernetesTarget(SpecModel):
    """Where the Kubernetes objects go; the ambient kubeconfig when omitted."""

    eks_cluster: Optional[EksClusterRef] = None
    """An existing EKS cluster, reached with ``aws eks get-token``."""
    context: Optional[syntax.PlainText] = Field(default=None, min_length=1, max_length=253)
    """A context of the ambient kubeconfig."""

    @model_validator(mode="after")
    def _one_target(self) -> "KubernetesTarget":
        if self.eks_cluster and self.context:
            raise ValueError("set either eksCluster or context, not both")
        if not self.eks_cluster and not self.context:
            raise ValueError("set eksCluster or context (omit kubernetes to use the ambient kubeconfig)")
        return self
