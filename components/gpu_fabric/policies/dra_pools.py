"""Policy ``dra-pools``: the rules over ``deviceAllocation: dra`` pools, at ``pulumi preview``.

An adapter: the pools come from the ``KueuePool`` components' ``pool`` inputs (:class:`gpu_fabric.plan.dra_pools.DraPool`
and :func:`gpu_fabric.plan.resource_view.pool_facts`), the cluster's Kubernetes version and Auto Mode from the
``GpuFabric`` component's ``cluster`` input, and the rules are the ones ``load_config`` calls:

* :func:`gpu_fabric.plan.dra_pools.dra_pool_findings`: Kubernetes 1.34+, a provisioner with DRA support, a known
  PCIe layout (on the pool's ``KueuePool``);
* :func:`gpu_fabric.kube.dra_exclusive.device_plugin_findings`: no EFA or NVIDIA device plugin DaemonSet (nor the
  EFA plugin a ``GpuFabric`` declares ``providedBy``) runs on a ``dra`` pool;
* :func:`gpu_fabric.plan.dra_pools.deployment_plugin_key_findings` and
  :func:`gpu_fabric.plan.dra_pools.member_plugin_key_findings`: no ModelDeployment role or Mooncake member group
  requests ``nvidia.com/gpu`` / ``vpc.amazonaws.com/efa`` on a ``dra`` pool, nor does a Pod or workload
  (:func:`gpu_fabric.kube.dra_exclusive.workload_plugin_key_findings`).
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from pulumi_policy import EnforcementLevel, Severity, StackValidationArgs, StackValidationPolicy

from gpu_fabric.config.shapes import as_mapping, known_str, unknown_paths
from gpu_fabric.findings import Finding
from gpu_fabric.kube.dra_exclusive import DRA_POLICY, device_plugin_findings, workload_plugin_key_findings
from gpu_fabric.plan.dra_pools import DraPool, deployment_plugin_key_findings, dra_pool_findings, member_plugin_key_findings
from gpu_fabric.policies.device_plugins import declared_external_efa_plugins
from gpu_fabric.policies.engine_wire import stack_resources
from gpu_fabric.policies.reporting import report_finding
from gpu_fabric.plan.resource_view import GPU_FABRIC_TYPE, KUEUE_POOL_TYPE, Resource, pool_facts


def stack_cluster(resources: Sequence[Resource]) -> tuple[Optional[str], bool]:
    """``(cluster.kubernetesVersion, cluster.eksAutoMode)`` as a ``GpuFabric`` states them (``(None, False)`` without one)."""
    for resource in resources:
        if resource.type == GPU_FABRIC_TYPE:
            cluster = as_mapping(resource.props.get("cluster"))
            return known_str(cluster.get("kubernetesVersion")), cluster.get("eksAutoMode") is True
    return None, False


def dra_findings(resources: Sequence[Resource]) -> list[tuple[str, Finding]]:
    """``(urn, finding)`` for every violation of the rules over ``dra`` pools."""
    pools = [pool for pool in pool_facts(resources) if pool.uses_dra]
    if not pools:
        return []
    found: list[tuple[str, Finding]] = []
    version, auto_mode = stack_cluster(resources)
    for resource in resources:
        if resource.type != KUEUE_POOL_TYPE:
            continue
        pool = DraPool.of_input(as_mapping(resource.props.get("pool")))
        if pool is not None:
            owner = known_str(resource.props.get("queueOwner"))
            found += [(resource.urn, finding.at("pool"))
                      for finding in dra_pool_findings(pool, version, auto_mode, owner)]
    candidates = [r for r in resources if r.is_kubernetes_object and r.kind == "DaemonSet" and not unknown_paths(dict(r.props))]
    for daemonset in candidates:
        found += [(daemonset.urn, finding) for finding in device_plugin_findings(pools, [dict(daemonset.props)])]
    fabric = next((r.urn for r in resources if r.type == GPU_FABRIC_TYPE), "")
    found += [(fabric, finding) for finding in device_plugin_findings(pools, declared_external_efa_plugins(resources))]
    by_name = {pool.name: pool for pool in pools}
    deployments = [r for r in resources if r.is_kubernetes_object and r.kind == "ModelDeployment"]
    for deployment in deployments:
        found += [(deployment.urn, finding) for finding in deployment_plugin_key_findings(dict(deployment.props), by_name)]
    found += _member_findings(resources, pools)
    workloads = [r for r in resources if r.is_kubernetes_object and r.kind != "DaemonSet" and not unknown_paths(dict(r.props))]
    for workload in workloads:
        found += [(workload.urn, finding) for finding in workload_plugin_key_findings([dict(workload.props)], pools)]
    return found


def _member_findings(resources: Sequence[Resource], pools: Sequence[Any]) -> list[tuple[str, Finding]]:
    from gpu_fabric.plan.resource_view import gpustack_objects
    from gpu_fabric.policies.transfer_report import stack_transfer_report

    objects = gpustack_objects(list(resources))
    backends = {r.object_name: r.urn for r in objects if r.kind == "KVCacheBackend"}
    report = stack_transfer_report(resources) if backends else None
    if report is None:
        return []
    return [(backends.get(grant.backend, ""), finding) for grant in report.member_grants
            for finding in member_plugin_key_findings(grant, pools)]


def _validate(args: StackValidationArgs, report_violation: Any) -> None:
    for urn, finding in dra_findings(stack_resources(args)):
        report_finding(report_violation, finding, f"{finding.path}: {finding.message}" if str(finding.path) else finding.message,
                       urn or None)


dra_pools = StackValidationPolicy(
    name=DRA_POLICY,
    display_name="DRA pools: supported, aligned and served by DRA drivers alone",
    description=(
        "A deviceAllocation: dra pool runs on Kubernetes 1.34 or later, is launched by a provisioner that schedules "
        "pods with ResourceClaims (Karpenter 1.15+, EKS Auto Mode on 1.36+, managed node groups), has an instance type "
        "whose PCIe layout is known and claim sizes that tile its roots, is metered by the stack's own queues "
        "(queueOwner: standalone), and no EFA or NVIDIA device plugin runs there nor does anything the stack runs "
        "request their keys (a plugin beside a DRA driver oversubscribes the devices silently)."
    ),
    validate=_validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    tags=["dra", "efa", "gpu"],
    remediation_steps=(
        "State cluster.kubernetesVersion (1.34 or later); pin Karpenter 1.15+ with settings.enableDRA (or use a managed "
        "node group); keep device plugins off the pool's nodes; run GPUStack ModelDeployments and Mooncake members on "
        "deviceAllocation: plugin pools and plain pods on dra pools with the pool's ResourceClaimTemplate (docs/dra.md)."
    ),
)
