"""``GpuFabric``: the whole fabric from one validated configuration -- the one stack."""

from typing import TYPE_CHECKING, Any, Mapping, Optional, Sequence, TypedDict, cast

import pulumi

from gpu_fabric.aws.karpenter import KARPENTER_EFA_POOL, karpenter_findings
from gpu_fabric.aws.node_group import NodeGroupInputError, node_labels, plan_node_group
from gpu_fabric.gpustack.objects import gpustack_manifests
from gpu_fabric.aws.catalog.types import InstanceCatalog
from gpu_fabric.plan.efa_domains.from_config import domains_from_config
from gpu_fabric.plan.efa_domains.naming import domain_component_name, shares_security_group
from gpu_fabric.plan.dra_pools import dra_manifests
from gpu_fabric.plan.fabric_plan import device_manager_args, efa_plugin_args, topology_agent_args
from gpu_fabric.resources import kv_cache, model_deployment
from gpu_fabric.resources.aws_deferrable import AWS_NODES_DEFERRABLE
from gpu_fabric.resources.args import PoolArgs, Required
from gpu_fabric.resources.deployment_args import DeploymentArgs
from gpu_fabric.resources.kv_cache_args import KVCacheBackendArgs, KVCachePoolArgs, KVCachePoolBindingArgs
from gpu_fabric.resources.device_plugins import (
    EfaDevicePlugin,
    EfaDevicePluginArgs,
    GpuStackDeviceManager,
    GpuStackDeviceManagerArgs,
)
from gpu_fabric.resources.inputs import ANY, DeferredInputs
from gpu_fabric.resources.kubelet_topology_agent import KubeletTopologyAgent, KubeletTopologyAgentArgs
from gpu_fabric.resources.kubernetes_objects import (
    child_options, namespace_dependency, qualified_name, register_manifest, register_namespace)
from gpu_fabric.resources.kueue_pool import KueuePool
from gpu_fabric.resources.kv_cache import KVCache
from gpu_fabric.resources.model_deployment import ModelDeployment
from gpu_fabric.resources.outputs import register_declared_outputs
from gpu_fabric.resources.stack_catalog import stack_catalog
from gpu_fabric.config.base import ConfigError, Problem
from gpu_fabric.findings import Finding
from gpu_fabric.config.fabric import FabricConfig
from gpu_fabric.validation.configuration import load_config
from gpu_fabric.config.taints import eks_effect

if TYPE_CHECKING:
    from gpu_fabric.resources.efa_domain import EfaDomain
    from gpu_fabric.resources.efa_node_group import EfaNodeGroup
    from gpu_fabric.resources.karpenter_pool import KarpenterEfaPool

# The AWS components (and so pulumi_aws.ec2, some 350 modules) are imported only when a pool has AWS
# nodes: a stack without one renders without them (tests/test_startup_imports.py).
AWS_POOL_MODULES = (
    "gpu_fabric.aws.user_data", "gpu_fabric.resources.efa_domain", "gpu_fabric.resources.efa_network",
    "gpu_fabric.resources.efa_node_group", "gpu_fabric.resources.karpenter_pool",
    "pulumi_aws.ec2", "pulumi_aws.eks", "pulumi_aws.iam", "pulumi_aws.vpc",
)
"""What the fabric imports for a pool with AWS nodes, gpu-fabric's and the SDK's: a command imports them before it
forks a render of such a stack (:func:`gpu_fabric.program.shared_imports.expect`)."""


class TolerationArgs(TypedDict, total=False):
    """A pod toleration, as in a DaemonSet's pod spec."""

    key: str
    """Taint key (absent: every key, with ``Exists``)."""
    operator: str
    """``Equal`` (default) or ``Exists``."""
    value: str
    """Taint value (``Equal``)."""
    effect: str
    """``NoSchedule``, ``NoExecute`` or ``PreferNoSchedule`` (absent: every effect)."""


class ExternalEfaPluginArgs(TypedDict, total=False):
    """How the EFA device plugin reaches the EFA pools when the stack does not deploy it."""

    source: Required[str]
    """Who installs it, e.g. ``EKS add-on``."""
    node_selector: Mapping[str, str]
    """The DaemonSet's ``nodeSelector``."""
    tolerations: Sequence[TolerationArgs]
    """The DaemonSet's tolerations."""


