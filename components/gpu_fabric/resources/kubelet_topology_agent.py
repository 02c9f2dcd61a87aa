"""``KubeletTopologyAgent``: a pool's kubelet topology, delivered to nodes the stack does not provision.

Thin: :func:`gpu_fabric.kube.topology_agent.topology_agent_for_pool` builds the objects;
this component checks that the DaemonSet schedules on the pool's nodes (the device-plugin coverage
rule) and stays within the host access the agent needs (:mod:`gpu_fabric.kube.host_access`), then
registers the objects with their manifests passed through verbatim.
"""

from typing import Any, Mapping, Optional, Sequence, TypedDict, cast

import pulumi
import pulumi_kubernetes as kubernetes

from gpu_fabric.kube.topology_agent import topology_agent_for_pool
from gpu_fabric.kube.coverage import daemonset_schedules_on
from gpu_fabric.kube.host_access import topology_agent_excess
from gpu_fabric.config.base import ConfigError
from gpu_fabric.resources.args import KubeletTopologyArgs, Required, TaintArgs
from gpu_fabric.resources.inputs import validated
from gpu_fabric.resources.outputs import register_declared_outputs


class TopologyAgentPoolArgs(TypedDict, total=False):
    """The pool whose nodes the agent configures, described by what its nodes carry."""

    name: Required[str]
    """Pool (InstanceType / ClusterQueue) name; names the objects."""
    labels: Required[Mapping[str, str]]
    """Labels only this pool's nodes carry together: the DaemonSet's node selector."""
    taints: Sequence[TaintArgs]
    """Taints of the pool's nodes."""
    topology: KubeletTopologyArgs
    """The settings to deliver. Default: the fabric default (``restricted`` / ``container``)."""


class KubeletTopologyAgentArgs(TypedDict, total=False):
    """Arguments of ``KubeletTopologyAgent``. Plain values: everything is checked before registration."""

    pool: Required[TopologyAgentPoolArgs]
    """The pool and its settings."""
    namespace: str
    """Namespace of the namespaced objects. Default ``kube-system``."""
    image: str
    """Image with ``python3``. Default ``python:3.12-slim``; pin a digest in production."""
    host_paths: Sequence[str]
    """Host directories the agent may write. Default ``/etc/kubernetes`` and ``/var/lib/kubelet``."""
    kubelet_unit: str
    """systemd unit of the kubelet. Default ``kubelet.service``."""


def _register(name: str, manifest: Mapping[str, Any], opts: pulumi.ResourceOptions) -> pulumi.CustomResource:
    kind = manifest["kind"]
    metadata = manifest["metadata"]
    if kind == "ConfigMap":
        return kubernetes.core.v1.ConfigMap(name, metadata=metadata, data=manifest["data"], immutable=manifest["immutable"], opts=opts)
    if kind == "Lease":
        # The agents write the holder into the spec; that is their state, not drift to undo.
        return kubernetes.coordination.v1.Lease(name, metadata=metadata, spec=manifest["spec"],
                                                opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(ignore_changes=["spec"])))
    if kind == "ServiceAccount":
        return kubernetes.core.v1.ServiceAccount(name, metadata=metadata, opts=opts)
    if kind == "Role":
        return kubernetes.rbac.v1.Role(name, metadata=metadata, rules=manifest["rules"], opts=opts)
    if kind == "ClusterRole":
        return kubernetes.rbac.v1.ClusterRole(name, metadata=metadata, rules=manifest["rules"], opts=opts)
    if kind == "RoleBinding":
        return kubernetes.rbac.v1.RoleBinding(name, metadata=metadata, role_ref=manifest["roleRef"],
                                              subjects=manifest["subjects"], opts=opts)
    if kind == "ClusterRoleBinding":
        return kubernetes.rbac.v1.ClusterRoleBinding(name, metadata=metadata, role_ref=manifest["roleRef"],
                                                     subjects=manifest["subjects"], opts=opts)
    if kind == "DaemonSet":
        return kubernetes.apps.v1.DaemonSet(name, metadata=metadata, spec=manifest["spec"], opts=opts)
    raise ValueError(f"unexpected {kind} from the topology agent builder")


class KubeletTopologyAgent(pulumi.ComponentResource):
    """A DaemonSet on exactly one pool's nodes that installs the pool's kubelet topology and restarts the kubelet.

    For nodes the stack does not provision (on-prem, self-managed, node groups from elsewhere);
    nodes of ``EfaNodeGroup`` get the same settings through their user data instead.
    """

    daemonset_name: pulumi.Output[str]
    """Name of the agent DaemonSet; Ready pods mean the node's kubelet reports the settings."""
    namespace: pulumi.Output[str]
    """Namespace of the DaemonSet."""
    settings_digest: pulumi.Output[str]
    """sha256 of what the pods apply; it changes, and the DaemonSet rolls, when the settings change."""

    def __init__(self, name: str, args: KubeletTopologyAgentArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        # Everything is checked before super().__init__, so a refused configuration registers nothing.
        def plan() -> tuple[list[dict[str, Any]], dict[str, Any]]:
            manifests = topology_agent_for_pool(args)
            daemonset = next(m for m in manifests if m["kind"] == "DaemonSet")
            pool = args["pool"]
            schedules, reason = daemonset_schedules_on(daemonset, pool.get("labels") or {}, list(pool.get("taints") or []))
            if not schedules:
                raise ConfigError([("pool", f"KubeletTopologyAgent {name!r}: the DaemonSet would not run on pool "
                                            f"{pool['name']!r}: {reason}")])
            excess = topology_agent_excess(daemonset["spec"]["template"]["spec"])
            if excess:
                raise ConfigError([("pool", f"KubeletTopologyAgent {name!r}: host access beyond what the agent needs: "
                                            f"{'; '.join(excess)}")])
            return manifests, daemonset

        manifests, daemonset = validated("KubeletTopologyAgent", plan, default_path="pool")

        super().__init__("gpu-fabric:index:KubeletTopologyAgent", name, {}, opts)
        registered: list[pulumi.Resource] = []
        for manifest in manifests:
            kind = manifest["kind"]
            # The DaemonSet needs its ConfigMap, account and permissions to exist first.
            depends = list(registered) if kind == "DaemonSet" else []
            registered.append(_register(f"{name}-{kind.lower()}", manifest,
                                        pulumi.ResourceOptions(parent=self, depends_on=depends or None)))
        # The builder's names, resolved once the DaemonSet exists (so a reader depends on it).
        created = cast(pulumi.CustomResource, registered[-1]).id
        ds_name, ds_namespace = str(daemonset["metadata"]["name"]), str(daemonset["metadata"]["namespace"])
        self.daemonset_name = created.apply(lambda _: ds_name)
        self.namespace = created.apply(lambda _: ds_namespace)
        self.settings_digest = pulumi.Output.from_input(
            daemonset["spec"]["template"]["metadata"]["annotations"]["gpu-fabric.io/settings-digest"])
        register_declared_outputs(self)
