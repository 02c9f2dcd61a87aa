"""Policy ``dra-device-claims``: :mod:`gpu_fabric.kube.dra_rules` over a stack's Kubernetes objects.

What the stack's objects alone tell: the shapes of its ResourceClaimTemplates, ResourceClaims and pods'
``resourceClaims``; a ``hostNetwork`` pod claiming a DRANET device; a NUMA constraint over an NVIDIA GPU;
and, when the stack renders ResourceClaimTemplates at all, a pod's claim naming one it does not render.
The rules that need a pool's facts (PCIe-root capacity, Kueue's mappings, device-plugin keys on a DRA
pool) decide where the configuration builds their :class:`~gpu_fabric.kube.dra_rules.DraContext`.
"""

from __future__ import annotations

from typing import Any, Sequence

from pulumi_policy import EnforcementLevel, Severity, StackValidationArgs, StackValidationPolicy

from gpu_fabric.findings import Finding
from gpu_fabric.kube.dra_claims import CLAIM_TEMPLATE_KIND, is_resource_object, object_ref
from gpu_fabric.kube.dra_rules import DraContext, dra_findings
from gpu_fabric.policies.engine_wire import stack_resources
from gpu_fabric.policies.reporting import report_finding
from gpu_fabric.policies.resource_view import Resource


def stack_context(manifests: Sequence[Any]) -> DraContext:
    """The context a stack's objects give: its rendered templates, when it renders any."""
    templates = [object_ref(m) for m in manifests if is_resource_object(m, CLAIM_TEMPLATE_KIND)]
    rendered = frozenset((ref.namespace or "default", ref.name) for ref in templates) if templates else None
    return DraContext(rendered_templates=rendered)


def findings_of(resources: Sequence[Resource]) -> list[tuple[str, Finding]]:
    """``(urn, finding)`` of every DRA rule over the stack's Kubernetes objects."""
    objects = [r for r in resources if r.is_kubernetes_object]
    manifests = [r.props for r in objects]
    urns = {object_ref(r.props): r.urn for r in objects}
    return [(urns.get(finding.subject, "") if finding.subject else "", finding)
            for finding in dra_findings(manifests, stack_context(manifests))]


def _validate(args: StackValidationArgs, report_violation: Any) -> None:
    for urn, finding in findings_of(stack_resources(args)):
        report_finding(report_violation, finding, str(finding), urn or None)


dra_device_claims = StackValidationPolicy(
    name="dra-device-claims",
    display_name="DRA claims can be allocated and admitted",
    description=(
        "ResourceClaimTemplates, ResourceClaims and pods' resourceClaims have the resource.k8s.io/v1 shape; no "
        "hostNetwork pod claims a DRANET device; no numaNode constraint spans an NVIDIA GPU; a pcieRoot constraint "
        "asks for no more devices than one root holds; Kueue-managed claims use neither firstAvailable nor "
        "allocationMode: All and only mapped DeviceClasses; pods name templates the stack renders and request no "
        "device-plugin keys on a DRA pool."
    ),
    validate=_validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    tags=["dra", "efa", "gpu", "kueue"],
    remediation_steps=(
        "Pair each GPU with the NICs on its PCIe root (one request pair and one matchAttribute: "
        "resource.kubernetes.io/pcieRoot constraint per root), drop hostNetwork from pods with DRANET claims, "
        "ask Kueue-managed claims for exact counts of mapped DeviceClasses, and reference the stack's templates."
    ),
)
