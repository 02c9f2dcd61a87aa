"""One pool as the rules read it: its fabric, interfaces, node labels and taints, whatever it came from.

A pool reaches the rules two ways: as ``load_config`` holds it (a typed
:class:`~gpu_fabric.config.pool.PoolSpec`: :func:`pool_view_of`) and as a ``KueuePool`` component's
``pool`` input carries it at preview (camelCase, any value possibly unknown: :func:`pool_view_of_input`).
Both give the same :class:`PoolView` for the same pool, so a rule that reads one decides as it would
on the other. The node labels are :func:`view_node_labels`, through the one derivation every view of a
pool calls (:func:`gpu_fabric.config.pool.pool_node_labels`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, Optional, Sequence

from gpu_fabric.config.pool import DEFAULT_ACCELERATOR_RESOURCE, INSTANCE_TYPE_LABEL, pool_node_labels
from gpu_fabric.config.shapes import as_list, as_mapping, is_unknown, known_str

if TYPE_CHECKING:
    from gpu_fabric.config.pool import PoolSpec

UNKNOWN_FABRIC = "<unknown at preview>"
""":attr:`PoolView.fabric` of a pool whose fabric is unknown at preview: no fabric a rule wants, and not
``none`` either (:attr:`PoolView.fabric_unknown` says so)."""


@dataclass(frozen=True)
class PoolView:
    """What one pool's nodes offer, as far as the rules care."""

    name: str
    fabric: str
    """``efa``, ``rdma``, ``none`` (or :data:`UNKNOWN_FABRIC`)."""
    interfaces_per_node: Optional[int] = None
    labels: Mapping[str, str] = field(default_factory=dict)
    """The labels every node of the pool carries (:func:`view_node_labels`)."""
    taints: Sequence[Mapping[str, Any]] = ()
    manufacturer: Optional[str] = None
    instance_types: tuple[str, ...] = ()
    topology: Optional[Mapping[str, Any]] = None
    """The pool's ``topology`` spec (policy, scope, cpuManagerPolicy, reservedSystemCPUs ...), camelCase, if any."""
    device_allocation: str = "plugin"
    """``plugin`` or ``dra`` (``deviceAllocation``; absent reads as ``plugin``)."""
    accelerators_per_node: Optional[int] = None
    """Whole accelerators per node (``acceleratorsPerNode``); ``None`` when unknown."""
    accelerator_resource: Optional[str] = None
    """The extended resource one accelerator is advertised as (``nvidia.com/gpu``), if the pool has one."""
    partitioned_interfaces_per_node: Optional[int] = None
    """SR-IOV virtual functions per node (``rdma`` pools); ``None`` when unknown."""

    @property
    def uses_dra(self) -> bool:
        """Devices are claimed through DRA on this pool: no device plugin may advertise them."""
        return self.device_allocation == "dra"

    @property
    def fabric_unknown(self) -> bool:
        """The fabric is unknown at preview: a verdict that reads it waits for the value."""
        return self.fabric == UNKNOWN_FABRIC

    def matches_selector(self, selector: Mapping[str, Any]) -> bool:
        """True when every ``key: value`` of a nodeSelector holds on this pool's nodes.

        A pool of several instance types has no single ``node.kubernetes.io/instance-type`` label; a
        selector naming one of its types picks the nodes of that type. An unknown value matches.
        """
        for key, value in selector.items():
            if is_unknown(value):
                continue
            if key == INSTANCE_TYPE_LABEL and self.instance_types:
                if str(value) not in self.instance_types:
                    return False
                continue
            if self.labels.get(key) != str(value):
                return False
        return True


