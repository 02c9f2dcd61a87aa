"""Policies over privileges and node hardening that fabric stacks tend to loosen: adapters of the domains' rules.

* ``mooncake-members-unprivileged`` (mandatory) and ``model-deployment-unprivileged-roles`` (advisory):
  :mod:`gpu_fabric.gpustack.privilege_rules` over each KVCacheBackend and ModelDeployment;
* ``launch-template-imdsv2`` and ``launch-template-ebs-encrypted`` (mandatory):
  :mod:`gpu_fabric.aws.launch_template_rules` over each launch template;
* ``kubelet-host-access`` (mandatory): :func:`gpu_fabric.kube.host_access.host_access_findings` over each
  workload: the one workload expected to reach into the kubelet (host PID namespace, kubelet
  configuration directories, systemd's socket) is gpu-fabric's kubelet topology agent, and it stays
  within the access a kubelet restart needs.
"""

from __future__ import annotations

from typing import Any, Mapping

from pulumi_policy import EnforcementLevel, ResourceValidationArgs, ResourceValidationPolicy, Severity

from gpu_fabric.aws.launch_template_rules import ebs_findings, imds_findings
from gpu_fabric.findings import FieldPath, Finding, ObjectRef
from gpu_fabric.gpustack.admission_pipeline import GPUSTACK_GROUP
from gpu_fabric.gpustack.privilege_rules import member_privilege_findings, role_privilege_findings
from gpu_fabric.kube.topology_agent import COMPONENT_ANNOTATION
from gpu_fabric.config.shapes import as_list, rests_on_unknown
from gpu_fabric.kube.pod_templates import pod_spec_of
from gpu_fabric.policies.engine_wire import resource_of
from gpu_fabric.plan.resource_view import LAUNCH_TEMPLATE_TYPE
from gpu_fabric.policies.reporting import at_path, report_finding


def _is_gpustack(args: ResourceValidationArgs, kind: str) -> bool:
    return args.resource_type.startswith(f"kubernetes:{GPUSTACK_GROUP}/") and args.resource_type.split(":")[-1] in (kind, f"{kind}Patch")


def _object_line(finding: Finding) -> str:
    return f"{finding.subject}: {finding.path} {finding.message}"


def _validate_members(args: ResourceValidationArgs, report_violation: Any) -> None:
    if not _is_gpustack(args, "KVCacheBackend"):
        return
    resource = resource_of(args)
    for finding in member_privilege_findings(resource.props, ObjectRef("KVCacheBackend", resource.object_name)):
        report_finding(report_violation, finding, _object_line(finding))


def _validate_imds(args: ResourceValidationArgs, report_violation: Any) -> None:
    if args.resource_type != LAUNCH_TEMPLATE_TYPE:
        return
    for finding in imds_findings(resource_of(args).props):
        report_finding(report_violation, finding, at_path(finding))


def _validate_ebs(args: ResourceValidationArgs, report_violation: Any) -> None:
    if args.resource_type != LAUNCH_TEMPLATE_TYPE:
        return
    for finding in ebs_findings(resource_of(args).props):
        report_finding(report_violation, finding, at_path(finding))


def _validate_roles(args: ResourceValidationArgs, report_violation: Any) -> None:
    if not _is_gpustack(args, "ModelDeployment"):
        return
    resource = resource_of(args)
    subject = ObjectRef("ModelDeployment", resource.object_name, resource.namespace or "default")
    for finding in role_privilege_findings(resource.props, subject):
        report_finding(report_violation, finding, _object_line(finding))