class EfaPluginSettingsArgs(TypedDict, total=False):
    """AWS's EFA device plugin (``vpc.amazonaws.com/efa``)."""

    deploy: bool
    """Deploy it for the stack's EFA pools (default true); ``false`` when something else installs it."""
    provided_by: ExternalEfaPluginArgs
    """With ``deploy: false``: the plugin installed outside the stack, checked to schedule on every EFA pool."""
    namespace: str
    """Default ``kube-system``."""
    image_repository: str
    """Default: the us-west-2 EKS ECR repository; use your region's."""
    image_tag: str
    """Default ``v0.5.20`` (P6 instances need at least ``v0.5.6``)."""


class DeviceManagerSettingsArgs(TypedDict, total=False):
    """GPUStack's Device Manager, which advertises ``device.gpustack.ai/rdma*`` on RDMA nodes."""

    deployed_by: str
    """``operator-chart`` (default: the GPUStack chart runs its own) or ``stack``."""
    namespace: str
    """Default ``gpustack-system``."""
    release_name: str
    """Default ``gpustack-operator``."""
    image: str
    """Operator image repository."""
    image_tag: str
    """Pin the operator version you validate against."""


class DevicePluginSettingsArgs(TypedDict, total=False):
    """The device plugins that make fabric NICs schedulable."""

    efa: EfaPluginSettingsArgs
    """AWS's EFA device plugin."""
    device_manager: DeviceManagerSettingsArgs
    """GPUStack's Device Manager."""


class EksClusterRefArgs(TypedDict, total=False):
    """An existing EKS cluster, reached with ``aws eks get-token``."""

    name: Required[str]
    """Cluster name."""
    region: str
    """Defaults to the AWS provider's region (``aws:region``)."""


class KubernetesTargetArgs(TypedDict, total=False):
    """Where the Kubernetes objects go (read by the stack program, which builds the provider)."""

    eks_cluster: EksClusterRefArgs
    """An EKS cluster."""
    context: str
    """A context of the ambient kubeconfig."""


class ClusterArgs(TypedDict, total=False):
    """Facts about the cluster the stack deploys into."""

    kubernetes_version: str
    """The control plane's Kubernetes minor version (``"1.34"``); required with a ``deviceAllocation: dra`` pool."""
    eks_auto_mode: bool
    """The cluster runs EKS Auto Mode (it launches the pools the stack does not provision)."""


class GpuFabricArgs(TypedDict, total=False):
    """The whole fabric: the same settings as ``gpu-fabric:*`` in ``Pulumi.<stack>.yaml``, with snake_case keys.

    Plain, except what the components accept as Outputs: the node groups' cluster, VPC, subnet, AZ,
    role, security groups, KMS key and reservation, and the images.
    """

    queue_owner: str
    """``gpustack`` (default: the operator owns ClusterQueues) or ``standalone`` (this stack owns them)."""
    gpustack_api_version: str
    """``v1alpha1`` (default: the version the operator's CRDs serve) or ``v1`` (its aggregated API)."""
    gpustack_operator: str
    """The GPUStack operator release the cluster runs (``0.10.0`` by default, ``0.9.2``, ``0.11.2``, any patch
    of those lines, or ``main@5cfac77b``): it decides the schema and admission rules (docs/gpustack-api-version.md)."""
    namespaces: Required[Sequence[str]]
    """Tenant namespaces: created when absent, adopted when present, never deleted; every object in one waits for it."""
    pools: Required[Sequence[PoolArgs]]
    """Pools (ClusterQueues / InstanceTypes) and their nodes."""
    kv_cache_backends: Sequence[KVCacheBackendArgs]
    """Mooncake KVCacheBackends."""
    kv_cache_pools: Sequence[KVCachePoolArgs]
    """KVCachePools."""
    kv_cache_pool_bindings: Sequence[KVCachePoolBindingArgs]
    """KVCachePoolBindings."""
    model_deployments: Sequence[DeploymentArgs]
    """ModelDeployments."""
    device_plugins: DevicePluginSettingsArgs
    """Which device plugins the stack deploys."""
    kubernetes: KubernetesTargetArgs
    """Where the Kubernetes objects go."""
    cluster: ClusterArgs
    """Facts about the cluster: its Kubernetes version and EKS Auto Mode."""


