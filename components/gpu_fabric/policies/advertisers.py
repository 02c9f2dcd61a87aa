"""Policy ``fabric-advertisers``: one advertiser per pool's NICs, at versions that count them right.

The rules are :func:`gpu_fabric.kube.advertisers.advertiser_findings` (the ones ``load_config`` runs on
the stack's own plugin and ``gpu-fabric lint --stack`` on manifests) over every DaemonSet of the
program, including an EFA plugin declared outside the stack (``devicePlugins.efa.providedBy``):
the EFA plugin at least at each instance family's floor (v0.5.10 on p6-b200), NVIDIA's device plugin
with MOFED support off on EFA/RDMA pools, and no two of EFA plugin, EFA DRA driver, GPUStack Device
Manager, SR-IOV and RDMA shared device plugins on one pool.
"""

from __future__ import annotations

from typing import Any, Sequence

from pulumi_policy import EnforcementLevel, Severity, StackValidationArgs, StackValidationPolicy

from gpu_fabric.findings import Finding
from gpu_fabric.kube.advertisers import advertiser_findings
from gpu_fabric.kube.workloads import object_ref, pool_finding_line
from gpu_fabric.policies.engine_wire import stack_resources
from gpu_fabric.plan.resource_view import Resource
from gpu_fabric.policies.device_plugins import declared_external_efa_plugins
from gpu_fabric.policies.reporting import report_finding
from gpu_fabric.policies.workloads import fabric_pools


def daemonset_findings(resources: Sequence[Resource]) -> list[tuple[str, Finding]]:
    """``(urn of the DaemonSet named by the finding, finding)`` over the program's DaemonSets.

    An EFA plugin installed outside the stack (``devicePlugins.efa.providedBy``) counts as an
    advertiser of the pools it schedules on; it has no urn of its own.
    """
    daemonsets = [r for r in resources if r.is_kubernetes_object and r.kind == "DaemonSet"]
    urn_of = {object_ref(r.props): r.urn for r in daemonsets}
    manifests = [dict(r.props) for r in daemonsets] + declared_external_efa_plugins(resources)
    return [(urn_of.get(finding.subject, "") if finding.subject else "", finding)
            for finding in advertiser_findings(fabric_pools(resources), manifests)]


def _validate(args: StackValidationArgs, report_violation: Any) -> None:
    for urn, finding in daemonset_findings(stack_resources(args)):
        if finding.is_error:
            report_finding(report_violation, finding, pool_finding_line(finding), urn or None)


fabric_advertisers = StackValidationPolicy(
    name="fabric-advertisers",
    display_name="One advertiser per NIC, at the right version",
    description=(
        "The EFA device plugin is at least each instance family's floor (v0.5.10 for p6-b200), NVIDIA's device plugin "
        "runs with MOFED support off on EFA/RDMA pools, and no two NIC advertisers (EFA plugin, EFA DRA driver, GPUStack "
        "Device Manager, SR-IOV or RDMA shared device plugin) serve one pool."
    ),
    validate=_validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    tags=["device-plugin", "efa", "rdma", "nvidia"],
    remediation_steps=(
        "Raise the EFA plugin tag (v0.5.10 or later on p6-b200), pass --mofed-enabled=false to NVIDIA's device plugin "
        "(or run v0.19.3+), and keep one advertiser per pool: narrow the others' nodeSelector or drop them."
    ),
)