def _validate_kubelet_access(args: ResourceValidationArgs, report_violation: Any) -> None:
    from gpu_fabric.kube.host_access import host_access_findings

    resource = resource_of(args)
    if not args.resource_type.startswith("kubernetes:"):
        return
    manifest = dict(resource.props)
    # Typed workloads (kubernetes:apps/v1:DaemonSet) carry kind in their type token.
    manifest.setdefault("kind", args.resource_type.rsplit(":", 1)[-1])
    pod_spec = pod_spec_of(manifest)
    if not pod_spec:
        return
    # Whether this is the topology agent (which may reach the kubelet) rests on its kind and its identity.
    identity_unknown = rests_on_unknown(manifest, ("metadata", "annotations", COMPONENT_ANNOTATION)) or \
        rests_on_unknown(manifest, ("kind",))
    undecided = _contexts_unknown(pod_spec)
    subject = ObjectRef(str(manifest["kind"]), resource.object_name, resource.namespace or "default")
    for finding in host_access_findings(manifest, pod_spec, subject):
        # A securityContext not known at preview: its excess waits for the value.
        waits = identity_unknown or finding.path in undecided
        report_finding(report_violation, finding.waiting(waits), str(finding))


def _contexts_unknown(pod_spec: Any) -> set[FieldPath]:
    """The paths of the ``securityContext`` of every container whose context (or a part of it) is unknown at preview."""
    return {FieldPath.of(key, index, "securityContext") for key in ("initContainers", "containers")
            for index, container in enumerate(as_list(pod_spec.get(key))) if isinstance(container, Mapping)
            and rests_on_unknown(container, ("securityContext",))}


mooncake_members_unprivileged = ResourceValidationPolicy(
    name="mooncake-members-unprivileged",
    display_name="Mooncake members are not privileged",
    description="KVCacheBackend member groups never set securityContext.privileged: fabric groups get IPC_LOCK and SYS_RESOURCE, which is all Mooncake needs.",
    validate=_validate_members,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    tags=["security", "mooncake", "kv-cache"],
    remediation_steps="Remove securityContext.privileged from the member group; add only the capabilities a non-fabric group needs.",
)

launch_template_imdsv2 = ResourceValidationPolicy(
    name="launch-template-imdsv2",
    display_name="Launch templates require IMDSv2",
    description="Every launch template requires IMDSv2 session tokens (metadataOptions.httpTokens: required).",
    validate=_validate_imds,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    tags=["security", "aws", "imds"],
    remediation_steps=(
        "Set metadataOptions {httpTokens: required, httpEndpoint: enabled, httpPutResponseHopLimit: 2} (the hop "
        "limit of 2 keeps IMDS reachable from pods); gpu_fabric.aws.node_group.launch_template_inputs does."
    ),
    url="https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/configuring-IMDS-new-instances.html",
)

launch_template_ebs_encrypted = ResourceValidationPolicy(
    name="launch-template-ebs-encrypted",
    display_name="Launch template EBS volumes are encrypted",
    description="Every EBS volume a launch template maps (blockDeviceMappings[].ebs) is encrypted.",
    validate=_validate_ebs,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.MEDIUM,
    tags=["security", "aws", "ebs", "encryption"],
    remediation_steps="Set ebs.encrypted: true (optionally ebs.kmsKeyId) on every block device mapping.",
)

model_deployment_unprivileged_roles = ResourceValidationPolicy(
    name="model-deployment-unprivileged-roles",
    display_name="ModelDeployment roles do not run privileged",
    description="ModelDeployment roles run unprivileged: the Device Manager grants accelerators and fabric devices without it.",
    validate=_validate_roles,
    enforcement_level=EnforcementLevel.ADVISORY,
    severity=Severity.MEDIUM,
    tags=["security", "gpustack"],
    remediation_steps="Drop privileged: true from the role; request devices through resources (accelerator, interface) instead.",
)

kubelet_host_access = ResourceValidationPolicy(
    name="kubelet-host-access",
    display_name="Only the kubelet topology agent reaches into the kubelet",
    description=(
        "No workload shares the host PID namespace or mounts the kubelet's configuration directories or systemd's "
        "sockets, except gpu-fabric's kubelet topology agent, which must stay unprivileged (no capabilities, no "
        "privilege escalation, no host network or IPC) with only those mounts."
    ),
    validate=_validate_kubelet_access,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    tags=["security", "kubelet", "host-access"],
    remediation_steps=(
        "Deliver kubelet settings with the pool's topologyAgent (KubeletTopologyAgent) or node user data instead of "
        "a workload of your own; do not widen the agent's pod spec."
    ),
)
