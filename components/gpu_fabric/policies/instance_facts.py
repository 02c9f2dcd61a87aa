"""Policy ``pool-instance-facts``: a pool's name and accelerator count agree with its instances.

The rule is :func:`gpu_fabric.aws.instance_facts.pool_instance_findings`, the very function
``load_config`` runs at render; here it reads each ``KueuePool`` component's ``pool`` input and the
bundled ``DescribeInstanceTypes`` table. A pool named ``gpustack--nvidia-h200-linux-amd64`` on
p5.48xlarge (8 x NVIDIA H100) names an InstanceType GPUStack never derives from those nodes.
"""

from __future__ import annotations

from typing import Any

from pulumi_policy import EnforcementLevel, ResourceValidationArgs, ResourceValidationPolicy, Severity

from gpu_fabric.config.shapes import as_mapping
from gpu_fabric.aws.catalog.bundled import BundledInstanceCatalog
from gpu_fabric.aws.instance_facts import known_items, pool_instance_findings, pool_instance_types
from gpu_fabric.findings import Finding
from gpu_fabric.policies.engine_wire import plain
from gpu_fabric.plan.resource_view import KUEUE_POOL_TYPE
from gpu_fabric.policies.reporting import report_finding


def pool_findings(pool: Any) -> list[Finding]:
    """Every disagreement of one ``KueuePool`` ``pool`` input with its instances (paths relative to the pool)."""
    spec = plain(as_mapping(pool))
    types = pool_instance_types(spec)
    if not types:
        return []
    items = known_items(types, BundledInstanceCatalog())
    return pool_instance_findings(spec, items)


def _validate(args: ResourceValidationArgs, report_violation: Any) -> None:
    if args.resource_type != KUEUE_POOL_TYPE:
        return
    pool = as_mapping(args.props.get("pool"))
    for finding in pool_findings(pool):
        report_finding(report_violation, finding, f"pool {pool.get('name')}: {finding.path}: {finding.message}")


pool_instance_facts = ResourceValidationPolicy(
    name="pool-instance-facts",
    description=(
        "A pool's GPUStack InstanceType name (accelerator model, architecture), manufacturer and "
        "acceleratorsPerNode agree with the EC2 facts of every instance type of its node group."
    ),
    validate=_validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    tags=["instance-facts", "gpustack", "naming"],
    remediation_steps=(
        "Name the pool as GPUStack names the nodes (the derived name the message gives), set acceleratorsPerNode "
        "to the instance's GPU count, or choose instance types that have the hardware the pool names."
    ),
)