DEFERRABLE = (
    *(("pools", ANY, "aws", *path) for path in AWS_NODES_DEFERRABLE),
    *(("kv_cache_backends", *path[2:]) for path in kv_cache.DEFERRABLE),
    *(("model_deployments", ANY, *path[1:]) for path in model_deployment.DEFERRABLE),
)
"""What may be an ``Output``: whatever the child components accept as one."""

PLAIN_REASONS = {
    "pools": "pools decide node groups, queues and device plugins; only their node groups' "
             "cluster, network, role, key and reservation values may be Outputs",
    "namespaces": "each namespace gets its own LocalQueues",
    "model_deployments": "deployments are admitted offline before registration; only images may be Outputs",
    "kv_cache_backends": "backends are checked against the fabric; only images and addresses may be Outputs",
}


def fabric_args(config: FabricConfig) -> GpuFabricArgs:
    """A validated configuration as ``GpuFabricArgs`` (its snake_case dump has exactly that shape)."""
    return cast(GpuFabricArgs, config.model_dump(exclude_none=True))


class GpuFabric(pulumi.ComponentResource):
    """Composes every part of the fabric; validates the whole configuration before registering anything."""

    local_queues: pulumi.Output[dict[str, dict[str, str]]]
    """Pool name -> namespace -> entrance LocalQueue name (what workloads put in ``kueue.x-k8s.io/queue-name``)."""
    cluster_queues: pulumi.Output[dict[str, str]]
    """Pool name -> ClusterQueue name."""
    node_group_names: pulumi.Output[dict[str, str]]
    """Pool name -> EKS node group name, for pools with an ``aws`` node group."""
    efa_security_group_ids: pulumi.Output[dict[str, str]]
    """Pool name -> id of its EFA security group, for pools with an ``aws`` block (node group or Karpenter)."""
    node_pool_names: pulumi.Output[dict[str, str]]
    """Pool name -> Karpenter NodePool name, for pools with ``aws.provisioner: karpenter``."""
    device_plugin_daemonsets: pulumi.Output[list[str]]
    """Names of the device-plugin DaemonSets this fabric deploys."""
    kv_cache_backend_names: pulumi.Output[list[str]]
    """Names of the KVCacheBackends."""
    model_deployment_names: pulumi.Output[list[str]]
    """``namespace/name`` of each ModelDeployment."""

    def __init__(
        self,
        name: str,
        args: GpuFabricArgs,
        opts: Optional[pulumi.ResourceOptions] = None,
        *,
        catalog: Optional[InstanceCatalog] = None,
        validated: Optional[FabricConfig] = None,
    ) -> None:
        inputs = DeferredInputs("GpuFabric", args, GpuFabricArgs, DEFERRABLE, PLAIN_REASONS)
        # ``validated``: the caller already ran load_config on these same args (the stack program
        # must, to build its provider first); validating again would only repeat the work.
        config = validated or inputs.validate(load_config)
        catalog = catalog or stack_catalog(opts)
        _check_node_groups(config, catalog)  # instance facts, before the first registration
        # Stack-wide facts ride on the component's inputs so that policies can read them at preview.
        registered_inputs = {
            "queueOwner": config.queue_owner,
            "gpustackOperator": config.gpustack_operator,
            "devicePlugins": config.device_plugins.model_dump(by_alias=True, exclude_none=True),
        }
        if config.cluster is not None:
            # The dra-pools policy reads the cluster's Kubernetes version and Auto Mode here.
            registered_inputs["cluster"] = config.cluster.model_dump(by_alias=True, exclude_none=True)
        super().__init__("gpu-fabric:index:GpuFabric", name, registered_inputs, opts)
        self.config: FabricConfig = config
        """The validated configuration this fabric was built from."""
        # The stack owns the tenant namespaces it declares (docs/stacks.md#tenant-namespaces): created when
        # absent, adopted when present, never deleted; every object in one waits for it.
        self.tenant_namespaces: dict[str, pulumi.CustomResource] = {
            namespace: register_namespace(f"{name}-namespace-{namespace}", namespace, self)
            for namespace in config.namespaces
        }
        """Tenant namespace -> its ``NamespacePatch`` (``retain_on_delete``)."""

        self.efa_domains: dict[str, EfaDomain] = self._efa_domains(name, config, inputs.restore)
        """Pool name -> the EfaDomain whose security group its node group shares (EFA domains of 2+ node groups)."""
        self.node_groups: dict[str, EfaNodeGroup] = {}
        """Pool name -> its EFA node group."""
        self.karpenter_pools: dict[str, KarpenterEfaPool] = {}
        """Pool name -> its Karpenter EC2NodeClass and NodePool (``aws.provisioner: karpenter``)."""
        for pool in config.pools:
            if pool.aws is not None:
                from gpu_fabric.resources.efa_node_group import EfaNodeGroup, EfaNodeGroupArgs
                from gpu_fabric.resources.karpenter_pool import KarpenterEfaPool, KarpenterEfaPoolArgs

                node_group_args = {
                    **pool.aws.model_dump(exclude_none=True),
                    # The pool's taints are the nodes' taints: the node group must set them.
                    "taints": _eks_taints(pool.taint_dicts()),
                    "topology": pool.topology.model_dump(exclude_none=True),
                    "pool_labels": pool.node_group_labels(),
                }
                domain = self.efa_domains.get(pool.name)
                if domain is not None:
                    node_group_args["efa_security_group_id"] = domain.security_group_id
                if pool.aws.placement_group.mode == "domain":
                    # The domain's shared cluster group; a pool alone in (or outside) a domain gets its own.
                    node_group_args["placement_group"] = (
                        {"mode": "existing", "name": domain.placement_group_name} if domain is not None else {"mode": "create"})
                if pool.aws.is_karpenter:
                    # The NodeClass and NodePool are named after the pool (nodes: karpenter.sh/nodepool=<pool>).
                    node_group_args.update({"node_count": pool.node_count, "object_name": pool.name})
                    self.karpenter_pools[pool.name] = KarpenterEfaPool(
                        f"{name}-{pool.name}-nodes", cast(KarpenterEfaPoolArgs, inputs.restore(node_group_args)),
                        child_options(self), catalog=catalog)
                    continue
                node_group_args.pop("provisioner", None)  # "managedNodeGroup": EfaNodeGroup is one
                self.node_groups[pool.name] = EfaNodeGroup(
                    f"{name}-{pool.name}-nodes", cast(EfaNodeGroupArgs, inputs.restore(node_group_args)),
                    child_options(self), catalog=catalog)
        plugin_args = efa_plugin_args(config)
        self.efa_device_plugin: Optional[EfaDevicePlugin] = (
            EfaDevicePlugin(f"{name}-efa-device-plugin", cast(EfaDevicePluginArgs, plugin_args), child_options(self)) if plugin_args else None)
        """The EFA device plugin, when the fabric deploys it."""
        manager_args = device_manager_args(config)
        self.device_manager: Optional[GpuStackDeviceManager] = (
            GpuStackDeviceManager(f"{name}-device-manager", cast(GpuStackDeviceManagerArgs, manager_args), child_options(self)) if manager_args else None)
        """The GPUStack Device Managers, when the fabric deploys them."""
        self.topology_agents: dict[str, KubeletTopologyAgent] = {
            agent_args["pool"]["name"]: KubeletTopologyAgent(
                f"{name}-{agent_args['pool']['name']}-topology-agent", cast(KubeletTopologyAgentArgs, agent_args), child_options(self))
            for _, agent_args in topology_agent_args(config)
        }
        """Pool name -> the kubelet topology agent delivering its settings (pools that opt in)."""

        self.kueue_pools: dict[str, KueuePool] = {
            pool.name: KueuePool(f"{name}-{pool.name}", {
                "pool": cast(PoolArgs, inputs.restore(pool.model_dump(exclude_none=True))),
                "namespaces": list(config.namespaces),
                "queue_owner": config.queue_owner,
            }, child_options(self), namespace_resources=self.tenant_namespaces)
            for pool in config.pools
        }
        """Pool name -> its Kueue objects."""
        self.claim_templates: dict[tuple[str, str], pulumi.CustomResource] = {
            (manifest["metadata"]["namespace"], manifest["metadata"]["name"]): register_manifest(
                f"{name}-{manifest['metadata']['namespace']}-{manifest['metadata']['name']}", manifest,
                # A ResourceClaimTemplate's spec is immutable (k8s.io/api resource/v1): a change replaces it.
                pulumi.ResourceOptions(parent=self, replace_on_changes=["spec"],
                                       depends_on=namespace_dependency(manifest, self.tenant_namespaces)))
            for manifest in dra_manifests(config)
        }
        """``(namespace, name)`` -> the ResourceClaimTemplate of a ``deviceAllocation: dra`` pool."""
        self.kv_cache: Optional[KVCache] = self._kv_cache(name, config, inputs)
        """The KV-cache objects, when the fabric declares any."""
        cache_objects = [m for m in gpustack_manifests(config) if m["kind"] != "ModelDeployment"]
        manufacturers = {pool.name: pool.resolved_manufacturer for pool in config.pools if pool.resolved_manufacturer}
        self.model_deployments: dict[tuple[str, str], ModelDeployment] = {}
        """``(namespace, name)`` -> the ModelDeployment component."""
        for deployment in config.model_deployments:
            # Depend on the exact LocalQueues the roles enter and the exact cache objects the
            # deployment reads (a component dependency would expand to every child, which grows
            # with the fleet squared).
            queues = {role.pool: self.kueue_pools[role.pool].local_queue_resources[deployment.namespace]
                      for role in deployment.roles}
            caches = (self.kv_cache.objects_for_binding(deployment.namespace, deployment.kv_cache.pool_ref.name)
                      if self.kv_cache is not None and deployment.kv_cache is not None else [])
            self.model_deployments[(deployment.namespace, deployment.name)] = ModelDeployment(
                f"{name}-{deployment.namespace}-{deployment.name}", {
                    "deployment": cast(DeploymentArgs, inputs.restore(deployment.model_dump(exclude_none=True))),
                    "api_version": config.gpustack_api_version,
                    "gpustack_operator": config.gpustack_operator,
                    "cache_objects": cache_objects,
                    "manufacturers": manufacturers,
                }, child_options(self, [*queues.values(), *caches]), namespace_resources=self.tenant_namespaces)

        self.local_queues = _by_pool(config, {p: pool.local_queue_names for p, pool in self.kueue_pools.items()})
        self.cluster_queues = _by_pool(config, {p: pool.cluster_queue_name for p, pool in self.kueue_pools.items()})
        self.node_group_names = _by_pool(config, {p: group.node_group_name for p, group in self.node_groups.items()})
        self.efa_security_group_ids = _by_pool(config, {
            **{p: group.security_group_id for p, group in self.node_groups.items()},
            **{p: karpenter.security_group_id for p, karpenter in self.karpenter_pools.items()}})
        self.node_pool_names = _by_pool(config, {p: karpenter.node_pool_name for p, karpenter in self.karpenter_pools.items()})
        daemonsets: list[pulumi.Output[Any]] = []
        if self.efa_device_plugin is not None:
            daemonsets.append(self.efa_device_plugin.daemonset_name.apply(lambda n: [n]))
        if self.device_manager is not None:
            daemonsets.append(self.device_manager.daemonset_names)
        self.device_plugin_daemonsets = pulumi.Output.all(*daemonsets).apply(lambda lists: [n for names in lists for n in names])
        self.kv_cache_backend_names = (self.kv_cache.backend_names if self.kv_cache is not None
                                       else pulumi.Output.from_input([]))
        self.model_deployment_names = pulumi.Output.all(*(
            qualified_name(namespace, component.deployment) for (namespace, _), component in self.model_deployments.items()))
        register_declared_outputs(self, registered_inputs)

    def _efa_domains(self, name: str, config: FabricConfig, restore: Any) -> "dict[str, EfaDomain]":
        """One ``EfaDomain`` (shared security group, optional placement group) per EFA domain of 2+ node groups."""
        by_pool: dict[str, EfaDomain] = {}
        for domain in domains_from_config(config, name).domains:
            if not shares_security_group(domain):
                continue
            from gpu_fabric.resources.efa_domain import EfaDomain

            specs = [aws for aws in (config.pool(p.name).aws for p in domain.node_group_pools) if aws is not None]  # type: ignore[union-attr]
            # Tags every node group of the domain carries (the group belongs to all of them).
            common = {k: v for k, v in specs[0].tags.items() if all(s.tags.get(k) == v for s in specs)}
            component = EfaDomain(domain_component_name(name, domain), {
                "domain": domain.name,
                "vpc_id": restore(specs[0].vpc_id),  # one VPC per EFA domain (load_config refuses two)
                "tags": common,
                "placement_group": any(s.placement_group.mode == "domain" for s in specs),
            }, child_options(self))
            by_pool.update({pool.name: component for pool in domain.node_group_pools})
        return by_pool

    def _kv_cache(self, name: str, config: FabricConfig, inputs: DeferredInputs) -> Optional[KVCache]:
        if not (config.kv_cache_backends or config.kv_cache_pools or config.kv_cache_pool_bindings):
            return None
        dump = lambda items: [item.model_dump(exclude_none=True) for item in items]  # noqa: E731
        return KVCache(f"{name}-kv-cache", {
            "backends": inputs.restore(dump(config.kv_cache_backends)),
            "pools": dump(config.kv_cache_pools),
            "bindings": dump(config.kv_cache_pool_bindings),
            "api_version": config.gpustack_api_version,
            "gpustack_operator": config.gpustack_operator,
        }, child_options(self), namespace_resources=self.tenant_namespaces)


