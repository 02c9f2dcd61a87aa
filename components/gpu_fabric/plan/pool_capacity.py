"""The roles on a pool fit the pool at its largest: replicas x accelerators per replica, summed over every role.

A ModelDeployment role runs ``replicas`` replicas on the pool its ``instanceType`` (``acceleratorType`` from
the operator's 0.11 line) names; each replica is one Kueue pod group of ``size`` Pods (an elastic-EP role:
``elasticEp.width`` Pods, one replica), and each Pod requests ``resources.accelerator`` whole accelerators
(the operator's mutating webhook defaults it to 1 on a pool with accelerators). gpustack/gpustack-operator
``docs/modules/model-deployment/deployment.md``; the field table is in research/gpustack-operator.md (2.1,
3.4). When the sum over a pool's roles exceeds what the pool's nodes hold at its largest size (a managed
node group's ``scaling.maxSize``, a Karpenter NodePool's ``limits.nodes``, which GpuFabric sets to
``nodeCount``, else ``nodeCount``), the last replicas never schedule: their Pods stay Pending after the
apply (Kubernetes, "Resource Management for Pods and Containers": a Pod is scheduled only on a node with
room for its requests).

One function decides it (:func:`capacity_findings`), on the pools as :class:`PoolCapacity` and the
ModelDeployment manifests the stack registers: ``load_config`` (on the configuration's pools and the
manifests it builds), and the ``pool-accelerator-capacity`` policy (on the ``KueuePool`` components' pool
inputs and the ModelDeployment resources).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Optional, Sequence

from gpu_fabric.config.quantity import QuantityError, parse_quantity
from gpu_fabric.config.shapes import as_list, as_mapping, known_str
from gpu_fabric.findings import Finding, ObjectRef, Rule

if TYPE_CHECKING:
    from gpu_fabric.config.pool import PoolSpec

POLICY = "pool-accelerator-capacity"

POOL_ACCELERATOR_CAPACITY = Rule(
    "pool-accelerator-capacity",
    "the roles on a pool ask for no more accelerators (replicas x Pods x accelerators) than the pool holds at its "
    "largest size",
    "https://kubernetes.io/docs/concepts/configuration/manage-resources-containers/", policy=POLICY)


@dataclass(frozen=True)
class PoolCapacity:
    """A pool at its largest: how many nodes it can have, and the accelerators each node holds."""

    name: str
    accelerators_per_node: int
    max_nodes: int
    size_field: str
    """Where ``max_nodes`` comes from, as the user wrote it (``aws.scaling.maxSize``, ``nodeCount``)."""

    @property
    def accelerators(self) -> int:
        return self.accelerators_per_node * self.max_nodes


def pool_capacity_of(pool: "PoolSpec") -> PoolCapacity:
    """A validated pool of the configuration at its largest size."""
    aws = pool.aws
    if aws is not None and not aws.is_karpenter and aws.scaling is not None:
        return PoolCapacity(pool.name, pool.accelerators_per_node, aws.scaling.max_size, "aws.scaling.maxSize")
    # A Karpenter NodePool launches at most limits.nodes, which GpuFabric sets to nodeCount
    # (gpu_fabric.aws.karpenter.node_pool); a pool the stack does not provision has nodeCount nodes.
    field = "nodeCount (the NodePool's limits.nodes)" if aws is not None and aws.is_karpenter else "nodeCount"
    return PoolCapacity(pool.name, pool.accelerators_per_node, pool.node_count, field)


def _count(value: Any) -> Optional[int]:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value


def pool_capacity_of_input(pool: Mapping[str, Any]) -> Optional[PoolCapacity]:
    """A pool as a ``KueuePool``'s ``pool`` input carries it (camelCase); ``None`` while a number it needs is unknown."""
    name = known_str(pool.get("name"))
    per_node, count = _count(pool.get("acceleratorsPerNode")), _count(pool.get("nodeCount"))
    if not name or per_node is None or count is None:
        return None
    aws = as_mapping(pool.get("aws"))
    if aws and known_str(aws.get("provisioner")) != "karpenter" and "scaling" in aws:
        max_size = _count(as_mapping(aws.get("scaling")).get("maxSize"))
        return None if max_size is None else PoolCapacity(name, per_node, max_size, "aws.scaling.maxSize")
    karpenter = bool(aws) and known_str(aws.get("provisioner")) == "karpenter"
    return PoolCapacity(name, per_node, count, "nodeCount (the NodePool's limits.nodes)" if karpenter else "nodeCount")


