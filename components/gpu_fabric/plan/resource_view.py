"""The stack as policies read it: each resource with plain props, and the pools every policy shares.

A :class:`Resource` is one resource of the stack as the engine-wire boundary
(:mod:`gpu_fabric.policies.engine_wire`) or an offline render hands it over: its type, name, URN, parent and property
dependencies, and its inputs as plain dicts and lists in which a value unknown at preview is
:data:`gpu_fabric.config.shapes.UNKNOWN` (readable as any shape, so no rule needs to ask first).
Decisions read values that are known at preview: names, labels and the spec fields the stack sets.

Pools (:class:`PoolFacts`: a :class:`~gpu_fabric.kube.pool_view.PoolView` and the resource that declares
it) come from two places:

* ``gpu-fabric:index:KueuePool`` components carry the pool spec as their ``pool`` input;
* hand-written stacks: ``aws:eks/nodeGroup:NodeGroup`` resources (labels, taints, instance types,
  and the EFA interfaces of the launch template registered beside them).

It also finds the stack's GPUStack objects and the operator its components name. Nothing here touches the
policy engine: it lives below the policies so that ``gpu-fabric render`` reads the stack the way the pack
does without importing the pack (or ``pulumi_policy``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Iterable, Mapping, Optional, Sequence

from gpu_fabric.aws.launch_template_rules import EFA_INTERFACE_TYPES, efa_interfaces
from gpu_fabric.config import constants
from gpu_fabric.config.pool import ARCH_LABEL, EFA_PRESENT_LABEL, INSTANCE_TYPE_LABEL, OS_LABEL
from gpu_fabric.config.shapes import as_list, as_mapping, known_str
from gpu_fabric.gpustack.admission_pipeline import GPUSTACK_GROUP
from gpu_fabric.gpustack.profiles import Profile, components_operator
from gpu_fabric.kube.pool_view import PoolView, pool_view_of_input, view_node_labels

KUEUE_POOL_TYPE = "gpu-fabric:index:KueuePool"
GPU_FABRIC_TYPE = "gpu-fabric:index:GpuFabric"
LAUNCH_TEMPLATE_TYPE = constants.LAUNCH_TEMPLATE_TYPE
NODE_GROUP_TYPE = constants.NODE_GROUP_TYPE
SECURITY_GROUP_TYPE = constants.SECURITY_GROUP_TYPE
PLACEMENT_GROUP_TYPE = constants.PLACEMENT_GROUP_TYPE


# -- the stack ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Resource:
    """One resource of the stack with plain props."""

    type: str
    name: str
    urn: str
    props: Mapping[str, Any]
    parent: str = ""
    """URN of the parent ("" when unknown or the stack)."""
    property_dependencies: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Input name -> URNs of the resources its value comes from (when the engine tells us)."""
    stack_props: Optional[Mapping[str, Any]] = None
    """What ``AnalyzeStack`` sends instead of ``props``, when it differs: the engine hands a stack
    policy each resource's final outputs (pulumi/pulumi pkg/resource/deploy/step_generator.go
    ``AnalyzeResources``), and a component's outputs are what it registered with ``register_outputs``.
    ``None``: the same as ``props``."""

    @property
    def stack_view(self) -> "Resource":
        """This resource as a stack policy receives it."""
        if self.stack_props is None:
            return self
        return Resource(self.type, self.name, self.urn, self.stack_props, self.parent, self.property_dependencies)

    @property
    def is_kubernetes_object(self) -> bool:
        return self.type.startswith("kubernetes:") and "kind" in self.props and "apiVersion" in self.props

    @property
    def kind(self) -> str:
        return str(self.props.get("kind") or "")

    @property
    def metadata(self) -> Mapping[str, Any]:
        return as_mapping(self.props.get("metadata"))

    @property
    def object_name(self) -> str:
        return known_str(self.metadata.get("name")) or self.name

    @property
    def namespace(self) -> Optional[str]:
        return known_str(self.metadata.get("namespace"))

    @property
    def spec(self) -> Mapping[str, Any]:
        return as_mapping(self.props.get("spec"))

    @property
    def api_group(self) -> str:
        api_version = str(self.props.get("apiVersion") or "")
        return api_version.split("/", 1)[0] if "/" in api_version else ""


