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

from typing import Any, Mapping

from gpu_fabric.config.shapes import is_unknown
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


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _truthy(value: Any) -> bool:
    if is_unknown(value):
        return False
    if isinstance(value, str):
        return value.strip().lower() == "true"
    return value is True


def member_privilege_findings(backend: Mapping[str, Any], subject: ObjectRef) -> list[Finding]:
    """Member groups of a KVCacheBackend manifest that ask for a privileged container."""
    members = _list(_mapping(_mapping(_mapping(backend.get("spec")).get("connection")).get("managed")).get("members"))
    return [Finding.of(MOONCAKE_MEMBERS_UNPRIVILEGED, f"spec.connection.managed.members[{index}].securityContext.privileged",
                       "is true; Mooncake members must not be privileged", subject=subject)
            for index, member in enumerate(members)
            if _truthy(_mapping(_mapping(member).get("securityContext")).get("privileged"))]


def role_privilege_findings(deployment: Mapping[str, Any], subject: ObjectRef) -> list[Finding]:
    """Roles of a ModelDeployment manifest that run privileged (a warning: the advisory policy reports it)."""
    found = []
    for index, role in enumerate(_list(_mapping(deployment.get("spec")).get("roles"))):
        role = _mapping(role)
        if _truthy(role.get("privileged")) or _truthy(_mapping(role.get("securityContext")).get("privileged")):
            found.append(Finding.of(MODEL_DEPLOYMENT_UNPRIVILEGED_ROLES, f"spec.roles[{index}]",
                                    f"({role.get('name', '?')}) runs privileged", severity=Severity.WARNING,
                                    subject=subject))
    return found