@dataclass(frozen=True)
class RoleDemand:
    """What one role of a ModelDeployment asks of its pool."""

    deployment: ObjectRef
    index: int
    role: str
    pool: str
    replicas: int
    pods_per_replica: int
    accelerators_per_pod: Optional[Fraction]
    """``None``: unset, so the operator's default (1 on a pool with accelerators)."""

    def accelerators(self, pool: PoolCapacity) -> Fraction:
        per_pod = self.accelerators_per_pod
        if per_pod is None:
            per_pod = Fraction(1 if pool.accelerators_per_node else 0)
        return self.replicas * self.pods_per_replica * per_pod

    def describe(self, pool: PoolCapacity) -> str:
        per_pod = self.accelerators_per_pod if self.accelerators_per_pod is not None else (
            1 if pool.accelerators_per_node else 0)
        pods = f" x {self.pods_per_replica} Pods" if self.pods_per_replica != 1 else ""
        return (f"{self.deployment.namespace}/{self.deployment.name} role {self.role}: {self.replicas} replicas{pods} "
                f"x {_number(per_pod)}")


def _number(value: Fraction | int) -> str:
    value = Fraction(value)
    return str(value.numerator) if value.denominator == 1 else f"{float(value):g}"


def role_demands(manifest: Mapping[str, Any]) -> list[RoleDemand]:
    """Every role of a ModelDeployment manifest as a :class:`RoleDemand`. A role whose pool or numbers are unknown
    (at preview) or unreadable (the operator's schema and webhooks refuse those, under their own rules) is left
    out: demands only add up, so a pool the known roles overfill is overfilled whatever the others ask."""
    metadata = as_mapping(manifest.get("metadata"))
    deployment = ObjectRef("ModelDeployment", known_str(metadata.get("name")) or "<unnamed>",
                           known_str(metadata.get("namespace")) or "default")
    demands: list[RoleDemand] = []
    for index, raw in enumerate(as_list(as_mapping(manifest.get("spec")).get("roles"))):
        role = as_mapping(raw)
        pool = known_str(role.get("instanceType")) or known_str(role.get("acceleratorType"))
        elastic = as_mapping(role.get("elasticEp"))
        replicas = _count(role.get("replicas", 1))
        pods = _count(elastic.get("width")) if elastic else _count(role.get("size", 1))
        accelerator = as_mapping(role.get("resources")).get("accelerator")
        per_pod: Optional[Fraction] = None
        if accelerator is not None:
            try:
                per_pod = Fraction(parse_quantity(accelerator))
            except QuantityError:  # an unknown value or a shape the CRD schema refuses
                continue
        if pool and replicas is not None and pods is not None:
            demands.append(RoleDemand(deployment, index, known_str(role.get("name")) or f"roles[{index}]", pool,
                                      replicas, pods, per_pod))
    return demands


SHARES_SHOWN = 4
"""How many roles' shares a capacity finding names (the largest); the rest are counted."""


def capacity_findings(pools: Sequence[PoolCapacity], deployments: Iterable[Mapping[str, Any]]) -> list[Finding]:
    """Pools whose roles, summed over every ModelDeployment, need more accelerators than the pool holds at its
    largest size. Each is reported once, at ``spec.roles[j].replicas`` of the role (in the order given) that
    takes the sum past the pool's capacity, naming the largest shares (:data:`SHARES_SHOWN`) and counting the rest."""
    by_pool: dict[str, list[RoleDemand]] = {}
    for manifest in deployments:
        for demand in role_demands(manifest):
            by_pool.setdefault(demand.pool, []).append(demand)
    found: list[Finding] = []
    for pool in pools:
        total = Fraction(0)
        for demand in by_pool.get(pool.name, []):
            total += demand.accelerators(pool)
            if total <= pool.accelerators:
                continue
            listed = by_pool[pool.name]
            # The largest shares first, a few of them: a fleet's pool may carry hundreds of roles.
            largest = sorted(listed, key=lambda d: d.accelerators(pool), reverse=True)[:SHARES_SHOWN]
            shares = "; ".join(d.describe(pool) for d in largest)
            if len(listed) > SHARES_SHOWN:
                shares += f"; and {len(listed) - SHARES_SHOWN} more role{'s' if len(listed) - SHARES_SHOWN != 1 else ''}"
            needed = sum((d.accelerators(pool) for d in by_pool[pool.name]), Fraction(0))
            found.append(Finding.of(POOL_ACCELERATOR_CAPACITY, f"spec.roles[{demand.index}].replicas", (
                f"the roles on pool {pool.name} need {_number(needed)} accelerators ({shares}) but the pool holds at "
                f"most {pool.accelerators} ({pool.max_nodes} nodes, its {pool.size_field}, x {pool.accelerators_per_node} "
                "accelerators per node); the replicas beyond that stay Pending: lower replicas, or raise the pool's "
                "largest size"), subject=demand.deployment, pool=pool.name))
            break
    return found