def ancestors(resource: Resource, by_urn: Mapping[str, Resource]) -> list[Resource]:
    """Parent, grandparent, ... of ``resource`` among ``by_urn``."""
    chain: list[Resource] = []
    seen: set[str] = set()
    urn = resource.parent
    while urn and urn in by_urn and urn not in seen:
        seen.add(urn)
        chain.append(by_urn[urn])
        urn = by_urn[urn].parent
    return chain


def kubernetes_objects(resources: Iterable[Resource]) -> list[Resource]:
    """The resources that carry a Kubernetes manifest."""
    return [r for r in resources if r.is_kubernetes_object]


# -- pools -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PoolFacts(PoolView):
    """One pool of the stack (:class:`~gpu_fabric.kube.pool_view.PoolView`) and the resource that declares it."""

    urn: str = ""
    source: str = "pool"
    """``pool`` (KueuePool spec) or ``nodegroup`` (EKS NodeGroup)."""


def _pool_from_spec(resource: Resource) -> Optional[PoolFacts]:
    view = pool_view_of_input(as_mapping(resource.props.get("pool")))
    if view is None:
        return None
    return PoolFacts(**{f.name: getattr(view, f.name) for f in fields(PoolView)}, urn=resource.urn, source="pool")


def is_efa_launch_template(resource: Resource) -> bool:
    """A launch template with at least one EFA interface."""
    return resource.type == LAUNCH_TEMPLATE_TYPE and bool(efa_interfaces(resource.props))


def siblings(resource: Resource, resources: Iterable[Resource], type_: str) -> list[Resource]:
    """Resources of ``type_`` registered under the same parent component as ``resource``."""
    if not resource.parent:
        return []
    return [r for r in resources if r.type == type_ and r.parent == resource.parent and r.urn != resource.urn]


def node_group_launch_template(node_group: Resource, resources: Sequence[Resource]) -> Optional[Resource]:
    """The launch template of a node group: referenced by a known name, else its sibling.

    Launch template ids are unknown at preview, so a reference by id is resolved through the
    component that registered both (our ``EfaNodeGroup`` parents them together).
    """
    reference = as_mapping(node_group.props.get("launchTemplate"))
    wanted = known_str(reference.get("name"))
    if wanted:
        for r in resources:
            if r.type == LAUNCH_TEMPLATE_TYPE and known_str(r.props.get("name")) == wanted:
                return r
    templates = siblings(node_group, resources, LAUNCH_TEMPLATE_TYPE)
    return templates[0] if len(templates) == 1 else None


def _pool_from_node_group(resource: Resource, resources: Sequence[Resource]) -> PoolFacts:
    props = resource.props
    labels_in = as_mapping(props.get("labels"))
    template = node_group_launch_template(resource, resources)
    efas = efa_interfaces(template.props) if template else []
    efa = bool(efas) or labels_in.get(EFA_PRESENT_LABEL) == "true"
    instance_types = [str(t) for t in as_list(props.get("instanceTypes")) if known_str(t)]
    if not instance_types and template is not None and known_str(template.props.get("instanceType")):
        instance_types = [str(template.props["instanceType"])]
    name = known_str(props.get("nodeGroupName")) or resource.name
    return PoolFacts(
        name=name,
        fabric="efa" if efa else "none",
        urn=resource.urn,
        interfaces_per_node=len(efas) if efas else None,
        labels=view_node_labels(name, "efa" if efa else "none", labels_in, instance_types),
        taints=tuple(t for t in as_list(props.get("taints")) if isinstance(t, Mapping)),
        instance_types=tuple(instance_types),
        source="nodegroup",
        # A dra pool's node group labels its nodes so (config.pool.PoolSpec.node_group_labels).
        device_allocation="dra" if labels_in.get(constants.DEVICE_ALLOCATION_LABEL) == constants.DEVICE_ALLOCATION_DRA else "plugin",
    )


