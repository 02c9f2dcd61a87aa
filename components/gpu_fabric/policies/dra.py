"""Policy ``dra-device-claims``: :mod:`gpu_fabric.kube.dra_rules` over a stack's Kubernetes objects.

Namespace by namespace (:func:`stack_context`): the shapes of the stack's ResourceClaimTemplates,
ResourceClaims and pods' ``resourceClaims``; a ``hostNetwork`` pod claiming a DRANET device; a NUMA
constraint over an NVIDIA GPU; a ``pcieRoot`` constraint over more devices than the ``dra`` pools' roots
hold; ``firstAvailable`` or ``allocationMode: All`` where a LocalQueue of the stack admits; and, when the
stack renders ResourceClaimTemplates, a pod's claim naming one it does not render. Device-plugin keys on a
``dra`` pool are the ``dra-pools`` policy's (:mod:`gpu_fabric.policies.dra_pools`).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from pulumi_policy import EnforcementLevel, Severity, StackValidationArgs, StackValidationPolicy

from gpu_fabric.findings import Finding
from gpu_fabric.kube.dra_claims import CLAIM_TEMPLATE_KIND, is_resource_object, object_ref
from gpu_fabric.config.shapes import as_mapping
from gpu_fabric.kube.dra_rules import DraContext, dra_findings_by_namespace
from gpu_fabric.kube.claim_templates import DRA_DEVICE_CLASSES
from gpu_fabric.plan.dra_pools import DraPool, per_root_device_counts
from gpu_fabric.policies.engine_wire import stack_resources
from gpu_fabric.policies.reporting import report_finding
from gpu_fabric.plan.resource_view import KUEUE_POOL_TYPE, Resource


def stack_context(resources: Sequence[Resource]) -> Callable[[str], DraContext]:
    """Each namespace's context, from what the stack's resources state.

    * the rendered templates, when the stack renders any (a pod naming another one is refused);
    * PCIe-root capacities from the ``dra`` pools' layouts (the ``KueuePool`` components' ``pool`` inputs);
    * Kueue admits a namespace's workloads when the stack declares a LocalQueue there, and maps the DeviceClasses the
      stack exports as ``kueueDeviceClassMappings`` when it owns the ClusterQueues of a ``dra`` pool (the
      ``KueuePool`` components' ``queueOwner``), as ``load_config`` and ``lint --stack`` read the configuration
      (:func:`gpu_fabric.kube.kueue.device_class_mappings`); otherwise that rule stays undecided.
    """
    objects = [r for r in resources if r.is_kubernetes_object]
    templates = [object_ref(r.props) for r in objects if is_resource_object(r.props, CLAIM_TEMPLATE_KIND)]
    rendered = frozenset((ref.namespace or "default", ref.name) for ref in templates) if templates else None
    pools = [pool for r in resources if r.type == KUEUE_POOL_TYPE
             if (pool := DraPool.of_input(as_mapping(r.props.get("pool")))) is not None]
    counts = per_root_device_counts(pools)
    queued = {r.namespace or "default" for r in objects if r.kind == "LocalQueue"}
    owned = any(r.props.get("queueOwner") == "standalone" for r in resources if r.type == KUEUE_POOL_TYPE)
    mapped = frozenset(DRA_DEVICE_CLASSES) if pools and owned else None

    def context_of(namespace: str) -> DraContext:
        return DraContext(per_root_counts=counts, kueue_managed=namespace in queued,
                          mapped_device_classes=mapped if namespace in queued else None, rendered_templates=rendered)

    return context_of


def findings_of(resources: Sequence[Resource]) -> list[tuple[str, Finding]]:
    """``(urn, finding)`` of every DRA rule over the stack's Kubernetes objects."""
    objects = [r for r in resources if r.is_kubernetes_object]
    manifests = [r.props for r in objects]
    urns = {object_ref(r.props): r.urn for r in objects}
    return [(urns.get(finding.subject, "") if finding.subject else "", finding)
            for finding in dra_findings_by_namespace(manifests, stack_context(resources))]


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