def _by_pool(config: FabricConfig, outputs: Mapping[str, pulumi.Output[Any]]) -> pulumi.Output[Any]:
    """``{pool name: value}`` in the configuration's pool order, resolved from per-pool Outputs."""
    names = [pool.name for pool in config.pools if pool.name in outputs]
    return pulumi.Output.all(*(outputs[n] for n in names)).apply(lambda values: dict(zip(names, values)))


def _eks_taints(taints: list[dict[str, str]]) -> list[dict[str, str]]:
    return [{**taint, "effect": eks_effect(taint["effect"])} for taint in taints]


def _at_field(prefix: str, default: str, finding: str) -> tuple[str, str]:
    """``"amiType: ..."`` -> ``("<prefix>.amiType", "...")``; other findings go to ``default``."""
    field, colon, message = finding.partition(": ")
    if colon and all(part.isidentifier() for part in field.split(".")):
        return f"{prefix}.{field}", message
    return f"{prefix}.{default}", finding


def _check_node_groups(config: FabricConfig, catalog: InstanceCatalog) -> None:
    """Plan every EFA node group, and check that each pool's interface count is what the plan gives."""
    problems: list[Problem] = []
    for i, pool in enumerate(config.pools):
        if pool.aws is None:
            continue
        try:
            plan = plan_node_group(pool.aws, catalog.describe(pool.aws.instance_types))
        except NodeGroupInputError as error:
            problems.extend(_at_field(f"pools[{i}].aws", "instanceTypes", finding) for finding in error.problems)
            continue
        except ValueError as error:
            problems.append((f"pools[{i}].aws.instanceTypes", str(error)))
            continue
        if pool.aws.is_karpenter:
            labels = node_labels({**pool.aws.labels, **pool.node_group_labels()})
            # The karpenter-efa-pool rule, reported as the pack reports it: its id, and exit 1 when alone.
            problems.extend(Finding.of(KARPENTER_EFA_POOL, *_at_field(f"pools[{i}].aws", "instanceTypes", finding))
                            for finding in karpenter_findings(pool.aws, plan, labels))
        efa_interfaces = sum(1 for interface in plan if interface.interface_type != "interface")
        if pool.interfaces_per_node != efa_interfaces:
            # Karpenter's EC2NodeClass carries the plan, not a node group: say which the user wrote.
            planner = "the EC2NodeClass's plan" if pool.aws.is_karpenter else "the node group's plan"
            problems.append((f"pools[{i}].interfacesPerNode",
                             f"{planner} attaches {efa_interfaces} EFA interfaces per node "
                             f"({', '.join(pool.aws.instance_types)}), not {pool.interfaces_per_node}; set "
                             f"interfacesPerNode: {efa_interfaces}"))
    if problems:
        raise ConfigError(problems)