def view_node_labels(name: str, fabric: str, node_labels: Mapping[str, Any], instance_types: Sequence[str] = (),
                     node_group_labels: Mapping[str, Any] | None = None, dra: bool = False) -> dict[str, str]:
    """Labels a pool's nodes carry: what the platform adds, the pool's nodeLabels, then its node group's labels.

    EFA pools carry ``vpc.amazonaws.com/efa.present: "true"`` (our node groups set it); a
    ``gpustack--...-<os>-<arch>`` name tells ``kubernetes.io/os``/``arch``; a single-type AWS pool
    carries ``node.kubernetes.io/instance-type``. Values unknown at preview are left out.
    """
    return pool_node_labels(
        name, efa=fabric == "efa", instance_types=instance_types,
        pool_labels={str(k): str(v) for k, v in node_labels.items() if not is_unknown(v)},
        node_group_labels={str(k): str(v) for k, v in (node_group_labels or {}).items() if not is_unknown(v)},
        node_group_wins=True, dra=dra)


def pool_view_of(spec: "PoolSpec") -> PoolView:
    """A validated pool of the configuration."""
    aws = spec.aws
    instance_types = tuple(aws.instance_types) if aws is not None else ()
    taints = [taint.model_dump(by_alias=True, exclude_none=True) for taint in [*spec.taints, *(aws.taints if aws else [])]]
    return PoolView(
        name=spec.name, fabric=spec.fabric, interfaces_per_node=spec.interfaces_per_node,
        # The device-allocation label is the stack's node group's to set; nodes it does not provision carry only what
        # nodeLabels say (as pool_view_of_input reads them), so render refuses what the pack refuses.
        labels=view_node_labels(spec.name, spec.fabric, spec.node_labels, instance_types, aws.labels if aws else None,
                                dra=spec.uses_dra and aws is not None),
        taints=tuple(taints), manufacturer=spec.resolved_manufacturer, instance_types=instance_types,
        topology=spec.topology.model_dump(by_alias=True, exclude_none=True), device_allocation=spec.device_allocation or "plugin",
        accelerators_per_node=spec.accelerators_per_node, accelerator_resource=spec.resolved_accelerator_resource,
        partitioned_interfaces_per_node=spec.partitioned_interfaces_per_node)


def _int_or_none(value: Any) -> Optional[int]:
    if isinstance(value, bool) or is_unknown(value) or value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def pool_view_of_input(pool: Mapping[str, Any]) -> Optional[PoolView]:
    """A pool as a ``KueuePool``'s ``pool`` input carries it (camelCase; ``None`` while its name is not known)."""
    from gpu_fabric.config.instance_type_names import manufacturer_of

    name = known_str(pool.get("name"))
    if not name:
        return None
    # An unknown fabric is not "none": the rules that read it wait for the value (PoolView.fabric_unknown).
    fabric = UNKNOWN_FABRIC if is_unknown(pool.get("fabric")) else known_str(pool.get("fabric")) or "none"
    aws = as_mapping(pool.get("aws"))
    instance_types = tuple(str(t) for t in as_list(aws.get("instanceTypes")) if known_str(t))
    device_allocation = known_str(pool.get("deviceAllocation")) or "plugin"
    labels = view_node_labels(name, fabric, as_mapping(pool.get("nodeLabels")), instance_types,
                              {k: v for k, v in as_mapping(aws.get("labels")).items() if known_str(v)},
                              dra=device_allocation == "dra" and bool(aws))
    taints = [t for t in [*as_list(pool.get("taints")), *as_list(aws.get("taints"))] if isinstance(t, Mapping)]
    topology = pool.get("topology")
    manufacturer = known_str(pool.get("manufacturer")) or manufacturer_of(name)
    return PoolView(
        name=name, fabric=fabric, interfaces_per_node=_int_or_none(pool.get("interfacesPerNode")), labels=labels,
        taints=tuple(taints), manufacturer=manufacturer,
        instance_types=instance_types, topology=topology if isinstance(topology, Mapping) else None,
        device_allocation=device_allocation, accelerators_per_node=_int_or_none(pool.get("acceleratorsPerNode")),
        accelerator_resource=known_str(pool.get("acceleratorResource")) or DEFAULT_ACCELERATOR_RESOURCE.get(manufacturer or ""),
        partitioned_interfaces_per_node=_int_or_none(pool.get("partitionedInterfacesPerNode", 0)))
