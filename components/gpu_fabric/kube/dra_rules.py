"""The DRA mistakes that are silent or surface only at scheduling, refused before the apply (pure).

Each rule is one function over the typed readings of :mod:`gpu_fabric.kube.dra_claims` and a
:class:`DraContext`; all report through the policy ``dra-device-claims``. What the context holds is
what the stack knows and a manifest does not -- the lead surface (render, ``lint --stack``, the pack)
builds it from the configuration, one per pool/namespace a workload lands in:

``DraContext`` fields
    * ``per_root_counts`` -- DeviceClass -> how many of its devices one PCIe root holds on the
      pool's instance type (p5en.48xlarge: ``{"gpu.nvidia.com": 1, "efa.networking.k8s.aws": 2}``).
      Empty: the pcieRoot capacity rule does not decide.
    * ``kueue_managed`` -- the workload is admitted through Kueue (its namespace's LocalQueue).
    * ``kueue_prioritized_list`` -- Kueue's ``KueueDRAIntegrationPrioritizedList`` gate is on
      (``firstAvailable`` is then charged, not refused).
    * ``mapped_device_classes`` -- the DeviceClasses Kueue's ``resources.deviceClassMappings`` map;
      ``None``: not known, the mapping rule does not decide.
    * ``rendered_templates`` -- ``(namespace, name)`` of every ResourceClaimTemplate the stack
      renders; ``None``: not known, the reference rule does not decide.
    * ``kinds`` -- which DeviceClasses are DRANET / fabric NIC / NVIDIA GPU classes
      (:class:`~gpu_fabric.kube.dra_claims.DeviceKinds`; add a stack's custom classes with
      ``DraContext.with_device_classes(manifests)``).

The rules (research: breadth-late-2026 §1.10, each function cites its source):

* ``dra-dranet-host-network`` -- a ``hostNetwork`` pod claiming a DRANET device never starts.
* ``dra-numa-constraint-nvidia`` -- a ``numaNode`` constraint over an NVIDIA GPU is never satisfied.
* ``dra-pcie-root-capacity`` -- a ``pcieRoot`` constraint over more devices than one root holds.
* ``dra-kueue-request-mode`` -- ``firstAvailable`` / ``allocationMode: All`` under Kueue.
* ``dra-kueue-device-class-mapped`` -- a DeviceClass Kueue does not map.
* ``dra-claim-template-rendered`` -- a pod's claim naming a template the stack does not render.

Device-plugin keys requested on a ``dra`` pool are :mod:`gpu_fabric.kube.dra_exclusive`'s rule (it knows the
pools a pod lands on).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence

from gpu_fabric.findings import FieldPath, Finding, Refusal, Rule
from gpu_fabric.kube.dra_claims import (
    ALL,
    CLAIM_KIND,
    CLAIM_TEMPLATE_KIND,
    NUMA_ATTRIBUTES,
    PCIE_ROOT_ATTRIBUTE,
    POLICY,
    ClaimSpec,
    DeviceKinds,
    PodView,
    is_resource_object,
    object_ref,
    read_claim,
    read_claim_template,
    read_pod,
)
from gpu_fabric.kube.pod_templates import POD_TEMPLATE_PATHS

DRA_DRANET_HOST_NETWORK = Rule(
    "dra-dranet-host-network", "a pod claiming a DRANET device does not use the host network",
    "kubernetes-sigs/dranet: pkg/driver/nri_hooks.go (RunPodSandbox: pod using host network can not claim host devices)",
    policy=POLICY)
DRA_NUMA_CONSTRAINT_NVIDIA = Rule(
    "dra-numa-constraint-nvidia", "no numaNode matchAttribute constraint spans an NVIDIA GPU request",
    "kubernetes-sigs/dra-driver-nvidia-gpu: site/content/docs/reference/resourceslice-attributes.md; KEP-6072",
    policy=POLICY)
DRA_PCIE_ROOT_CAPACITY = Rule(
    "dra-pcie-root-capacity", "a pcieRoot matchAttribute constraint asks for no more devices of a class than one PCIe root holds",
    "kubernetes/api: resource/v1/types.go DeviceConstraint.MatchAttribute", policy=POLICY)
DRA_KUEUE_REQUEST_MODE = Rule(
    "dra-kueue-request-mode", "a claim of a Kueue-managed workload uses neither firstAvailable nor allocationMode: All",
    "kubernetes-sigs/kueue: pkg/dra/claims.go chargesForClaimSpec", policy=POLICY, refusal=Refusal.INPUT)
DRA_KUEUE_DEVICE_CLASS_MAPPED = Rule(
    "dra-kueue-device-class-mapped", "every DeviceClass a Kueue-managed claim uses is in Kueue's deviceClassMappings",
    "kubernetes-sigs/kueue: pkg/dra/claims.go GetResourceRequestsForResourceClaimTemplates; kubernetes-sigs/kueue#10504",
    policy=POLICY)
DRA_CLAIM_TEMPLATE_RENDERED = Rule(
    "dra-claim-template-rendered", "a pod's resourceClaimTemplateName names a ResourceClaimTemplate the stack renders",
    "https://kubernetes.io/docs/concepts/scheduling-eviction/dynamic-resource-allocation/", policy=POLICY)
RULES = (DRA_DRANET_HOST_NETWORK, DRA_NUMA_CONSTRAINT_NVIDIA, DRA_PCIE_ROOT_CAPACITY, DRA_KUEUE_REQUEST_MODE,
         DRA_KUEUE_DEVICE_CLASS_MAPPED, DRA_CLAIM_TEMPLATE_RENDERED)


@dataclass(frozen=True)
class DraContext:
    """What the stack knows about where a workload or claim lands (see the module docstring)."""

    per_root_counts: Mapping[str, int] = field(default_factory=dict)
    kueue_managed: bool = False
    kueue_prioritized_list: bool = False
    mapped_device_classes: Optional[frozenset[str]] = None
    rendered_templates: Optional[frozenset[tuple[str, str]]] = None
    kinds: DeviceKinds = DeviceKinds()

    def with_device_classes(self, manifests: Iterable[Mapping[str, Any]]) -> "DraContext":
        """This context knowing the DeviceClasses among ``manifests`` (a custom class pinning ``dra.net`` is DRANET)."""
        return replace(self, kinds=self.kinds.with_classes(manifests))


# -- the rules -------------------------------------------------------------------------------------------


def host_network_findings(pod: PodView, specs: Mapping[tuple[str, str], ClaimSpec], context: DraContext) -> list[Finding]:
    """A ``hostNetwork: true`` pod whose claim (from a template or a named ResourceClaim) asks for a DRANET device.

    DRANET refuses the sandbox: ``RunPodSandbox pod %s/%s using host network can not claim host devices``
    (kubernetes-sigs/dranet pkg/driver/nri_hooks.go); the pod never starts. ``specs``: the claim specs of
    the pod's namespace by ``(kind, name)`` (``ResourceClaimTemplate`` or ``ResourceClaim``).
    """
    if not pod.host_network:
        return []
    found = []
    for claim in pod.claims:
        kind, name = (CLAIM_TEMPLATE_KIND, claim.template) if claim.template else (CLAIM_KIND, claim.claim)
        spec = specs.get((kind, name or ""))
        if spec is None:
            continue
        dranet = sorted(spec.device_classes & context.kinds.dranet)
        if dranet:
            found.append(Finding.of(DRA_DRANET_HOST_NETWORK, pod.path / "hostNetwork", (
                f"hostNetwork: true with claim {claim.name!r} ({kind} {name}) asking for "
                f"DRANET device class {', '.join(dranet)}: DRANET refuses the pod's sandbox (\"using host network can "
                "not claim host devices\") and the pod never starts; drop hostNetwork"), subject=pod.subject))
    return found


def numa_constraint_findings(spec: ClaimSpec, context: DraContext) -> list[Finding]:
    """A ``matchAttribute`` on a NUMA attribute over a request served by an NVIDIA GPU class.

    A device without the constrained attribute never satisfies it (kubernetes/kubernetes
    staging/src/k8s.io/dynamic-resource-allocation/structured allocator, ``matchAttributeConstraint.add``:
    "Constraint not satisfied, attribute not set"), and NVIDIA's GPU driver publishes no
    ``numaNode`` (``numa`` on VFIO devices only: dra-driver-nvidia-gpu reference/resourceslice-attributes.md;
    KEP-6072's table): the claim is never allocated. ``resource.kubernetes.io/pcieRoot`` is what both publish.
    """
    found = []
    for constraint in spec.decided_constraints:
        if constraint.match_attribute not in NUMA_ATTRIBUTES:
            continue
        requests = spec.constrained(constraint)
        gpus = [request.name for request in requests if request.device_classes & context.kinds.gpus]
        if not gpus:
            continue
        nics = [request.name for request in requests if request.device_classes & context.kinds.nics]
        beside = f" and NIC request{'s' if len(nics) > 1 else ''} {', '.join(nics)}" if nics else ""
        found.append(Finding.of(DRA_NUMA_CONSTRAINT_NVIDIA, constraint.path / "matchAttribute", (
            f"matchAttribute {constraint.match_attribute} over NVIDIA GPU request{'s' if len(gpus) > 1 else ''} "
            f"{', '.join(gpus)}{beside}: NVIDIA's GPU DRA driver publishes no NUMA attribute and a device without "
            f"the attribute never satisfies the constraint, so the claim is never allocated; use {PCIE_ROOT_ATTRIBUTE}"),
            subject=spec.subject))
    return found


def pcie_root_capacity_findings(spec: ClaimSpec, context: DraContext) -> list[Finding]:
    """A ``pcieRoot`` constraint whose requests ask for more devices of one class than one PCIe root holds.

    "If a request is fulfilled by multiple devices, then all of the devices must satisfy the constraint"
    (kubernetes/api resource/v1 types.go, DeviceConstraint.MatchAttribute): every device of the
    constrained requests sits on one root, so more GPUs (or NICs) than a root has is never allocated
    (p5en.48xlarge: one GPU and two EFAs per root). A request served ``firstAvailable`` counts its smallest
    alternative; ``allocationMode: All`` depends on the node and is not counted.
    """
    if not context.per_root_counts:
        return []
    found = []
    for constraint in spec.decided_constraints:
        if constraint.match_attribute != PCIE_ROOT_ATTRIBUTE:
            continue
        wanted: dict[str, int] = {}
        for request in spec.constrained(constraint):
            asks = [ask for ask in request.asks if ask.device_class in context.per_root_counts and ask.count is not None]
            if not asks or len(asks) != len(request.asks):
                continue  # an ask of another class, All, or an unknown count: undecided
            smallest = min(asks, key=lambda ask: ask.count or 0)
            if smallest.device_class is not None and smallest.count is not None:
                wanted[smallest.device_class] = wanted.get(smallest.device_class, 0) + smallest.count
        for device_class, count in sorted(wanted.items()):
            room = context.per_root_counts[device_class]
            if count > room:
                found.append(Finding.of(DRA_PCIE_ROOT_CAPACITY, constraint.path, (
                    f"matchAttribute {PCIE_ROOT_ATTRIBUTE} puts {count} {device_class} devices on one PCIe root, which "
                    f"holds {room} on this pool's instance type: the claim is never allocated; split it into one "
                    "GPU/NIC request pair and one constraint per root"), subject=spec.subject))
    return found


def kueue_request_mode_findings(spec: ClaimSpec, context: DraContext) -> list[Finding]:
    """``allocationMode: All`` (always) or ``firstAvailable`` (unless Kueue's prioritized-list gate is on) in a
    claim of a Kueue-managed workload: Kueue refuses to admit it -- "AllocationMode 'All' is not supported",
    "FirstAvailable device selection is not supported" (kubernetes-sigs/kueue pkg/dra/claims.go,
    ``chargesForClaimSpec``)."""
    if not context.kueue_managed:
        return []
    found = []
    for request in spec.requests:
        if request.first_available and not context.kueue_prioritized_list:
            found.append(Finding.of(DRA_KUEUE_REQUEST_MODE, request.path / "firstAvailable", (
                f"request {request.name!r} uses firstAvailable, which Kueue refuses (\"FirstAvailable device selection "
                "is not supported\") unless its KueueDRAIntegrationPrioritizedList gate is on: the workload is never "
                "admitted; ask for exactly one device class"), subject=spec.subject))
        for ask in request.asks:
            if ask.allocation_mode == ALL:
                found.append(Finding.of(DRA_KUEUE_REQUEST_MODE, ask.path / "allocationMode", (
                    f"request {ask.name!r} uses allocationMode: All, which Kueue refuses (\"AllocationMode 'All' is "
                    "not supported\"): the workload is never admitted; ask for an exact count"), subject=spec.subject))
    return found


def kueue_device_class_findings(spec: ClaimSpec, context: DraContext) -> list[Finding]:
    """A DeviceClass of a Kueue-managed claim that ``deviceClassMappings`` does not map.

    Kueue refuses the workload ("DeviceClass ... is not mapped", kubernetes-sigs/kueue pkg/dra/claims.go)
    and, with no DRA configuration at all, admits it without charging the devices: quota bypassed
    (kubernetes-sigs/kueue#10504).
    """
    if not context.kueue_managed or context.mapped_device_classes is None:
        return []
    found = []
    for request in spec.requests:
        for ask in request.asks:
            if ask.device_class and ask.device_class not in context.mapped_device_classes:
                found.append(Finding.of(DRA_KUEUE_DEVICE_CLASS_MAPPED, ask.path / "deviceClassName", (
                    f"DeviceClass {ask.device_class} of request {ask.name!r} is not in Kueue's deviceClassMappings "
                    f"(mapped: {', '.join(sorted(context.mapped_device_classes)) or 'none'}): Kueue refuses the "
                    "workload, or admits it without charging the devices when it has no DRA configuration"),
                    subject=spec.subject))
    return found


def template_reference_findings(pod: PodView, context: DraContext) -> list[Finding]:
    """A pod's ``resourceClaimTemplateName`` naming no ResourceClaimTemplate the stack renders in its namespace:
    the pod stays pending until the template exists (Kubernetes docs, Dynamic Resource Allocation:
    "ResourceClaimTemplate ... the control plane generates a ResourceClaim" from the named template)."""
    if context.rendered_templates is None:
        return []
    found = []
    for claim in pod.claims:
        if claim.template and (pod.namespace, claim.template) not in context.rendered_templates:
            rendered = sorted(name for namespace, name in context.rendered_templates if namespace == pod.namespace)
            found.append(Finding.of(DRA_CLAIM_TEMPLATE_RENDERED, claim.path / "resourceClaimTemplateName", (
                f"claim {claim.name!r} names ResourceClaimTemplate {claim.template}, which the stack does not render in "
                f"namespace {pod.namespace} (rendered: {', '.join(rendered) or 'none'}): the pod stays pending"),
                subject=pod.subject))
    return found


CLAIM_RULES = (numa_constraint_findings, pcie_root_capacity_findings, kueue_request_mode_findings,
               kueue_device_class_findings)


def claim_spec_findings(spec: ClaimSpec, context: DraContext) -> list[Finding]:
    """Every claim rule over one claim spec."""
    return [finding for rule in CLAIM_RULES for finding in rule(spec, context)]


def pod_findings(pod: PodView, specs: Mapping[tuple[str, str], ClaimSpec], context: DraContext) -> list[Finding]:
    """Every pod rule over one pod template; ``specs``: claim specs of its namespace by ``(kind, name)``."""
    return [*host_network_findings(pod, specs, context), *template_reference_findings(pod, context)]


# -- over manifests ------------------------------------------------------------------------------------


def _pod_specs(manifest: Mapping[str, Any]) -> list[tuple[Any, tuple[str, ...]]]:
    """``(pod spec, its path segments)`` of every pod template of a workload (read leniently)."""
    kind = manifest.get("kind")
    if not isinstance(kind, str) or kind not in POD_TEMPLATE_PATHS:
        return []
    found = []
    for template_path in POD_TEMPLATE_PATHS[kind]:
        node: Any = manifest.get("spec")
        segments = ["spec"]
        for key in template_path:
            node = node.get(key) if isinstance(node, Mapping) else None
            segments.append(key)
        if template_path:
            node = node.get("spec") if isinstance(node, Mapping) else None
            segments.append("spec")
        if node is not None:
            found.append((node, tuple(segments)))
    return found


ClaimKey = tuple[str, str, str]
"""``(namespace, kind, name)`` of a ResourceClaimTemplate or ResourceClaim."""


def claim_specs(manifests: Iterable[Mapping[str, Any]]) -> tuple[dict[ClaimKey, ClaimSpec], list[Finding]]:
    """The claim spec of every ResourceClaimTemplate and ResourceClaim among ``manifests`` by
    ``(namespace, kind, name)``, and their shape findings."""
    specs: dict[ClaimKey, ClaimSpec] = {}
    problems: list[Finding] = []
    for manifest in manifests:
        for kind, read in ((CLAIM_TEMPLATE_KIND, read_claim_template), (CLAIM_KIND, read_claim)):
            if is_resource_object(manifest, kind):
                spec, shape = read(manifest)
                ref = object_ref(manifest)
                specs[(ref.namespace or "default", kind, ref.name)] = spec
                problems.extend(shape)
    return specs, problems


def workload_findings(manifest: Mapping[str, Any], specs: Mapping[ClaimKey, ClaimSpec],
                      context: DraContext) -> list[Finding]:
    """Shape and pod rules over every pod template of one workload; ``specs`` from :func:`claim_specs`."""
    ref = object_ref(manifest)
    namespace = ref.namespace or "default"
    in_namespace = {(kind, name): spec for (space, kind, name), spec in specs.items() if space == namespace}
    found: list[Finding] = []
    for pod_spec, segments in _pod_specs(manifest):
        pod, shape = read_pod(pod_spec, FieldPath(segments), ref, namespace)
        found.extend(shape)
        found.extend(pod_findings(pod, in_namespace, context))
    return found


def dra_findings(manifests: Sequence[Mapping[str, Any]], context: DraContext) -> list[Finding]:
    """Every DRA rule over ``manifests`` with one context: the templates' and claims' shapes and claim rules,
    then every workload's pod rules (templates and named claims looked up among ``manifests``). DeviceClasses among the
    manifests join the context's kinds. For a context per pool or namespace call :func:`workload_findings`
    and :func:`claim_spec_findings` yourself."""
    context = context.with_device_classes(manifests)
    specs, found = claim_specs(manifests)
    for spec in specs.values():
        found.extend(claim_spec_findings(spec, context))
    for manifest in manifests:
        found.extend(workload_findings(manifest, specs, context))
    return found


def dra_findings_by_namespace(manifests: Sequence[Mapping[str, Any]],
                              context_of: Callable[[str], DraContext]) -> list[Finding]:
    """:func:`dra_findings` namespace by namespace, each with ``context_of(namespace)``.

    Whether Kueue admits a workload is a property of its namespace (a LocalQueue there), and claims,
    templates and the pods naming them live in one namespace; DeviceClasses (cluster-scoped) join every
    namespace's reading.
    """
    classes = [m for m in manifests if m.get("kind") == "DeviceClass"]
    by_namespace: dict[str, list[Mapping[str, Any]]] = {}
    for manifest in manifests:
        if manifest.get("kind") == "DeviceClass":
            continue
        by_namespace.setdefault(object_ref(manifest).namespace or "default", []).append(manifest)
    found: list[Finding] = []
    for namespace in sorted(by_namespace):
        found.extend(dra_findings([*classes, *by_namespace[namespace]], context_of(namespace)))
    return found

