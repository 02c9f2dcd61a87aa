"""Policy: a Karpenter EFA pool can launch the nodes it describes -- Karpenter's rules, before the apply.

Reads ``EC2NodeClass`` (``karpenter.k8s.aws/v1``) and ``NodePool`` (``karpenter.sh/v1``) objects from
resource properties, and ``gpu-fabric:index:KarpenterEfaPool`` components for the stated Karpenter
version. Each rule is the function the component's planner runs (:mod:`gpu_fabric.aws.karpenter`,
:func:`gpu_fabric.aws.efa.validate_plan`), so ``render`` refuses from configuration what this refuses
from properties:

* one EFA layout per NodeClass: its ``networkInterfaces`` must fit every instance type a NodePool using
  it allows (types whose EFA cards differ cannot share one; Karpenter issue #9071 -- it filters such types
  out instead, so the pool silently never launches them);
* a ``placementGroupSelector`` (a cluster group holds one AZ) pins every NodePool of the NodeClass to one
  zone (``designs/placement-groups-support.md``);
* no ``associatePublicIPAddress`` with more than one EFA (EC2; Karpenter PR #5666);
* an EFA NodeClass selects a security group of this stack (the EFA domain's self-referencing group, or the
  pool's own): EFA traffic is dropped without the group's self rules (EC2 EFA user guide, security group);
* a stated Karpenter older than 1.11 cannot express the layout (``networkInterfaces``, PR #9027, and
  ``placementGroupSelector``, PR #9030, shipped in v1.11.0).
"""

from __future__ import annotations

from typing import Any, Sequence

from pulumi_policy import EnforcementLevel, PolicyConfigSchema, Severity, StackValidationArgs, StackValidationPolicy

from gpu_fabric.aws.karpenter import (
    INSTANCE_TYPE_KEY,
    KARPENTER_EFA_POOL,
    ZONE_KEY,
    karpenter_interface_findings,
    public_ip_findings,
    requirement_values,
    version_findings,
    zone_pin_findings,
)
from gpu_fabric.findings import Finding
from gpu_fabric.policies.efa_interfaces import ALLOW_FEWER_EFA_INTERFACES, allows_fewer_efa_interfaces
from gpu_fabric.policies.reporting import report_finding
from gpu_fabric.config.shapes import as_mapping, known_str, rests_on_unknown
from gpu_fabric.policies.engine_wire import stack_resources
from gpu_fabric.plan.karpenter_resources import (
    efa_interface_count,
    node_class_interfaces,
    node_class_of,
    node_classes,
    node_pools,
    selected_stack_groups,
)
from gpu_fabric.plan.resource_view import Resource

KARPENTER_POOL_TYPE = "gpu-fabric:index:KarpenterEfaPool"


def layout_findings(node_class: Resource, instance_types: Sequence[str], allow_fewer: bool = False) -> list[str]:
    """The NodeClass's interfaces against every instance type (bundled facts; unknown types are not judged).

    Each type must get exactly ``EfaInfo.MaximumEfaInterfaces`` EFAs, as ``efa-launch-template-interfaces``
    demands of a launch template; ``allow_fewer`` accepts a deliberate subset of cards (``efaCardIndices``).
    """
    from gpu_fabric.aws.catalog.bundled import BundledInstanceCatalog
    from gpu_fabric.aws.catalog.types import UnknownInstanceTypeError
    from gpu_fabric.aws.efa import validate_plan

    interfaces = node_class_interfaces(node_class)
    problems = []
    for name in instance_types:
        try:
            info = BundledInstanceCatalog().describe([name])[name]
        except UnknownInstanceTypeError:
            continue
        maximum = int(((info.get("NetworkInfo") or {}).get("EfaInfo") or {}).get("MaximumEfaInterfaces", 0))
        efa_count = (min(efa_interface_count(node_class), maximum) or None) if allow_fewer else None
        for problem in validate_plan(info, interfaces, efa_count=efa_count):
            problems.append(f"EC2NodeClass {node_class.object_name}: instanceTypes {name}: {problem} -- one NodeClass "
                            "carries one EFA layout; give instance types whose EFA cards differ a pool each")
    return problems


