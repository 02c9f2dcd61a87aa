"""Policy ``pool-accelerator-capacity``: :func:`gpu_fabric.plan.pool_capacity.capacity_findings` over a stack.

The pools are the ``KueuePool`` components' ``pool`` inputs (:func:`gpu_fabric.plan.pool_capacity.pool_capacity_of_input`:
a pool whose counts are unknown at preview is passed over), the roles those of the stack's ModelDeployment
resources; the finding is reported on the ModelDeployment whose role takes its pool past its capacity.
"""

from __future__ import annotations

from typing import Any, Sequence

from pulumi_policy import EnforcementLevel, Severity, StackValidationArgs, StackValidationPolicy

from gpu_fabric.config.shapes import as_mapping
from gpu_fabric.findings import Finding
from gpu_fabric.plan.pool_capacity import capacity_findings, pool_capacity_of_input
from gpu_fabric.policies.engine_wire import stack_resources
from gpu_fabric.policies.reporting import report_finding
from gpu_fabric.plan.resource_view import KUEUE_POOL_TYPE, Resource
from gpu_fabric.plan.resource_view import DEFAULT_NAMESPACE, gpustack_objects


def capacity_violations(resources: Sequence[Resource]) -> list[tuple[str, Finding]]:
    """``(urn, finding)`` for every pool its roles overfill."""
    pools = [pool for r in resources if r.type == KUEUE_POOL_TYPE
             if (pool := pool_capacity_of_input(as_mapping(r.props.get("pool")))) is not None]
    deployments = [r for r in gpustack_objects(list(resources)) if r.kind == "ModelDeployment"]
    if not pools or not deployments:
        return []
    urns = {(r.namespace or DEFAULT_NAMESPACE, r.object_name): r.urn for r in deployments}
    found = []
    for finding in capacity_findings(pools, [r.props for r in deployments]):
        subject = finding.subject
        found.append((urns.get((subject.namespace or DEFAULT_NAMESPACE, subject.name), "") if subject else "", finding))
    return found


def _validate(args: StackValidationArgs, report_violation: Any) -> None:
    for urn, finding in capacity_violations(stack_resources(args)):
        report_finding(report_violation, finding, str(finding), urn or None)


pool_accelerator_capacity = StackValidationPolicy(
    name="pool-accelerator-capacity",
    display_name="The roles on a pool fit the pool at its largest",
    description=(
        "The ModelDeployment roles on a pool need no more accelerators (replicas x Pods per replica x accelerators "
        "per Pod, summed over every role) than the pool holds at its largest size (maxSize, or the NodePool's "
        "limits.nodes, x acceleratorsPerNode)."
    ),
    validate=_validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.MEDIUM,
    tags=["capacity", "gpustack", "kueue"],
    remediation_steps=(
        "Lower the roles' replicas (or accelerators per Pod), or raise the pool's aws.scaling.maxSize (nodeCount for "
        "a Karpenter pool or nodes the stack does not provision)."
    ),
)
