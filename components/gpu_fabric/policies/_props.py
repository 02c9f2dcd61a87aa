"""Reading resource properties as the engine sends them, and the pool facts every policy shares.

The analyzer hands a policy its resource's inputs wrapped in an unknown-checking proxy: touching a
value that is unknown at preview (an id or output of another resource) raises, and the engine then
downgrades the whole policy to an advisory "can't run during preview" note. Policies here never
want that, so they first copy the props into plain Python (:func:`plain`), with every unknown
value replaced by the typed :data:`UNKNOWN` (``gpu_fabric.config.shapes.Unknown``: readable as any
shape, so no rule below needs to ask first), and with the wire's doubles turned back into ints
where they are whole (``networkCardIndex: 1.0`` -> ``1``). Decisions then read only values that
are known at preview: names, labels and the spec fields the stack sets; a rule whose value is
unknown sees nothing to refuse, the others still decide.

Pool facts (:class:`PoolFacts`) come from two places:

* ``gpu-fabric:index:KueuePool`` components carry the pool spec as their ``pool`` input;
* hand-written stacks: ``aws:eks/nodeGroup:NodeGroup`` resources (labels, taints, instance types,
  and the EFA interfaces of the launch template registered beside them).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Iterable, Mapping, Optional, Sequence

from pulumi_policy import PolicyResource, StackValidationArgs

from gpu_fabric.config import constants
from gpu_fabric.config.shapes import UNKNOWN, Unknown, is_unknown, rests_on_unknown, unknown_paths  # noqa: F401 - rests_on_unknown: the policies' reader
from gpu_fabric.config.pool import ARCH_LABEL, EFA_PRESENT_LABEL, INSTANCE_TYPE_LABEL, OS_LABEL
from gpu_fabric.kube.pool_view import PoolView, pool_view_of_input, view_node_labels

KUEUE_POOL_TYPE = "gpu-fabric:index:KueuePool"
GPU_FABRIC_TYPE = "gpu-fabric:index:GpuFabric"
LAUNCH_TEMPLATE_TYPE = constants.LAUNCH_TEMPLATE_TYPE
NODE_GROUP_TYPE = constants.NODE_GROUP_TYPE
SECURITY_GROUP_TYPE = constants.SECURITY_GROUP_TYPE
PLACEMENT_GROUP_TYPE = constants.PLACEMENT_GROUP_TYPE

EFA_INTERFACE_TYPES = ("efa", "efa-only")


def _is_unknown_sentinel(value: Any) -> bool:
    # pulumi_policy/proxy.py ``_is_unknown``: the engine's sentinels (``UNKNOWN_STRING_VALUE``
    # "04da6b54-80e4-46f7-96ec-b56ff0331ba9", the one pulumi/runtime/rpc.py ``UNKNOWN`` writes for
    # every unknown, and its number/bool/array/object/asset/archive siblings). The analyzer keeps
    # them as strings inside its unknown-checking proxy (``_DictProxy``/``_ListProxy``), which raises
    # ``UnknownValueError`` on access; :func:`plain` reads past the proxy and types them instead.
    from pulumi_policy.proxy import _is_unknown

    return _is_unknown(value)


def _target(value: Any) -> Any:
    """The raw list/dict behind an unknown-checking proxy (without triggering its checks)."""
    from pulumi_policy.proxy import _DictProxy, _ListProxy

    if isinstance(value, (_DictProxy, _ListProxy)):
        return value["__target"]
    return value


def plain(value: Any) -> Any:
    """Copy ``value`` into plain dicts/lists; unknowns become :data:`UNKNOWN`, whole doubles ints."""
    value = _target(value)
    if isinstance(value, Unknown):
        return value
    if isinstance(value, str):
        return UNKNOWN if _is_unknown_sentinel(value) else value
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else value
    if isinstance(value, Mapping):
        return {str(key): plain(_target(value)[key]) for key in value}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if hasattr(value, "value") and type(value).__name__ == "Secret":
        return plain(value.value)
    return value


def known_str(value: Any) -> Optional[str]:
    """``value`` as a string when it is a known scalar, else ``None``."""
    if value is None or is_unknown(value) or isinstance(value, (Mapping, list)):
        return None
    return str(value)


def as_mapping(value: Any) -> Mapping[str, Any]:
    """``value`` when it is a mapping (unknown reads as an unknown mapping), else an empty one."""
    return value if isinstance(value, Mapping) else {}


def as_list(value: Any) -> list[Any]:
    """``value`` when it is a list, else an empty one."""
    return value if isinstance(value, list) else []


def truthy(value: Any) -> bool:
    """A known true value, accepting pulumi-aws's string booleans (``"true"``)."""
    if is_unknown(value):
        return False
    if isinstance(value, str):
        return value.strip().lower() == "true"
    return value is True


# -- the stack as plain data -----------------------------------------------------------------------


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


def _parent_urn(resource: PolicyResource) -> str:
    if resource.parent is not None:
        return resource.parent.urn
    opts = getattr(resource, "opts", None)
    return str(getattr(opts, "parent", None) or "")


def stack_resources(args: StackValidationArgs) -> list[Resource]:
    """Every resource of a stack validation as :class:`Resource` with plain props."""
    return [
        Resource(
            r.resource_type, r.name, r.urn, as_mapping(plain(r.props)), _parent_urn(r),
            {key: tuple(d.urn for d in deps) for key, deps in (r.property_dependencies or {}).items()},
        )
        for r in args.resources
    ]


def resource_of(args: Any) -> Resource:
    """The resource of a ``ResourceValidationArgs`` with plain props."""
    parent = str(getattr(getattr(args, "opts", None), "parent", None) or "")
    return Resource(args.resource_type, args.name, args.urn, as_mapping(plain(args.props)), parent)


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


# -- workloads ---------------------------------------------------------------------------------------

def pod_spec_of(obj: Mapping[str, Any]) -> Optional[Mapping[str, Any]]:
    """The pod spec of a Pod or of a workload's pod template (CronJob: its job template)."""
    kind = obj.get("kind")
    spec = as_mapping(obj.get("spec"))
    if kind == "Pod":
        return spec
    if kind == "CronJob":
        spec = as_mapping(as_mapping(spec.get("jobTemplate")).get("spec"))
    if kind == "LeaderWorkerSet":
        spec = as_mapping(as_mapping(spec.get("leaderWorkerTemplate")).get("workerTemplate"))
        return as_mapping(spec.get("spec")) or None
    template = as_mapping(spec.get("template"))
    return as_mapping(template.get("spec")) if template else None


def pod_metadata_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """Labels/annotations that Kueue reads: the object's own metadata (Kueue labels the top object)."""
    return as_mapping(obj.get("metadata"))


def containers_of(pod_spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Containers and init containers of a pod spec."""
    return [c for c in [*as_list(pod_spec.get("initContainers")), *as_list(pod_spec.get("containers"))] if isinstance(c, Mapping)]


def requested_resources(pod_spec: Mapping[str, Any]) -> set[str]:
    """Every resource name a container of the pod requests or limits."""
    names: set[str] = set()
    for container in containers_of(pod_spec):
        resources = as_mapping(container.get("resources"))
        for section in ("requests", "limits"):
            names.update(str(key) for key in as_mapping(resources.get(section)))
    return names


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


def efa_interfaces(launch_template_props: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The ``networkInterfaces`` of a launch template that are EFA (``efa`` or ``efa-only``)."""
    return [
        interface for interface in as_list(launch_template_props.get("networkInterfaces"))
        if isinstance(interface, Mapping) and interface.get("interfaceType") in EFA_INTERFACE_TYPES
    ]


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