def security_group_findings(node_class: Resource, resources: Sequence[Resource]) -> list[str]:
    """An EFA NodeClass must select the EFA security group this stack creates."""
    if not efa_interface_count(node_class):
        return []
    selected = selected_stack_groups(node_class, resources)
    if selected is None or selected:
        return []  # None: the engine did not say where the spec's values come from, so nothing to refuse
    return [f"EC2NodeClass {node_class.object_name} has {efa_interface_count(node_class)} EFA interfaces but selects no EFA "
            "security group of this stack (the EFA domain's group, or the pool's own, with all traffic to and from "
            "itself): EFA traffic between its nodes would be dropped"]


def component_version_findings(component: Resource) -> list[str]:
    """:func:`gpu_fabric.aws.karpenter.version_findings` of a ``KarpenterEfaPool``'s stated Karpenter version."""
    version = known_str(as_mapping(component.props.get("karpenter")).get("version"))
    return [] if version is None else version_findings(component.name, version)


def karpenter_problems(resources: Sequence[Resource], allow_fewer: bool = False) -> list[tuple[str, str]]:
    """``(message, urn)`` for every Karpenter rule the stack breaks (``allow_fewer``: see :func:`layout_findings`)."""
    classes = node_classes(resources)
    findings: list[tuple[str, str]] = []
    for node_class in classes:
        for problem in [*karpenter_interface_findings(node_class_interfaces(node_class)),
                        *public_ip_findings(node_class.spec.get("associatePublicIPAddress"), efa_interface_count(node_class)),
                        ]:
            findings.append((f"EC2NodeClass {node_class.object_name}: {problem}", node_class.urn))
        findings.extend((problem, node_class.urn) for problem in security_group_findings(node_class, resources))
    for pool in node_pools(resources):
        pool_class = node_class_of(pool, classes)
        if pool_class is None or not efa_interface_count(pool_class):
            continue
        types = requirement_values({"spec": pool.spec}, INSTANCE_TYPE_KEY) or []
        # The EFA count and the zone pin are decided over the whole list: an unknown interface or
        # requirement (any part of it) may be the one the rule looks for, so those refusals wait.
        if not rests_on_unknown(pool_class.spec, ("networkInterfaces",)):
            findings.extend((problem, pool.urn) for problem in layout_findings(pool_class, types, allow_fewer))
        if rests_on_unknown(pool.spec, ("template", "spec", "requirements")):
            continue
        has_group = bool(as_mapping(pool_class.spec.get("placementGroupSelector")))
        for problem in zone_pin_findings(has_group, requirement_values({"spec": pool.spec}, ZONE_KEY)):
            findings.append((f"NodePool {pool.object_name}: {problem}", pool.urn))
    for component in resources:
        if component.type == KARPENTER_POOL_TYPE:
            findings.extend((problem, component.urn) for problem in component_version_findings(component))
    return findings


def karpenter_findings(resources: Sequence[Resource], allow_fewer: bool = False) -> list[tuple[Finding, str]]:
    """``(finding, urn)`` of :data:`gpu_fabric.aws.karpenter.KARPENTER_EFA_POOL` for every problem of the stack."""
    return [(Finding.of(KARPENTER_EFA_POOL, "", message), urn) for message, urn in karpenter_problems(resources, allow_fewer)]


def _validate(args: StackValidationArgs, report_violation: Any) -> None:
    allow_fewer = allows_fewer_efa_interfaces(args)
    for finding, urn in karpenter_findings(stack_resources(args), allow_fewer):
        report_finding(report_violation, finding, finding.message, urn)


karpenter_efa_pool = StackValidationPolicy(
    name="karpenter-efa-pool",
    display_name="Karpenter EFA pools launch the nodes they describe",
    description=(
        "An EFA EC2NodeClass carries one EFA layout that fits every instance type its NodePools allow, selects "
        "the stack's EFA security group, sets no public IP with more than one EFA, and with a placement group "
        "its NodePools are pinned to one zone; a stated Karpenter is at least 1.11."
    ),
    validate=_validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    tags=["aws", "efa", "karpenter"],
    config_schema=PolicyConfigSchema(properties=ALLOW_FEWER_EFA_INTERFACES),
    remediation_steps=(
        "Let gpu-fabric plan the pool (aws.provisioner: karpenter, or the KarpenterEfaPool component): it writes "
        "the interfaces from the instance facts (`gpu-fabric efa-info <type>`), one instance-type family per "
        "pool, the zone requirement, and the EFA domain's security group. Upgrade Karpenter to 1.11 or later."
    ),
    url="https://karpenter.sh/docs/concepts/nodeclasses/",
)
