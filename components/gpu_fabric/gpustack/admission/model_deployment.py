"""The GPUStack operator's ModelDeployment admission rules that are answered from the object alone.

Mirrors ``validateModelDeployment`` and ``validateModelDeploymentRoles`` of the operator's validating
webhook (``pkg/worker/webhooks/worker/model_deployment.go`` at the commit
:data:`gpu_fabric.gpustack.operator_pin.OPERATOR_COMMIT`), with the operator's messages; the elastic-EP
shape (``model_deployment_elastic.go``) is :mod:`gpu_fabric.gpustack.admission.model_deployment_elastic`.
Each rule names the Go function it mirrors. :func:`gpu_fabric.gpustack.admission_pipeline.analyze` runs these
first and, as ``ValidateCreate`` does, judges interface requests and cache transports only for a
deployment these rules accept.

Rules that need cluster state the offline analysis does not have (InstanceType capacities and modes,
the privileged/hostPath Settings, owned engine flags and environment tables, listen-port parsing) are
not mirrored here; the operator still enforces them at apply.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from gpu_fabric.config.shapes import mapping_at
from gpu_fabric.config.syntax import is_dns1035_label, is_dns1123_label, is_qualified_name
from gpu_fabric.gpustack.admission.common import (
    ENGINE_SGLANG,
    ENGINE_VLLM,
    KIND_DECODE,
    KIND_PREFILL,
    KIND_SERVER,
    ROUTER_LLMD,
    ROUTER_SGLANG,
    ROUTER_VLLM,
    arg_name,
    duplicate_value,
    effective_role_kind,
    engine_name,
    int_or,
    quantity_or_none,
    roles_of,
)
from gpu_fabric.gpustack.admission.model_deployment_elastic import elastic_findings
from gpu_fabric.findings import Finding, ObjectRef, Severity
from gpu_fabric.gpustack.rules import MODEL_DEPLOYMENT_ADMISSION

# modelDeploymentMaxRoles
MAX_ROLES = 10

# modelDeploymentRouterOwnedArgs: the flags a router's rendering derives, keyed by router.
ROUTER_OWNED_ARGS: dict[str, tuple[str, ...]] = {
    ROUTER_LLMD: ("--endpoint-selector", "--endpoint-target-ports", "--config-file", "--secure-serving",
                  "--grpc-health-port", "--metrics-endpoint-auth"),
    ROUTER_VLLM: ("--host", "--port", "--prometheus-host", "--prometheus-port", "--kv-connector",
                  "--service-discovery", "--service-discovery-namespace", "--service-discovery-port",
                  "--selector", "--prefill-selector", "--decode-selector", "--vllm-pd-disaggregation"),
    ROUTER_SGLANG: ("--host", "--port", "--prometheus-host", "--prometheus-port", "--service-discovery",
                    "--service-discovery-namespace", "--service-discovery-port", "--selector",
                    "--prefill-selector", "--decode-selector", "--pd-disaggregation"),
}

# modelDeploymentRouterEngines: which engine each router may front.
ROUTER_ENGINES: dict[str, tuple[str, ...]] = {
    ROUTER_LLMD: (ENGINE_VLLM, ENGINE_SGLANG),
    ROUTER_VLLM: (ENGINE_VLLM,),
    ROUTER_SGLANG: (ENGINE_SGLANG,),
}

# modelDeploymentIdentityMessage
IDENTITY_MESSAGE = ("this is part of what makes this deployment the deployment it is: a different value describes a "
                    "different deployment, which is created rather than edited")


def _refuse(path: str, message: str) -> Finding:
    """A refusal of the webhook at ``path`` of the object (named by the caller)."""
    return Finding.of(MODEL_DEPLOYMENT_ADMISSION, path, message)



def deployment_findings(deployment: Mapping[str, Any], namespace: str,
                        engine_rule: Callable[[Mapping[str, Any]], list[Finding]] | None = None) -> list[Finding]:
    """Every object-only admission finding of one ModelDeployment (``validateModelDeployment`` and friends).

    ``engine_rule`` is the operator line's engine rule (its profile's): findings (errors or warnings) at
    paths of the spec. Without one, the pin's ``validateModelDeploymentEngineVersion`` runs.
    """
    meta = mapping_at(deployment, "metadata")
    name = str(meta.get("name") or "")
    spec = mapping_at(deployment, "spec")
    found: list[Finding] = _roles_rules(spec)
    # The engine rule runs second in validateModelDeployment (after the roles' own rules).
    found += engine_rule(spec) if engine_rule is not None else engine_version_rule(spec)
    rest: list[Finding] = []
    rest += _kv_cache(spec)
    rest += _roles_count(spec)
    rest += _role_service_names(name, spec)
    rest += _service_names_distinct(name, spec)
    rest += _role_member_names(name, spec)
    rest += _role_kinds(spec)
    rest += _role_topology(spec)
    rest += _router(spec)
    rest += elastic_findings(spec)
    found += rest
    subject = ObjectRef("ModelDeployment", name, namespace)
    return [finding.about(subject) for finding in found]


def _roles_rules(spec: Mapping[str, Any]) -> list[Finding]:
    """validateModelDeploymentRoles: the per-role rules mirrored offline (resources, additional volumes)."""
    found: list[Finding] = []
    for i, role in enumerate(roles_of(spec)):
        found += _role_resources(role, f"spec.roles[{i}]")
        found += _role_additional_volumes(role, f"spec.roles[{i}]")
    return found


def _role_resources(role: Mapping[str, Any], role_path: str) -> list[Finding]:
    """validateModelDeploymentRoleResources."""
    resources = mapping_at(role, "resources")
    found: list[Finding] = []
    interface = resources.get("interface")
    if interface is not None:
        count = quantity_or_none(interface)
        if count is None or count != count.to_integral_value() or count < 0:
            found.append(_refuse(f"{role_path}.resources.interface", "interface count must be a non-negative whole number"))
    profile = resources.get("acceleratorPartitionedProfile")
    if profile and (resources.get("acceleratorSlicedMemoryPercentage") or resources.get("acceleratorSlicedCoresPercentage")):
        path = f"{role_path}.resources"
        found.append(_refuse(f"{path}.acceleratorPartitionedProfile",
                      f"a partition profile cannot be combined with {path}.acceleratorSlicedMemoryPercentage or "
                      f"{path}.acceleratorSlicedCoresPercentage: hardware partitioning and software slicing cannot "
                      "both apply to one accelerator"))
    return found


def _role_additional_volumes(role: Mapping[str, Any], role_path: str) -> list[Finding]:
    """validateModelDeploymentRoleAdditionalVolumes: one source each, distinct mount paths, no ``..``."""
    volumes = role.get("additionalVolumes")
    found: list[Finding] = []
    seen: dict[str, int] = {}
    for i, volume in enumerate(volumes if isinstance(volumes, list) else []):
        volume = volume if isinstance(volume, Mapping) else {}
        path = f"{role_path}.additionalVolumes[{i}]"
        mount_path = str(volume.get("mountPath") or "")
        if not any(volume.get(source) for source in ("configMap", "secret", "hostPath")):
            found.append(_refuse(path, f'one of configMap, secret or hostPath, so that "{mount_path}" names something to '
                                "mount; an entry naming none is skipped at render and the container starts without it"))
        if mount_path in seen:
            found.append(_refuse(f"{path}.mountPath", duplicate_value(
                f'"{mount_path}" is already mounted by {role_path}.additionalVolumes[{seen[mount_path]}].mountPath; two '
                "volumes cannot occupy one path, and which of them the container would see is not something this API "
                "decides")))
        else:
            seen[mount_path] = i
        sub_path = volume.get("subPath")
        if sub_path and ".." in str(sub_path).split("/"):
            found.append(_refuse(f"{path}.subPath", 'must not contain a ".." element: the path is resolved inside the volume, '
                                             "and an element that climbs out of it reaches the host filesystem of "
                                             "whatever backs the volume"))
    return found


def engine_version_rule(spec: Mapping[str, Any]) -> list[Finding]:
    """validateModelDeploymentEngineVersion: a role without an image needs ``engine.version``."""
    engine = mapping_at(spec, "engine")
    if engine.get("version"):
        return []
    for role in roles_of(spec):
        if not role.get("image"):
            return [_refuse("spec.engine.version",
                     f'role "{role.get("name", "")}" names no image of its own, so its image is synthesized from the '
                     "engine and its version, and an empty version assembles a tag naming something never typed. "
                     "Give the engine a version, or name an image on the role")]
    return []


def _kv_cache(spec: Mapping[str, Any]) -> list[Finding]:
    """validateModelDeploymentKVCache: the Binding name must not be empty."""
    kv_cache = spec.get("kvCache")
    if not isinstance(kv_cache, Mapping):
        return []
    pool_ref = mapping_at(kv_cache, "poolRef")
    if pool_ref.get("name"):
        return []
    return [_refuse("spec.kvCache.poolRef.name", "the Binding name must not be empty: the Binding is the authorization "
                                          "point for reaching the pool, and an empty reference names none")]


def _roles_count(spec: Mapping[str, Any]) -> list[Finding]:
    """validateModelDeploymentRolesCount."""
    if len(roles_of(spec)) <= MAX_ROLES:
        return []
    return [_refuse("spec.roles", f"at most {MAX_ROLES} roles: every role renders its own replicas, Services and queue "
                           "references, and a deployment naming more than that is a shape this operator does not "
                           "serve — a prefill/decode deployment names two")]


def _role_service_names(name: str, spec: Mapping[str, Any]) -> list[Finding]:
    """validateModelDeploymentRoleServiceNames (on create every role is new)."""
    found = []
    for i, role in enumerate(roles_of(spec)):
        service = f"{name}-{role.get('name', '')}"
        why = is_dns1035_label(service)
        if why:
            found.append(_refuse(f"spec.roles[{i}].name",
                          f'this role is fronted by a Service named "{service}" ({len(service)} characters), which is '
                          f"not a valid Service name: {'; '.join(why)}. Shorten or rename this role, or the deployment"))
    return found


def _service_names_distinct(name: str, spec: Mapping[str, Any]) -> list[Finding]:
    """validateModelDeploymentServiceNamesAreDistinct."""
    claimed_by = {name: "the deployment's own Service"}
    if spec.get("router"):
        claimed_by[f"{name}-router"] = "the Service fronting the managed router"
    found = []
    for i, role in enumerate(roles_of(spec)):
        role_name = str(role.get("name", ""))
        derived = [(f"{name}-{role_name}", f'the Service fronting role "{role_name}"')]
        if int_or(role.get("size"), 1) > 1:
            derived += [(f"{name}-{role_name}-r{ordinal}",
                         f'the headless Service publishing instance {ordinal} of role "{role_name}"')
                        for ordinal in range(int_or(role.get("replicas"), 1))]
        for service, describes in derived:
            if service in claimed_by:
                found.append(_refuse(f"spec.roles[{i}].name",
                              f'{describes} would be named "{service}", and so would {claimed_by[service]}. One name '
                              "is one object, and the two need different shapes, so whichever is written last leaves "
                              "the other without the addresses it publishes. Rename this role"))
                continue
            claimed_by[service] = describes
    return found


def _role_member_names(name: str, spec: Mapping[str, Any]) -> list[Finding]:
    """validateModelDeploymentRoleMemberNames."""
    found = []
    for i, role in enumerate(roles_of(spec)):
        size = int_or(role.get("size"), 1)
        if size <= 1:
            continue
        member = f"{name}-{role.get('name', '')}-r{max(int_or(role.get('replicas'), 1) - 1, 0)}-m{size - 1}"
        why = is_dns1123_label(member)
        if why:
            found.append(_refuse(f"spec.roles[{i}]",
                          "a replica of this role is addressed by naming each of its Pods, and the longest such name "
                          f'would be "{member}" ({len(member)} characters), which cannot be a hostname: '
                          f"{'; '.join(why)}. Shorten the role or the deployment, or declare fewer replicas"))
    return found


def _role_kinds(spec: Mapping[str, Any]) -> list[Finding]:
    """validateModelDeploymentRoleKinds: Server alone, non-Server kinds once each."""
    roles = roles_of(spec)
    kinds = [effective_role_kind(role) for role in roles]
    has_server = KIND_SERVER in kinds
    has_other = any(kind != KIND_SERVER for kind in kinds)
    found = []
    first_of_kind: dict[str, int] = {}
    for i, kind in enumerate(kinds):
        path = f"spec.roles[{i}].kind"
        if has_server and has_other:
            found.append(_refuse(path, f'"{KIND_SERVER}" cannot be combined with another kind in one deployment: a '
                                f'"{KIND_SERVER}" role serves whole requests by itself, so a deployment holding one '
                                f'beside a "{KIND_PREFILL}" or "{KIND_DECODE}" role describes no arrangement the '
                                "engines' KV transfer configuration can express"))
            continue
        if kind != KIND_SERVER:
            if kind in first_of_kind:
                found.append(_refuse(path, f'kind "{kind}" is already declared by role "{roles[first_of_kind[kind]].get("name", "")}": '
                                    f'only "{KIND_SERVER}" may be declared by more than one role, because a set of '
                                    "servers is a set of equals, whereas nothing consuming these roles expresses a "
                                    f'second "{kind}" and the extra role would render into a configuration nothing '
                                    "downstream can reach"))
                continue
            first_of_kind[kind] = i
    return found


def _role_topology(spec: Mapping[str, Any]) -> list[Finding]:
    """validateModelDeploymentRoleTopology."""
    found = []
    for i, role in enumerate(roles_of(spec)):
        topology = mapping_at(role, "topology")
        level = topology.get("requiredLevel")
        if not level:
            continue
        path = f"spec.roles[{i}].topology.requiredLevel"
        problems = is_qualified_name(str(level))
        if problems:
            found.append(_refuse(path, "is not a topology label key: " + "; ".join(problems)))
        if level == "kubernetes.io/hostname":
            found.append(_refuse(path, "kubernetes.io/hostname is implicit and cannot be required; omitting requiredLevel "
                                "leaves placement unconstrained, it does not keep the Pods on one Node"))
    return found


def _router(spec: Mapping[str, Any]) -> list[Finding]:
    """validateModelDeploymentRouter: owned flags, the threshold's router, and the engine the router fronts."""
    router = spec.get("router")
    if not isinstance(router, Mapping):
        return []
    router_name = str(router.get("name") or "")
    engine = engine_name(spec)
    found = []
    extra_args = router.get("extraArgs")
    for i, arg in enumerate(extra_args if isinstance(extra_args, list) else []):
        flag = arg_name(str(arg))
        if flag in ROUTER_OWNED_ARGS.get(router_name, ()):
            found.append(_refuse(f"spec.router.extraArgs[{i}]",
                          f'"{flag}" is set by the operator for router "{router_name}" and must not be supplied here, '
                          "because two values for it cannot be told apart"))
    if router.get("disaggregationThresholdTokens") is not None and router_name != ROUTER_LLMD:
        found.append(_refuse("spec.router.disaggregationThresholdTokens",
                      f'router "{router_name}" has no prompt-token threshold to set; it is meaningful under '
                      f'"{ROUTER_LLMD}" alone, whose scheduler decides per request whether to split one'))
    engines = ROUTER_ENGINES.get(router_name)
    if engines is not None and engine not in engines:
        found.append(_refuse("spec.router.name", f'router "{router_name}" does not front engine "{engine}"; it accepts '
                                          f"{', '.join(engines)}"))
    return found
