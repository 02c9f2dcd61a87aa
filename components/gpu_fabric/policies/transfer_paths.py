"""``gpustack-transfer-path-consistency``: the GPUStack operator's schema and admission, decided at ``pulumi preview``.

Every ``worker.gpustack.ai`` manifest of the stack (ModelDeployment, KVCacheBackend, KVCachePool,
KVCachePoolBinding) goes through :func:`gpu_fabric.gpustack.admission_pipeline.analyze` -- the one implementation the
components, ``load_config`` and ``gpu-fabric lint`` use too: the operator's CRD schema (a field the
API server would prune is a violation), its ModelDeployment webhook rules, and the transfer paths.
Each finding the API server or the operator would refuse becomes a violation on the object's URN,
with the operator's message verbatim; valid objects say nothing. At preview a finding that rests on
a value not yet known (:func:`waiting_objects`) waits for it; every other one is still refused.

Which operator: a policy pack is not given the stack's configuration, so the stack writes
``gpu-fabric:gpustackOperator`` onto the inputs of its gpu-fabric components (GpuFabric, ModelDeployment,
KVCache: ``gpustackOperator``), and :func:`stack_operator` reads it there. A stack without such a
component is judged under the default (0.10.0); components naming different versions are a violation,
since one cluster runs one operator.
"""

from __future__ import annotations

from typing import Any, Mapping

from pulumi_policy import EnforcementLevel, Severity, StackValidationArgs, StackValidationPolicy

from gpu_fabric.config.shapes import as_mapping, is_unknown, unknown_paths
from gpu_fabric.findings import Finding, ObjectRef
from gpu_fabric.gpustack.profiles import stand_in_findings
from gpu_fabric.gpustack.admission_pipeline import GPUSTACK_GROUP
from gpu_fabric.policies.engine_wire import stack_resources
from gpu_fabric.plan.resource_view import (
    DEFAULT_NAMESPACE,
    Resource,
    gpustack_objects,
    miscased_gpustack_objects,
    stack_operator,
)
from gpu_fabric.policies.reporting import report_finding
from gpu_fabric.policies.transfer_report import stack_transfer_report


def object_key(kind: str, namespace: str | None, name: str) -> tuple[str, str, str]:
    """Identity of a GPUStack object; cluster-scoped kinds have no namespace."""
    return kind, namespace or "", name


def _key_of(resource: Resource) -> tuple[str, str, str]:
    namespace = resource.namespace
    if resource.kind in ("ModelDeployment", "KVCachePoolBinding"):
        namespace = namespace or DEFAULT_NAMESPACE
    else:
        namespace = None
    return object_key(resource.kind, namespace, resource.object_name)


_CACHE_KINDS = ("KVCachePoolBinding", "KVCachePool", "KVCacheBackend")


def _depends_on_cache_chain(obj: Mapping[str, Any]) -> bool:
    """A deployment with a cache reference, a binding or a pool: its findings read the cache chain."""
    kind = obj.get("kind")
    if kind in ("KVCachePoolBinding", "KVCachePool"):
        return True
    return kind == "ModelDeployment" and as_mapping(obj.get("spec")).get("kvCache") is not None


def waiting_objects(objects: list[Resource], unidentified: bool = False) -> set[tuple[str, str, str]]:
    """The GPUStack objects whose findings rest on a value unknown at preview.

    The analysis reads an unknown value as nothing it wants (``gpu_fabric.config.shapes.Unknown``),
    so a refusal resting on that reading is not decided yet. A finding rests on its own object and,
    for a deployment with a cache reference, a binding or a pool, on the cache chain (bindings,
    pools, backends); any unknown value there makes it wait. Every other finding is still refused.
    """
    unknown = {_key_of(r) for r in objects if unknown_paths(dict(r.props))}
    chain_unknown = unidentified or any(_key_of(r) in unknown for r in objects
                                        if r.kind in _CACHE_KINDS or is_unknown(r.props.get("kind")))
    # ``unidentified``: a GPUStack resource whose kind or apiVersion is unknown is no object the
    # analysis can index, so any reference may be to it.
    return {_key_of(r) for r in objects
            if _key_of(r) in unknown or (chain_unknown and _depends_on_cache_chain(r.props))}


def _analysis_key(resource: Resource) -> tuple[str, str, str]:
    """The identity the analysis gives the resource's object (its name and namespace as the manifest holds them,
    whatever they are): how its findings name it."""
    metadata = as_mapping(resource.props.get("metadata"))
    namespaced = resource.kind in ("ModelDeployment", "KVCachePoolBinding")
    namespace = str(metadata.get("namespace") or DEFAULT_NAMESPACE) if namespaced else None
    return object_key(resource.kind, namespace, str(metadata.get("name", "")))


