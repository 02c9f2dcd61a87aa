"""Policy i: privileges and node hardening that fabric stacks tend to loosen.

* ``mooncake-members-unprivileged`` (mandatory): KVCacheBackend member groups never ask for
  ``securityContext.privileged``; fabric groups already get ``IPC_LOCK``/``SYS_RESOURCE``.
* ``launch-template-imdsv2`` (mandatory): every launch template requires IMDSv2
  (``metadataOptions.httpTokens: required``).
* ``launch-template-ebs-encrypted`` (mandatory): every EBS volume a launch template maps is encrypted.
* ``model-deployment-unprivileged-roles`` (advisory): ModelDeployment roles do not run privileged;
  the Device Manager grants devices without it.
* ``kubelet-host-access`` (mandatory): the one workload expected to reach into the kubelet (host PID
  namespace, kubelet configuration directories, systemd's socket) is gpu-fabric's kubelet topology
  agent, and it stays within the access a kubelet restart needs (:mod:`gpu_fabric.kube.host_access`).
"""

from __future__ import annotations

from typing import Any

from pulumi_policy import EnforcementLevel, ResourceValidationArgs, ResourceValidationPolicy, Severity

from gpu_fabric.policies._props import (
    LAUNCH_TEMPLATE_TYPE,
    as_list,
    as_mapping,
    containers_of,
    is_unknown,
    known_str,
    pod_spec_of,
    resource_of,
    rests_on_unknown,
    truthy,
)
from gpu_fabric.gpustack.admission_pipeline import GPUSTACK_GROUP
from gpu_fabric.kube.topology_agent import COMPONENT_ANNOTATION


def _is_gpustack(args: ResourceValidationArgs, kind: str) -> bool:
    return args.resource_type.startswith(f"kubernetes:{GPUSTACK_GROUP}/") and args.resource_type.split(":")[-1] in (kind, f"{kind}Patch")


def _validate_members(args: ResourceValidationArgs, report_violation: Any) -> None:
    if not _is_gpustack(args, "KVCacheBackend"):
        return
    resource = resource_of(args)
    members = as_list(as_mapping(as_mapping(resource.spec.get("connection")).get("managed")).get("members"))
    for index, member in enumerate(members):
        context = as_mapping(as_mapping(member).get("securityContext"))
        if truthy(context.get("privileged")):
            report_violation(
                f"KVCacheBackend {resource.object_name}: spec.connection.managed.members[{index}].securityContext.privileged "
                "is true; Mooncake members must not be privileged", None)


def _validate_imds(args: ResourceValidationArgs, report_violation: Any) -> None:
    if args.resource_type != LAUNCH_TEMPLATE_TYPE:
        return
    options = as_mapping(resource_of(args).props.get("metadataOptions"))
    tokens = options.get("httpTokens")
    if is_unknown(tokens):
        return
    if known_str(tokens) != "required":
        report_violation(
            f"metadataOptions.httpTokens is {known_str(tokens) or 'unset'!s}; require IMDSv2 (httpTokens: required)", None)


def _validate_ebs(args: ResourceValidationArgs, report_violation: Any) -> None:
    if args.resource_type != LAUNCH_TEMPLATE_TYPE:
        return
    for mapping in as_list(resource_of(args).props.get("blockDeviceMappings")):
        mapping = as_mapping(mapping)
        ebs = mapping.get("ebs")
        if not isinstance(ebs, dict):
            continue
        encrypted = ebs.get("encrypted")
        if not is_unknown(encrypted) and not truthy(encrypted):
            report_violation(f"blockDeviceMappings {mapping.get('deviceName', '?')}: the EBS volume is not encrypted", None)


def _validate_roles(args: ResourceValidationArgs, report_violation: Any) -> None:
    if not _is_gpustack(args, "ModelDeployment"):
        return
    resource = resource_of(args)
    for index, role in enumerate(as_list(resource.spec.get("roles"))):
        role = as_mapping(role)
        if truthy(role.get("privileged")) or truthy(as_mapping(role.get("securityContext")).get("privileged")):
            report_violation(
                f"ModelDeployment {resource.namespace or 'default'}/{resource.object_name}: spec.roles[{index}] "
                f"({role.get('name', '?')}) runs privileged", None)


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
    if rests_on_unknown(manifest, ("metadata", "annotations", COMPONENT_ANNOTATION)):
        return  # whether this is the topology agent (which may reach the kubelet) waits for its identity
    label = f"{manifest['kind']} {resource.namespace or 'default'}/{resource.object_name}"
    undecided = _containers_with_unknown_context(pod_spec)
    for _, message in host_access_findings([(label, manifest, pod_spec)]):
        if any(f"container {name}:" in message for name in undecided):
            continue  # a securityContext not known at preview: its excess waits for the value
        report_violation(f"{label}: {message}", None)


def _containers_with_unknown_context(pod_spec: Any) -> list[str]:
    """Names of the containers whose ``securityContext`` (or any part of it) is unknown at preview."""
    return [str(container.get("name", "?")) for container in containers_of(pod_spec)
            if rests_on_unknown(container, ("securityContext",))]


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
