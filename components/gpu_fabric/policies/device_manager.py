"""Policy: GPUStack's Device Manager runs with the least privilege that works.

``device-manager-least-privilege`` (mandatory) looks at every Device Manager DaemonSet of the stack
(the GPUStack operator image run as ``device-manager``) and refuses:

* a pod that runs as the namespace's ``default`` ServiceAccount, or as one the stack does not create
  (its pods would not start);
* a role bound to that ServiceAccount which the stack does not define (``cluster-admin``, as the
  operator chart binds) or which grants more than the Device Manager's code uses, and bound roles
  that grant less (the Device Manager would fail at run time);
* host access beyond the builder's: the host PID/IPC/network namespaces, other host paths, and
  writable mounts of what it only reads.

The expected access is :mod:`gpu_fabric.gpustack.device_manager_access`, the tables the component creates
the objects from. Values unknown at preview are skipped, never guessed.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from pulumi_policy import EnforcementLevel, Severity, StackValidationArgs, StackValidationPolicy

from gpu_fabric.findings import Finding
from gpu_fabric.gpustack.device_manager_access import DEVICE_MANAGER_LEAST_PRIVILEGE
from gpu_fabric.config.shapes import as_list, as_mapping, is_unknown, known_str
from gpu_fabric.kube.pod_templates import pod_spec_of
from gpu_fabric.policies.engine_wire import stack_resources
from gpu_fabric.plan.resource_view import Resource
from gpu_fabric.policies.reporting import report_finding

_ROLE_KINDS = ("ClusterRole", "Role")
_BINDING_KINDS = ("ClusterRoleBinding", "RoleBinding")


def _kind(resource: Resource) -> str:
    # Typed resources (kubernetes:rbac.authorization.k8s.io/v1:Role) carry kind in their type token.
    return resource.kind or resource.type.rsplit(":", 1)[-1]


def _is_device_manager(resource: Resource) -> bool:
    from gpu_fabric.kube.coverage import DEVICE_MANAGER_ARG_MARKER, DEVICE_MANAGER_IMAGE_MARKER

    if not resource.type.startswith("kubernetes:") or _kind(resource) != "DaemonSet":
        return False
    for container in as_list(as_mapping(pod_spec_of(dict(resource.props))).get("containers")):
        container = as_mapping(container)
        words = [w for w in [*as_list(container.get("command")), *as_list(container.get("args"))] if isinstance(w, str)]
        if DEVICE_MANAGER_IMAGE_MARKER in (known_str(container.get("image")) or "") and DEVICE_MANAGER_ARG_MARKER in words:
            return True
    return False


def _same(value: Optional[str], wanted: Optional[str]) -> bool:
    # An unknown value (preview) matches anything rather than reporting a guess.
    return value is None or wanted is None or value == wanted


def _binds(binding: Resource, namespace: Optional[str], account: str) -> bool:
    for subject in as_list(binding.props.get("subjects")):
        subject = as_mapping(subject)
        if known_str(subject.get("kind")) == "ServiceAccount" and known_str(subject.get("name")) == account \
                and _same(known_str(subject.get("namespace")), namespace):
            return True
    return False


def _role(resources: Sequence[Resource], binding: Resource) -> tuple[Optional[str], Optional[Resource], str]:
    """(role kind, the role resource in the stack or None, role name) a binding references."""
    ref = as_mapping(binding.props.get("roleRef"))
    kind, name = known_str(ref.get("kind")), known_str(ref.get("name")) or "?"
    if is_unknown(ref.get("name")):
        return kind, None, "?"
    for resource in resources:
        if _kind(resource) == kind and resource.object_name == name and resource.type.startswith("kubernetes:"):
            if kind == "ClusterRole" or _same(resource.namespace, binding.namespace):
                return kind, resource, name
    return kind, None, name


def device_manager_findings(resources: Sequence[Resource]) -> list[tuple[str, str]]:
    """``(urn, message)`` for every Device Manager DaemonSet, role or binding beyond least privilege."""
    from gpu_fabric.kube.device_plugins import device_manager_host_paths
    from gpu_fabric.gpustack.device_manager_access import pod_excess, rules_excess, rules_missing

    problems: list[tuple[str, str]] = []
    for daemonset in (r for r in resources if _is_device_manager(r)):
        label = f"DaemonSet {daemonset.namespace or '?'}/{daemonset.object_name}"
        pod_spec = as_mapping(pod_spec_of(dict(daemonset.props)))
        problems.extend((daemonset.urn, f"{label}: host access beyond the Device Manager's: {item}")
                        for item in pod_excess(pod_spec, device_manager_host_paths()))
        if is_unknown(pod_spec.get("serviceAccountName")):
            continue
        account = known_str(pod_spec.get("serviceAccountName")) or "default"
        if account == "default":
            problems.append((daemonset.urn, f"{label}: runs as the namespace's default ServiceAccount; give it its own"))
            continue
        if not any(_kind(r) == "ServiceAccount" and r.object_name == account and _same(r.namespace, daemonset.namespace)
                   for r in resources if r.type.startswith("kubernetes:")):
            problems.append((daemonset.urn, f"{label}: ServiceAccount {account} is not created by the stack; its pods cannot start"))
            continue
        granted: dict[str, list[Any]] = {"ClusterRole": [], "Role": []}
        for binding in (r for r in resources if r.type.startswith("kubernetes:") and _kind(r) in _BINDING_KINDS):
            if not _binds(binding, daemonset.namespace, account):
                continue
            kind, role, name = _role(resources, binding)
            if role is None:
                if name != "?":
                    problems.append((binding.urn, (
                        f"{_kind(binding)} {binding.object_name} binds the Device Manager's ServiceAccount {account} to "
                        f"{kind} {name}, which the stack does not define; bind only the roles gpu-fabric creates")))
                continue
            rules = as_list(role.props.get("rules"))
            granted[_kind(role)].extend(rules)
            problems.extend((role.urn, f"{_kind(role)} {role.object_name} (bound to the Device Manager) {item}")
                            for item in rules_excess(_kind(role), rules))
        for item in rules_missing(granted["ClusterRole"], granted["Role"]):
            problems.append((daemonset.urn, f"{label}: ServiceAccount {account} lacks {item}; the Device Manager would fail"))
    return problems


def _validate(args: StackValidationArgs, report_violation: Any) -> None:
    for urn, message in device_manager_findings(stack_resources(args)):
        finding = Finding.of(DEVICE_MANAGER_LEAST_PRIVILEGE, "", message)
        report_finding(report_violation, finding, finding.message, urn)


device_manager_least_privilege = StackValidationPolicy(
    name="device-manager-least-privilege",
    display_name="The GPUStack Device Manager runs with the least privilege that works",
    description=(
        "A Device Manager DaemonSet runs as its own ServiceAccount created by the stack, bound only to roles that "
        "grant exactly the API access its code uses (nodes get; pods list/watch/patch; worker.gpustack.ai devices "
        "and devices/status; nfd.k8s-sigs.io nodefeatures in its namespace), with no host namespaces, no host paths "
        "beyond its own and read-only mounts of what it only reads."
    ),
    validate=_validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    tags=["security", "rbac", "device-plugin", "gpustack"],
    remediation_steps=(
        "Deploy the Device Manager with gpu_fabric.resources.device_plugins.GpuStackDeviceManager (or "
        "devicePlugins.deviceManager.deployedBy: stack), which creates the ServiceAccount, ClusterRole, Role and "
        "bindings of gpu_fabric.gpustack.device_manager_access; do not bind it to cluster-admin or widen its pod spec."
    ),
)
