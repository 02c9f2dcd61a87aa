"""``KueuePool``: one pool's Kueue objects (flavor, ClusterQueue, tenant LocalQueues)."""

from __future__ import annotations

from typing import Any, Optional, TypedDict

import pulumi
from pydantic import ValidationError

from gpu_fabric.builders.kueue import pool_kueue_manifests
from gpu_fabric.naming import local_queue_name
from gpu_fabric.resources.kubernetes_objects import child_options, register_manifest
from gpu_fabric.spec.base import ConfigError
from gpu_fabric.spec.pool import PoolSpec, check_namespace


class KueuePoolArgs(TypedDict, total=False):
    """Inputs of :class:`KueuePool`."""

    pool: dict[str, Any]
    """The pool, as in the stack configuration's ``pools[]`` (camelCase keys)."""
    namespaces: list[str]
    """Tenant namespaces; each gets the pool's entrance LocalQueue."""
    queueOwner: str
    """``gpustack`` (the operator owns the ClusterQueue; LocalQueues are adopted) or ``standalone``."""


class KueuePool(pulumi.ComponentResource):
    """Kueue admission for one pool, named so GPUStack and Kueue agree on every object."""

    cluster_queue_name: pulumi.Output[str]
    """The ClusterQueue (= GPUStack InstanceType) name."""
    local_queue_names: pulumi.Output[dict[str, str]]
    """Entrance LocalQueue name per tenant namespace."""

    def __init__(self, name: str, args: KueuePoolArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        pool, namespaces, owner = _validated(args)
        # The pool facts ride on the component's inputs so policies can see what the nodes offer.
        super().__init__("gpu-fabric:index:KueuePool", name, {"pool": pool.model_dump(by_alias=True, exclude_none=True), "queueOwner": owner}, opts)

        manifests = pool_kueue_manifests(pool, namespaces, owner)
        registered: dict[str, pulumi.Resource] = {}
        self.local_queue_resources: dict[str, pulumi.Resource] = {}
        """Namespace -> the LocalQueue resource, for precise ``depends_on`` of workloads."""
        for manifest in manifests:
            kind = manifest["kind"]
            if kind == "ResourceFlavor":
                registered[kind] = register_manifest(f"{name}-flavor", manifest, child_options(self))
            elif kind == "ClusterQueue":
                registered[kind] = register_manifest(
                    f"{name}-cluster-queue", manifest, child_options(self, [registered["ResourceFlavor"]]))
            else:
                namespace = manifest["metadata"]["namespace"]
                upstream = [registered["ClusterQueue"]] if "ClusterQueue" in registered else None
                # Under GPUStack the operator creates the same queue: adopt it, never fight it.
                self.local_queue_resources[namespace] = register_manifest(
                    f"{name}-lq-{namespace}", manifest, child_options(self, upstream), patch=owner == "gpustack")

        self.cluster_queue_name = pulumi.Output.from_input(pool.name)
        self.local_queue_names = pulumi.Output.from_input({ns: local_queue_name(pool.name) for ns in namespaces})
        self.register_outputs({"clusterQueueName": self.cluster_queue_name, "localQueueNames": self.local_queue_names})


def _validated(args: KueuePoolArgs) -> tuple[PoolSpec, list[str], str]:
    owner = args.get("queueOwner") or "gpustack"
    if owner not in ("gpustack", "standalone"):
        raise ConfigError([("queueOwner", f"must be gpustack or standalone, got {owner!r}")])
    namespaces = list(args.get("namespaces") or [])
    problems = []
    for i, namespace in enumerate(namespaces):
        try:
            check_namespace(namespace)
        except ValueError as error:
            problems.append((f"namespaces[{i}]", str(error)))
    if not namespaces:
        problems.append(("namespaces", "at least one tenant namespace is required"))
    try:
        pool = PoolSpec.model_validate(args.get("pool") or {})
    except ValidationError as error:
        problems.extend(ConfigError.from_validation_error(error, ("pool",)).problems)
    if problems:
        raise ConfigError(problems)
    return pool, namespaces, owner
