"""The stack's Karpenter objects as the policies read them: EC2NodeClasses, NodePools, and the security
groups an EFA NodeClass selects.

Beside :mod:`gpu_fabric.plan.resource_view` (below the policies) because the EFA domains of a stack
(:mod:`gpu_fabric.plan.efa_domains.from_resources`) follow a Karpenter pool to its groups, and
``gpu-fabric render`` prints those domains without importing the policy pack.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from gpu_fabric.aws.karpenter import EC2_NODE_CLASS_API_VERSION, EC2_NODE_CLASS_KIND, NODE_POOL_API_VERSION, NODE_POOL_KIND
from gpu_fabric.aws.launch_template_rules import EFA_INTERFACE_TYPES
from gpu_fabric.config.shapes import as_list, as_mapping, known_str
from gpu_fabric.plan.resource_view import SECURITY_GROUP_TYPE, Resource


def is_object(resource: Resource, api_version: str, kind: str) -> bool:
    """A Kubernetes object of this ``apiVersion`` and ``kind``."""
    return resource.is_kubernetes_object and resource.props.get("apiVersion") == api_version and resource.kind == kind


def node_classes(resources: Sequence[Resource]) -> list[Resource]:
    """The stack's EC2NodeClass objects."""
    return [r for r in resources if is_object(r, EC2_NODE_CLASS_API_VERSION, EC2_NODE_CLASS_KIND)]


def node_pools(resources: Sequence[Resource]) -> list[Resource]:
    """The stack's NodePool objects."""
    return [r for r in resources if is_object(r, NODE_POOL_API_VERSION, NODE_POOL_KIND)]


def node_class_interfaces(node_class: Resource) -> list[Mapping[str, Any]]:
    """The NodeClass's ``networkInterfaces``."""
    return [as_mapping(i) for i in as_list(node_class.spec.get("networkInterfaces"))]


def efa_interface_count(node_class: Resource) -> int:
    """How many of the NodeClass's interfaces are EFA."""
    return sum(1 for i in node_class_interfaces(node_class) if i.get("interfaceType") in EFA_INTERFACE_TYPES)


def node_class_of(pool: Resource, classes: Sequence[Resource]) -> Optional[Resource]:
    """The NodeClass a NodePool's ``nodeClassRef`` names, among ``classes``."""
    ref = as_mapping(as_mapping(as_mapping(pool.spec.get("template")).get("spec")).get("nodeClassRef"))
    name = known_str(ref.get("name"))
    return next((c for c in classes if c.object_name == name), None)


def selected_stack_groups(node_class: Resource, resources: Sequence[Resource]) -> Optional[list[Resource]]:
    """Security groups of this stack the NodeClass's spec is built from (``None``: the engine did not say)."""
    dependencies = node_class.property_dependencies.get("spec")
    if dependencies is None:
        return None
    by_urn = {r.urn: r for r in resources}
    return [by_urn[urn] for urn in dependencies if urn in by_urn and by_urn[urn].type == SECURITY_GROUP_TYPE]


def node_class_security_groups(node_class: Resource, resources: Sequence[Resource]) -> list[Resource]:
    """The stack's security groups an EFA NodeClass selects (by the engine's property dependencies of ``spec``;
    without them, the groups registered beside it). Groups outside the stack (known ``sg-...`` ids) are not
    counted: their rules cannot be read here."""
    if not efa_interface_count(node_class):
        return []
    selected = selected_stack_groups(node_class, resources)
    if selected is not None:
        return selected
    return [r for r in resources if r.type == SECURITY_GROUP_TYPE and r.parent and r.parent == node_class.parent]


def efa_node_classes(resources: Sequence[Resource]) -> list[Resource]:
    """The stack's EC2NodeClasses that carry EFA interfaces."""
    return [node_class for node_class in node_classes(resources) if efa_interface_count(node_class)]


def node_pool_security_groups(node_pool_name: str, resources: Sequence[Resource]) -> Optional[list[Resource]]:
    """The stack's security groups on the nodes of NodePool ``node_pool_name`` (``None``: no such EFA NodePool)."""
    classes = node_classes(resources)
    pool = next((p for p in node_pools(resources) if p.object_name == node_pool_name), None)
    node_class = node_class_of(pool, classes) if pool is not None else None
    if node_class is None or not efa_interface_count(node_class):
        return None
    return node_class_security_groups(node_class, resources)