def pool_facts(resources: Sequence[Resource]) -> list[PoolFacts]:
    """Every pool of the stack: KueuePool specs, then node groups no KueuePool accounts for.

    A node group accounts to a KueuePool when it is registered under it, when it carries every one
    of the pool's (non-empty) nodeLabels, or when its instance types are the pool's ``aws`` ones.
    """
    by_urn = {r.urn: r for r in resources}
    pools = [p for r in resources if r.type == KUEUE_POOL_TYPE if (p := _pool_from_spec(r)) is not None]
    pool_urns = {p.urn for p in pools}
    for resource in resources:
        if resource.type != NODE_GROUP_TYPE:
            continue
        if any(a.urn in pool_urns for a in ancestors(resource, by_urn)):
            continue
        labels = {str(k): str(v) for k, v in as_mapping(resource.props.get("labels")).items()}
        candidate = _pool_from_node_group(resource, resources)
        if any(_claims(p, labels) or _same_instance_types(p, candidate) for p in pools):
            continue
        pools.append(candidate)
    return pools


def pool_node_groups(pool: PoolFacts, resources: Sequence[Resource]) -> list[Resource]:
    """The EKS node groups that provide a ``KueuePool``'s nodes, by the rule :func:`pool_facts` uses."""
    by_urn = {r.urn: r for r in resources}
    found = []
    for resource in resources:
        if resource.type != NODE_GROUP_TYPE:
            continue
        if any(a.urn == pool.urn for a in ancestors(resource, by_urn)):
            found.append(resource)
            continue
        labels = {str(k): str(v) for k, v in as_mapping(resource.props.get("labels")).items()}
        if _claims(pool, labels) or _same_instance_types(pool, _pool_from_node_group(resource, resources)):
            found.append(resource)
    return found


def _same_instance_types(pool: PoolFacts, node_group: PoolFacts) -> bool:
    # A pool whose fabric is unknown at preview still accounts for its node groups (it may be theirs).
    fabric_matches = pool.fabric == node_group.fabric or pool.fabric_unknown
    return bool(pool.instance_types) and set(node_group.instance_types) <= set(pool.instance_types) and fabric_matches


def _claims(pool: PoolFacts, node_group_labels: Mapping[str, str]) -> bool:
    own = {k: v for k, v in pool.labels.items() if k not in (OS_LABEL, ARCH_LABEL, INSTANCE_TYPE_LABEL, EFA_PRESENT_LABEL)}
    return bool(own) and all(node_group_labels.get(k) == v for k, v in own.items())


def queue_owner(resources: Iterable[Resource]) -> Optional[str]:
    """``gpustack`` or ``standalone`` as declared by the GpuFabric / KueuePool components, if any."""
    for resource in resources:
        if resource.type in (GPU_FABRIC_TYPE, KUEUE_POOL_TYPE):
            owner = known_str(resource.props.get("queueOwner"))
            if owner:
                return owner
    return None


# -- GPUStack objects and the operator ------------------------------------------------------------

DEFAULT_NAMESPACE = "default"


def gpustack_objects(resources: list[Resource]) -> list[Resource]:
    """The resources carrying a ``worker.gpustack.ai`` manifest."""
    return [r for r in resources if r.is_kubernetes_object and r.api_group == GPUSTACK_GROUP]


def miscased_gpustack_objects(resources: list[Resource]) -> list[Resource]:
    """The resources naming the ``worker.gpustack.ai`` group in another case (``Worker.gpustack.ai/v1alpha1``):
    no object the API server serves, judged only so the analysis refuses them (``gpustack-api-group``) as ``lint``
    does, never counted as the operator's objects."""
    return [r for r in resources if r.is_kubernetes_object and r.api_group != GPUSTACK_GROUP
            and r.api_group.lower() == GPUSTACK_GROUP]


def stack_operator(resources: list[Resource]) -> tuple[Profile | None, str | None]:
    """The operator profile the stack's gpu-fabric components name, and the problem with it (or ``None``):
    :func:`gpu_fabric.gpustack.profiles.components_operator` over their ``gpustackOperator`` inputs."""
    return components_operator(version for r in resources if r.type.startswith("gpu-fabric:index:")
                               if (version := known_str(r.props.get("gpustackOperator"))))


def manufacturers_of_pools(resources: list[Resource]) -> dict[str, str | None]:
    """InstanceType name -> manufacturer, for pools that state one (the rest parse their name)."""
    found: dict[str, str | None] = {}
    for resource in resources:
        if resource.type != KUEUE_POOL_TYPE:
            continue
        pool = as_mapping(resource.props.get("pool"))
        name, manufacturer = known_str(pool.get("name")), known_str(pool.get("manufacturer"))
        if name and manufacturer:
            found[name] = manufacturer
    return found
