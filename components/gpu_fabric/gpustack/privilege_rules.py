"""GPUStack workloads that do not need privilege do not ask for it.

* ``mooncake-members-unprivileged`` (mandatory): a KVCacheBackend member group never sets
  ``securityContext.privileged``: the operator gives fabric groups ``IPC_LOCK`` and ``SYS_RESOURCE``,
  which is all Mooncake's transfer engine needs (gpustack/gpustack-operator:
  ``pkg/worker/kvcache/mooncake/member_workload.go``).
* ``model-deployment-unprivileged-roles`` (advisory): a ModelDeployment role runs unprivileged; the
  Device Manager grants accelerators and fabric devices without it.

Both read the manifest as the operator stores it; a value unknown at preview is not judged.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Optional

from gpu_fabric.config.shapes import as_list, as_mapping, truthy
from gpu_fabric.findings import Enforcement, Finding, ObjectRef, Rule, Severity

MOONCAKE_MEMBERS_UNPRIVILEGED = Rule(
    "mooncake-members-unprivileged", "KVCacheBackend member groups never set securityContext.privileged",
    "gpustack/gpustack-operator: pkg/worker/kvcache/mooncake/member_workload.go",
    policy="mooncake-members-unprivileged")
MODEL_DEPLOYMENT_UNPRIVILEGED_ROLES = Rule(
    "model-deployment-unprivileged-roles", "ModelDeployment roles do not run privileged",
    "gpustack/gpustack-operator: pkg/deviceplugin/rdma_allocate.go", policy="model-deployment-unprivileged-roles",
    enforcement=Enforcement.ADVISORY)

RULES = (MOONCAKE_MEMBERS_UNPRIVILEGED, MODEL_DEPLOYMENT_UNPRIVILEGED_ROLES)


def member_privilege_findings(backend: Mapping[str, Any], subject: Optional[ObjectRef]) -> list[Finding]:
    """Member groups of a KVCacheBackend manifest that ask for a privileged container."""
    members = as_list(as_mapping(as_mapping(as_mapping(backend.get("spec")).get("connection")).get("managed")).get("members"))
    return [Finding.of(MOONCAKE_MEMBERS_UNPRIVILEGED, f"spec.connection.managed.members[{index}].securityContext.privileged",
                       "is true; Mooncake members must not be privileged: fabric groups already get IPC_LOCK and "
                       "SYS_RESOURCE", subject=subject)
            for index, member in enumerate(members)
            if truthy(as_mapping(as_mapping(member).get("securityContext")).get("privileged"))]


def role_privilege_findings(deployment: Mapping[str, Any], subject: ObjectRef) -> list[Finding]:
    """Roles of a ModelDeployment manifest that run privileged (a warning: the advisory policy reports it)."""
    found = []
    for index, role in enumerate(as_list(as_mapping(deployment.get("spec")).get("roles"))):
        role = as_mapping(role)
        if truthy(role.get("privileged")) or truthy(as_mapping(role.get("securityContext")).get("privileged")):
            found.append(Finding.of(MODEL_DEPLOYMENT_UNPRIVILEGED_ROLES, f"spec.roles[{index}]",
                                    f"({role.get('name', '?')}) runs privileged", severity=Severity.WARNING,
                                    subject=subject))
    return found


def privilege_findings(objects: Iterable[Mapping[str, Any]], default_namespace: str = "default") -> list[Finding]:
    """Both rules over every ``worker.gpustack.ai`` KVCacheBackend and ModelDeployment among ``objects`` (``lint``'s
    reading of a team's files, as the pack reads the same objects at preview)."""
    from gpu_fabric.gpustack.admission_pipeline import is_gpustack_object

    found: list[Finding] = []
    for obj in objects:
        metadata = as_mapping(obj.get("metadata"))
        name = str(metadata.get("name") or "")
        if is_gpustack_object(obj, "KVCacheBackend"):
            found.extend(member_privilege_findings(obj, ObjectRef("KVCacheBackend", name)))
        elif is_gpustack_object(obj, "ModelDeployment"):
            namespace = str(metadata.get("namespace") or default_namespace)
            found.extend(role_privilege_findings(obj, ObjectRef("ModelDeployment", name, namespace)))
    return found