def _finding_key(subject: ObjectRef) -> tuple[str, str, str]:
    namespace = subject.namespace or DEFAULT_NAMESPACE if subject.kind in ("ModelDeployment", "KVCachePoolBinding") else None
    return object_key(subject.kind, namespace, subject.name)


def transfer_findings(resources: list[Resource]) -> list[tuple[Finding, str | None]]:
    """``(finding, urn)`` for every refusal of the analysis over the stack's GPUStack objects; a finding on an
    object that waits for a value unknown at preview (:func:`waiting_objects`) rests on that value."""
    objects = gpustack_objects(resources)
    miscased = miscased_gpustack_objects(resources)
    if not objects and not miscased:
        return []
    urns: Mapping[tuple[str, str, str], str] = {_key_of(r): r.urn for r in [*miscased, *objects]}
    report = stack_transfer_report(resources, with_miscased=True)
    if report is None:
        return []
    unidentified = any(f":{GPUSTACK_GROUP}/" in r.type and r not in objects for r in resources)
    waiting = waiting_objects(objects, unidentified)
    # An object whose name or namespace is unknown is named by the analysis as its manifest holds them.
    waiting |= {_analysis_key(r) for r in objects if _key_of(r) in waiting}
    found: list[tuple[Finding, str | None]] = []
    for finding in report.errors:
        if finding.subject is None:
            continue
        key = _finding_key(finding.subject)
        urn = urns.get(object_key(finding.subject.kind, finding.subject.namespace, finding.subject.name))
        found.append((finding.waiting(key in waiting), urn))
    return found


def _validate(args: StackValidationArgs, report_violation: Any) -> None:
    resources = stack_resources(args)
    if not gpustack_objects(resources) and not miscased_gpustack_objects(resources):
        return
    profile, problem = stack_operator(resources)
    if profile is None:
        report_violation(str(problem))
        return
    for finding, urn in transfer_findings(resources):
        report_finding(report_violation, finding, str(finding), urn)


transfer_path_consistency = StackValidationPolicy(
    name="gpustack-transfer-path-consistency",
    display_name="GPUStack transfer paths are admissible",
    description=(
        "Every GPUStack object matches the operator's CRD schema with nothing pruned, every ModelDeployment "
        "passes the operator's admission webhook (engine version, role kinds, router and engine, elastic EP), "
        "every interface request is used by an RDMA or EFA transfer leg, and its cache binding, pool and "
        "backend resolve with agreeing member protocols (decided before anything is applied)."
    ),
    validate=_validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    tags=["gpustack", "transfer", "kv-cache", "rdma", "efa"],
    remediation_steps=(
        "Follow the message: it names the field and, where the operator has one, its own words. For a "
        "field the operator line lacks, write the spelling the message names (gpu-fabric:gpustackOperator picks "
        "the line: 0.10 takes engine.image and instanceType, 0.11 acceleratorType). "
        "For interfaces, give the deployment an effective fabric leg for the interfaces it requests: either a "
        "kvCache.poolRef whose KVCacheBackend (and every member group) uses RDMA or EFA, or a router, "
        "Prefill/Decode roles, the vLLM engine and kvTransfer.protocol RDMA/EFA. Otherwise drop "
        "roles[].resources.interface. Make sure the KVCachePoolBinding (same namespace), KVCachePool "
        "and KVCacheBackend it names are in the stack, and that member groups agree on one protocol."
    ),
)


def _validate_stand_in(args: StackValidationArgs, report_violation: Any) -> None:
    profile, _ = stack_operator(stack_resources(args))
    for finding in stand_in_findings(profile) if profile is not None else []:
        report_finding(report_violation, finding, f"{finding.path}: {finding.message}")


gpustack_operator_unverified = StackValidationPolicy(
    name="gpustack-operator-unverified",
    display_name="The GPUStack operator is a line gpu-fabric mirrors",
    description=(
        "A stack whose gpustackOperator is a release newer than every mirrored line, decided under the newest "
        "line's rules because the stack asked for it (0.12.0+as-0.11): nothing is verified for that release."
    ),
    validate=_validate_stand_in,
    enforcement_level=EnforcementLevel.ADVISORY,
    severity=Severity.LOW,
    tags=["gpustack", "operator"],
    remediation_steps=(
        "Check the release notes of the operator you run against the newest mirrored line, and let a preview against "
        "the cluster run its admission; drop the +as-<line> suffix once gpu-fabric mirrors that line "
        "(docs/gpustack-api-version.md)."
    ),
)
