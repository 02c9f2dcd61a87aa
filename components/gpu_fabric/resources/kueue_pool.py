"""``KueuePool``: one pool's Kueue objects (flavor, ClusterQueue, tenant LocalQueues)."""

from typing import Any, Mapping, Optional, Sequence, TypedDict

import pulumi
from pydantic import ValidationError

from gpu_fabric.kube.kueue import pool_kueue_manifests
from gpu_fabric.resources.args import PoolArgs, Required
from gpu_fabric.resources.aws_deferrable import AWS_NODES_DEFERRABLE
from gpu_fabric.resources.inputs import DeferredInputs, InvalidInputError
from gpu_fabric.resources.kubernetes_objects import child_options, metadata_name, namespace_dependency, register_manifest
from gpu_fabric.resources.outputs import register_declared_outputs
from gpu_fabric.config.base import ConfigError, Problem
from gpu_fabric.config.pool import PoolSpec, check_namespace

QUEUE_OWNERS = ("gpustack", "standalone")

DEFERRABLE = tuple(("pool", "aws", *path) for path in AWS_NODES_DEFERRABLE)
"""Only the pool's node-group values may be ``Output``s: the Kueue objects never read them, policies do."""

PLAIN_REASONS = {
    "pool": "the pool decides the flavor, the ClusterQueue and their quotas",
    "namespaces": "each namespace gets its own LocalQueue resource",
    "queue_owner": "the owner decides which Kueue objects this component registers",
}


class KueuePoolArgs(TypedDict, total=False):
    """Inputs of :class:`KueuePool`. Plain (except the node group's values in ``pool.aws``): they decide which
    Kueue objects exist."""

    pool: Required[PoolArgs]
    """The pool, as in the stack configuration's ``pools[]``."""
    namespaces: Required[Sequence[str]]
    """Tenant namespaces; each gets the pool's entrance LocalQueue."""
    queue_owner: str
    """``gpustack`` (default: the operator owns the ClusterQueue; LocalQueues are adopted) or ``standalone``."""


class KueuePool(pulumi.ComponentResource):
    """Kueue admission for one pool, named so GPUStack and Kueue agree on every object."""

    cluster_queue_name: pulumi.Output[str]
    """The ClusterQueue (= GPUStack InstanceType) name; from the ClusterQueue resource when this component owns it."""
    flavor_name: pulumi.Output[Optional[str]]
    """The ResourceFlavor's name (``standalone`` only), else ``None``."""
    local_queue_names: pulumi.Output[dict[str, str]]
    """Entrance LocalQueue name per tenant namespace, read from the LocalQueue resources."""

    def __init__(self, name: str, args: KueuePoolArgs, opts: Optional[pulumi.ResourceOptions] = None, *,
                 namespace_resources: Optional[Mapping[str, pulumi.Resource]] = None) -> None:
        """Register the pool's Kueue objects.

        Args:
        namespace_resources: Namespace name -> the resource registering it (``GpuFabric`` passes its tenant
            namespaces): each namespaced child depends on its own, so it is created after its namespace.
        """
        inputs = DeferredInputs("KueuePool", args, KueuePoolArgs, DEFERRABLE, PLAIN_REASONS)
        pool, namespaces, owner = inputs.validate(validate_kueue_pool_args, default_path="pool")
        # The pool facts ride on the component's inputs so policies can see what the nodes offer.
        registered_inputs = {
            "pool": inputs.restore(pool.model_dump(by_alias=True, exclude_none=True)), "queueOwner": owner}
        super().__init__("gpu-fabric:index:KueuePool", name, registered_inputs, opts)

        registered: dict[str, pulumi.CustomResource] = {}
        local_queues: dict[str, pulumi.CustomResource] = {}
        for manifest in pool_kueue_manifests(pool, namespaces, owner):
            kind = manifest["kind"]
            if kind == "ResourceFlavor":
                registered[kind] = register_manifest(f"{name}-flavor", manifest, child_options(self))
            elif kind == "ClusterQueue":
                registered[kind] = register_manifest(
                    f"{name}-cluster-queue", manifest, child_options(self, [registered["ResourceFlavor"]]))
            else:
                namespace = manifest["metadata"]["namespace"]
                upstream: list[pulumi.Resource] = [registered["ClusterQueue"]] if "ClusterQueue" in registered else []
                upstream += namespace_dependency(manifest, namespace_resources)
                # Under GPUStack the operator creates the same queue: adopt it, never fight it.
                local_queues[namespace] = register_manifest(
                    f"{name}-lq-{namespace}", manifest, child_options(self, upstream), patch=owner == "gpustack")

        self.local_queue_resources: dict[str, pulumi.CustomResource] = local_queues
        """Namespace -> the LocalQueue resource, for precise ``depends_on`` of workloads."""
        cluster_queue = registered.get("ClusterQueue")
        flavor = registered.get("ResourceFlavor")
        self.cluster_queue_name = metadata_name(cluster_queue) if cluster_queue else pulumi.Output.from_input(pool.name)
        self.flavor_name = metadata_name(flavor) if flavor else pulumi.Output.from_input(None)
        namespaces_in_order = list(local_queues)
        self.local_queue_names = pulumi.Output.all(*(metadata_name(queue) for queue in local_queues.values())).apply(
            lambda names: dict(zip(namespaces_in_order, names)))
        register_declared_outputs(self, registered_inputs)


def validate_kueue_pool_args(args: Mapping[str, Any]) -> tuple[PoolSpec, list[str], str]:
    """The pool, namespaces and owner of ``KueuePoolArgs``; raises naming every bad property."""
    owner = args.get("queue_owner") or "gpustack"
    problems: list[Problem] = []
    if owner not in QUEUE_OWNERS:
        problems.append(("queue_owner", f"must be gpustack or standalone, got {owner!r}"))
    namespaces = list(args.get("namespaces") or [])
    for i, namespace in enumerate(namespaces):
        try:
            check_namespace(namespace)
        except ValueError as error:
            problems.append((f"namespaces[{i}]", str(error)))
    if not namespaces:
        problems.append(("namespaces", "at least one tenant namespace is required"))
    pool: Optional[PoolSpec] = None
    try:
        pool = PoolSpec.model_validate(args.get("pool") or {})
    except ValidationError as error:
        problems.extend(ConfigError.from_validation_error(error, ("pool",)).problems)
    if problems or pool is None:
        raise InvalidInputError(problems, "KueuePool")
    return pool, namespaces, owner
