"""The GPUStack operator's ModelDeployment admission rules that are answered from the object alone.

Mirrors ``validateModelDeployment`` and ``validateModelDeploymentRoles`` of the operator's validating
webhook (``pkg/worker/webhooks/worker/model_deployment.go`` at the commit
:data:`gpu_fabric.gpustack.operator_pin.OPERATOR_COMMIT`) and ``validateModelDeploymentElasticShape``
(``model_deployment_elastic.go``), with the operator's messages. Each rule names the Go function it
mirrors. :func:`gpu_fabric.gpustack.transfer.analyze` runs these first and, as ``ValidateCreate`` does, judges
interface requests and cache transports only for a deployment these rules accept.

Rules that need cluster state the offline analysis does not have (InstanceType capacities and modes,
the privileged/hostPath Settings, owned engine flags and environment tables, listen-port parsing) are
not mirrored here; the operator still enforces them at apply.
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable, Iterable, Mapping, Sequence

from gpu_fabric.gpustack.findings import Finding
from gpu_fabric.config.quantity import QuantityError, parse_quantity
from gpu_fabric.config.shapes import list_at, mapping_at

ENGINE_VLLM = "vLLM"
ENGINE_SGLANG = "SGLang"
ROUTER_LLMD = "llm-d-router"
ROUTER_VLLM = "vllm-router"
ROUTER_SGLANG = "sglang-gateway"
KIND_SERVER, KIND_PREFILL, KIND_DECODE = "Server", "Prefill", "Decode"

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

# modelDeploymentElasticOwnedFlags / modelDeploymentElasticOwnedEnv (model_deployment_elastic.go).
ELASTIC_OWNED_FLAGS = frozenset({
    "--data-parallel-size", "--data-parallel-backend", "--data-parallel-address", "--enable-expert-parallel",
    "--data-parallel-size-local", "--enable-elastic-ep", "--enable-eplb", "--distributed-executor-backend",
    "--ray-address",
})
ELASTIC_OWNED_ENV = frozenset({
    "VLLM_DP_SIZE", "VLLM_DATA_PARALLEL_SIZE_LOCAL", "VLLM_ENABLE_ELASTIC_EP", "VLLM_ENABLE_EPLB",
    "VLLM_TENSOR_PARALLEL_SIZE", "VLLM_PIPELINE_PARALLEL_SIZE", "VLLM_RAY_ADDRESS", "RAY_ADDRESS",
    "GPUSTACK_ELASTIC_POD_UID", "GPUSTACK_ELASTIC_POD_IP", "VLLM_RAY_DP_PACK_STRATEGY", "RAY_OVERRIDE_LABELS",
})
# WidthMin / WidthMax in pkg/worker/elasticprofile/profile.go (the CRD markers on elasticEp.width carry the same pair).
ELASTIC_WIDTH_MIN, ELASTIC_WIDTH_MAX = 2, 64
# validateModelDeploymentElasticOwnedKeys: single-dash abbreviations the engine resolves.
_ELASTIC_ABBREVIATIONS = {"dp": "data-parallel-size", "dpl": "data-parallel-size-local", "dpb": "data-parallel-backend",
                          "dpa": "data-parallel-address", "tp": "tensor-parallel-size", "pp": "pipeline-parallel-size"}

# modelDeploymentIdentityMessage
IDENTITY_MESSAGE = ("this is part of what makes this deployment the deployment it is: a different value describes a "
                    "different deployment, which is created rather than edited")

# k8s.io/apimachinery/pkg/util/validation: the label checks the webhook calls, with their messages.
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def _regex_error(message: str, pattern: str, *examples: str) -> str:
    shown = "".join(f"{' or ' if i else ''}'{example}', " for i, example in enumerate(examples))
    return f"{message} (e.g. {shown}regex used for validation is '{pattern}')"


def is_dns1123_label(value: str) -> list[str]:
    """``validation.IsDNS1123Label``: problems, empty when ``value`` is a valid label."""
    problems = []
    if len(value) > 63:
        problems.append("must be no more than 63 characters")
    if not _DNS1123_LABEL.match(value):
        problems.append(_regex_error("a lowercase RFC 1123 label must consist of lower case alphanumeric characters "
                                     "or '-', and must start and end with an alphanumeric character",
                                     "[a-z0-9]([-a-z0-9]*[a-z0-9])?", "my-name", "123-abc"))
    return problems


def is_dns1035_label(value: str) -> list[str]:
    """``validation.IsDNS1035Label``: problems, empty when ``value`` is a valid Service name."""
    problems = []
    if len(value) > 63:
        problems.append("must be no more than 63 characters")
    if not _DNS1035_LABEL.match(value):
        problems.append(_regex_error("a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
                                     "start with an alphabetic character, and end with an alphanumeric character",
                                     "[a-z]([-a-z0-9]*[a-z0-9])?", "my-name", "abc-123"))
    return problems


def is_qualified_name(value: str) -> list[str]:
    """``validation.IsQualifiedName``: a label key, ``[prefix/]name``."""
    parts = value.split("/")
    if len(parts) > 2:
        return [_regex_error("a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must "
                             "start and end with an alphanumeric character", "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]",
                             "MyName", "my.name", "123-abc")
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    problems = []
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            problems.append("prefix part must be non-empty")
        elif len(prefix) > 253 or not _DNS1123_SUBDOMAIN.match(prefix):
            problems.append("prefix part " + _regex_error(
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
                "must start and end with an alphanumeric character",
                r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*", "example.com"))
    if not name:
        problems.append("name part must be non-empty")
    else:
        if len(name) > 63:
            problems.append("name part must be no more than 63 characters")
        if not _QUALIFIED_NAME.match(name):
            problems.append("name part " + _regex_error(
                "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
                "alphanumeric character", "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]", "MyName", "my.name", "123-abc"))
    return problems


def duplicate_value(value: str) -> str:
    """``field.Duplicate``'s text: the API server quotes the value it is handed (Go ``%q``)."""
    return f"Duplicate value: {json.dumps(value, ensure_ascii=False)}"


def effective_role_kind(role: Mapping[str, Any]) -> str:
    """``ModelDeploymentEffectiveRoleKind``: the kind, ``Server`` when unset."""
    return str(role.get("kind") or KIND_SERVER)


def declares_both_halves(spec: Mapping[str, Any]) -> bool:
    """``ModelDeploymentDeclaresBothHalves``: a Prefill and a Decode role are both declared."""
    kinds = {effective_role_kind(role) for role in _roles(spec)}
    return KIND_PREFILL in kinds and KIND_DECODE in kinds


def arg_name(arg: str) -> str:
    """``ModelDeploymentArgName``: the flag of ``--flag=value`` (the token itself otherwise)."""
    return arg.split("=", 1)[0]


def _roles(spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    roles = spec.get("roles")
    return [role if isinstance(role, Mapping) else {} for role in roles] if isinstance(roles, list) else []


def _int(value: Any, default: int) -> int:
    if isinstance(value, bool) or value is None:
        return default
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value if isinstance(value, int) else default


def _quantity(value: Any) -> Any:
    try:
        return parse_quantity(value)
    except QuantityError:
        return None


def deployment_findings(deployment: Mapping[str, Any], namespace: str,
                        engine_rule: Callable[[Mapping[str, Any]], list[tuple[str, str, str]]] | None = None) -> list[Finding]:
    """Every object-only admission finding of one ModelDeployment (``validateModelDeployment`` and friends).

    ``engine_rule`` is the operator line's engine rule (its profile's): ``(path, message, severity)``
    findings over the spec. Without one, the pin's ``validateModelDeploymentEngineVersion`` runs.
    """
    meta = mapping_at(deployment, "metadata")
    name = str(meta.get("name") or "")
    spec = mapping_at(deployment, "spec")
    found: list[tuple[str, str, str]] = [(p, m, "error") for p, m in _roles_rules(spec)]
    # The engine rule runs second in validateModelDeployment (after the roles' own rules).
    found += engine_rule(spec) if engine_rule is not None else [(p, m, "error") for p, m in engine_version_rule(spec)]
    rest: list[tuple[str, str]] = []
    rest += _kv_cache(spec)
    rest += _roles_count(spec)
    rest += _role_service_names(name, spec)
    rest += _service_names_distinct(name, spec)
    rest += _role_member_names(name, spec)
    rest += _role_kinds(spec)
    rest += _role_topology(spec)
    rest += _router(spec)
    rest += elastic_findings(spec)
    found += [(p, m, "error") for p, m in rest]
    return [Finding("ModelDeployment", name, path, message, namespace, severity) for path, message, severity in found]


def _roles_rules(spec: Mapping[str, Any]) -> list[tuple[str, str]]:
    """validateModelDeploymentRoles: the per-role rules mirrored offline (resources, additional volumes)."""
    found: list[tuple[str, str]] = []
    for i, role in enumerate(_roles(spec)):
        found += _role_resources(role, f"spec.roles[{i}]")
        found += _role_additional_volumes(role, f"spec.roles[{i}]")
    return found


def _role_resources(role: Mapping[str, Any], role_path: str) -> list[tuple[str, str]]:
    """validateModelDeploymentRoleResources."""
    resources = mapping_at(role, "resources")
    found: list[tuple[str, str]] = []
    interface = resources.get("interface")
    if interface is not None:
        count = _quantity(interface)
        if count is None or count != count.to_integral_value() or count < 0:
            found.append((f"{role_path}.resources.interface", "interface count must be a non-negative whole number"))
    profile = resources.get("acceleratorPartitionedProfile")
    if profile and (resources.get("acceleratorSlicedMemoryPercentage") or resources.get("acceleratorSlicedCoresPercentage")):
        path = f"{role_path}.resources"
        found.append((f"{path}.acceleratorPartitionedProfile",
                      f"a partition profile cannot be combined with {path}.acceleratorSlicedMemoryPercentage or "
                      f"{path}.acceleratorSlicedCoresPercentage: hardware partitioning and software slicing cannot "
                      "both apply to one accelerator"))
    return found


def _role_additional_volumes(role: Mapping[str, Any], role_path: str) -> list[tuple[str, str]]:
    """validateModelDeploymentRoleAdditionalVolumes: one source each, distinct mount paths, no ``..``."""
    volumes = role.get("additionalVolumes")
    found: list[tuple[str, str]] = []
    seen: dict[str, int] = {}
    for i, volume in enumerate(volumes if isinstance(volumes, list) else []):
        volume = volume if isinstance(volume, Mapping) else {}
        path = f"{role_path}.additionalVolumes[{i}]"
        mount_path = str(volume.get("mountPath") or "")
        if not any(volume.get(source) for source in ("configMap", "secret", "hostPath")):
            found.append((path, f'one of configMap, secret or hostPath, so that "{mount_path}" names something to '
                                "mount; an entry naming none is skipped at render and the container starts without it"))
        if mount_path in seen:
            found.append((f"{path}.mountPath", duplicate_value(
                f'"{mount_path}" is already mounted by {role_path}.additionalVolumes[{seen[mount_path]}].mountPath; two '
                "volumes cannot occupy one path, and which of them the container would see is not something this API "
                "decides")))
        else:
            seen[mount_path] = i
        sub_path = volume.get("subPath")
        if sub_path and ".." in str(sub_path).split("/"):
            found.append((f"{path}.subPath", 'must not contain a ".." element: the path is resolved inside the volume, '
                                             "and an element that climbs out of it reaches the host filesystem of "
                                             "whatever backs the volume"))
    return found


def engine_version_rule(spec: Mapping[str, Any]) -> list[tuple[str, str]]:
    """validateModelDeploymentEngineVersion: a role without an image needs ``engine.version``."""
    engine = mapping_at(spec, "engine")
    if engine.get("version"):
        return []
    for role in _roles(spec):
        if not role.get("image"):
            return [("spec.engine.version",
                     f'role "{role.get("name", "")}" names no image of its own, so its image is synthesized from the '
                     "engine and its version, and an empty version assembles a tag naming something never typed. "
                     "Give the engine a version, or name an image on the role")]
    return []


def _kv_cache(spec: Mapping[str, Any]) -> list[tuple[str, str]]:
    """validateModelDeploymentKVCache: the Binding name must not be empty."""
    kv_cache = spec.get("kvCache")
    if not isinstance(kv_cache, Mapping):
        return []
    pool_ref = mapping_at(kv_cache, "poolRef")
    if pool_ref.get("name"):
        return []
    return [("spec.kvCache.poolRef.name", "the Binding name must not be empty: the Binding is the authorization "
                                          "point for reaching the pool, and an empty reference names none")]


def _roles_count(spec: Mapping[str, Any]) -> list[tuple[str, str]]:
    """validateModelDeploymentRolesCount."""
    if len(_roles(spec)) <= MAX_ROLES:
        return []
    return [("spec.roles", f"at most {MAX_ROLES} roles: every role renders its own replicas, Services and queue "
                           "references, and a deployment naming more than that is a shape this operator does not "
                           "serve — a prefill/decode deployment names two")]


def _role_service_names(name: str, spec: Mapping[str, Any]) -> list[tuple[str, str]]:
    """validateModelDeploymentRoleServiceNames (on create every role is new)."""
    found = []
    for i, role in enumerate(_roles(spec)):
        service = f"{name}-{role.get('name', '')}"
        why = is_dns1035_label(service)
        if why:
            found.append((f"spec.roles[{i}].name",
                          f'this role is fronted by a Service named "{service}" ({len(service)} characters), which is '
                          f"not a valid Service name: {'; '.join(why)}. Shorten or rename this role, or the deployment"))
    return found


def _service_names_distinct(name: str, spec: Mapping[str, Any]) -> list[tuple[str, str]]:
    """validateModelDeploymentServiceNamesAreDistinct."""
    claimed_by = {name: "the deployment's own Service"}
    if spec.get("router"):
        claimed_by[f"{name}-router"] = "the Service fronting the managed router"
    found = []
    for i, role in enumerate(_roles(spec)):
        role_name = str(role.get("name", ""))
        derived = [(f"{name}-{role_name}", f'the Service fronting role "{role_name}"')]
        if _int(role.get("size"), 1) > 1:
            derived += [(f"{name}-{role_name}-r{ordinal}",
                         f'the headless Service publishing instance {ordinal} of role "{role_name}"')
                        for ordinal in range(_int(role.get("replicas"), 1))]
        for service, describes in derived:
            if service in claimed_by:
                found.append((f"spec.roles[{i}].name",
                              f'{describes} would be named "{service}", and so would {claimed_by[service]}. One name '
                              "is one object, and the two need different shapes, so whichever is written last leaves "
                              "the other without the addresses it publishes. Rename this role"))
                continue
            claimed_by[service] = describes
    return found


def _role_member_names(name: str, spec: Mapping[str, Any]) -> list[tuple[str, str]]:
    """validateModelDeploymentRoleMemberNames."""
    found = []
    for i, role in enumerate(_roles(spec)):
        size = _int(role.get("size"), 1)
        if size <= 1:
            continue
        member = f"{name}-{role.get('name', '')}-r{max(_int(role.get('replicas'), 1) - 1, 0)}-m{size - 1}"
        why = is_dns1123_label(member)
        if why:
            found.append((f"spec.roles[{i}]",
                          "a replica of this role is addressed by naming each of its Pods, and the longest such name "
                          f'would be "{member}" ({len(member)} characters), which cannot be a hostname: '
                          f"{'; '.join(why)}. Shorten the role or the deployment, or declare fewer replicas"))
    return found


def _role_kinds(spec: Mapping[str, Any]) -> list[tuple[str, str]]:
    """validateModelDeploymentRoleKinds: Server alone, non-Server kinds once each."""
    roles = _roles(spec)
    kinds = [effective_role_kind(role) for role in roles]
    has_server = KIND_SERVER in kinds
    has_other = any(kind != KIND_SERVER for kind in kinds)
    found = []
    first_of_kind: dict[str, int] = {}
    for i, kind in enumerate(kinds):
        path = f"spec.roles[{i}].kind"
        if has_server and has_other:
            found.append((path, f'"{KIND_SERVER}" cannot be combined with another kind in one deployment: a '
                                f'"{KIND_SERVER}" role serves whole requests by itself, so a deployment holding one '
                                f'beside a "{KIND_PREFILL}" or "{KIND_DECODE}" role describes no arrangement the '
                                "engines' KV transfer configuration can express"))
            continue
        if kind != KIND_SERVER:
            if kind in first_of_kind:
                found.append((path, f'kind "{kind}" is already declared by role "{roles[first_of_kind[kind]].get("name", "")}": '
                                    f'only "{KIND_SERVER}" may be declared by more than one role, because a set of '
                                    "servers is a set of equals, whereas nothing consuming these roles expresses a "
                                    f'second "{kind}" and the extra role would render into a configuration nothing '
                                    "downstream can reach"))
                continue
            first_of_kind[kind] = i
    return found


def _role_topology(spec: Mapping[str, Any]) -> list[tuple[str, str]]:
    """validateModelDeploymentRoleTopology."""
    found = []
    for i, role in enumerate(_roles(spec)):
        topology = mapping_at(role, "topology")
        level = topology.get("requiredLevel")
        if not level:
            continue
        path = f"spec.roles[{i}].topology.requiredLevel"
        problems = is_qualified_name(str(level))
        if problems:
            found.append((path, "is not a topology label key: " + "; ".join(problems)))
        if level == "kubernetes.io/hostname":
            found.append((path, "kubernetes.io/hostname is implicit and cannot be required; omitting requiredLevel "
                                "leaves placement unconstrained, it does not keep the Pods on one Node"))
    return found


def _router(spec: Mapping[str, Any]) -> list[tuple[str, str]]:
    """validateModelDeploymentRouter: owned flags, the threshold's router, and the engine the router fronts."""
    router = spec.get("router")
    if not isinstance(router, Mapping):
        return []
    router_name = str(router.get("name") or "")
    engine = str((spec.get("engine") or {}).get("name") or "") if isinstance(spec.get("engine"), Mapping) else ""
    found = []
    extra_args = router.get("extraArgs")
    for i, arg in enumerate(extra_args if isinstance(extra_args, list) else []):
        flag = arg_name(str(arg))
        if flag in ROUTER_OWNED_ARGS.get(router_name, ()):
            found.append((f"spec.router.extraArgs[{i}]",
                          f'"{flag}" is set by the operator for router "{router_name}" and must not be supplied here, '
                          "because two values for it cannot be told apart"))
    if router.get("disaggregationThresholdTokens") is not None and router_name != ROUTER_LLMD:
        found.append(("spec.router.disaggregationThresholdTokens",
                      f'router "{router_name}" has no prompt-token threshold to set; it is meaningful under '
                      f'"{ROUTER_LLMD}" alone, whose scheduler decides per request whether to split one'))
    engines = ROUTER_ENGINES.get(router_name)
    if engines is not None and engine not in engines:
        found.append(("spec.router.name", f'router "{router_name}" does not front engine "{engine}"; it accepts '
                                          f"{', '.join(engines)}"))
    return found


def declared_parallelism(extra_args: Sequence[str]) -> tuple[dict[str, int], str | None]:
    """The vLLM parallel degrees the elastic rules read, and an error for an unreadable one.

    A subset of ``ParseModelDeploymentDeclaredParallelism``: tensor, pipeline and prefill-context
    parallel sizes (default 1) and ``--elastic-ep-max-dp-size`` (0 when absent), in ``--flag=N``,
    ``--flag N`` and the engine's single-dash abbreviations; ``--`` ends recognition. The error text
    for an unreadable value is gpu-fabric's (the operator's parser was not mirrored word for word).
    """
    flags = {"--tensor-parallel-size": "tensor", "-tp": "tensor", "--pipeline-parallel-size": "pipeline",
             "-pp": "pipeline", "--prefill-context-parallel-size": "prefill_context", "-pcp": "prefill_context",
             "--elastic-ep-max-dp-size": "elastic_max_dp"}
    declared = {"tensor": 1, "pipeline": 1, "prefill_context": 1, "elastic_max_dp": 0}
    tokens = list(extra_args)
    i = 0
    while i < len(tokens):
        token = str(tokens[i])
        if token == "--":
            break
        flag, has_value, value = token.partition("=")
        if flag in flags:
            if not has_value:
                if i + 1 >= len(tokens):
                    return declared, f"{flag} needs a value"
                value = str(tokens[i + 1])
                i += 1
            if not re.fullmatch(r"\d+", value.strip()) or int(value) < 1:
                return declared, f"{flag} takes a whole number of at least 1, got {value!r}"
            declared[flags[flag]] = int(value)
        i += 1
    return declared, None


def elastic_findings(spec: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``validateModelDeploymentElasticShape`` (create): one managed vLLM Server role of whole cards."""
    roles = _roles(spec)
    elastic = [i for i, role in enumerate(roles) if isinstance(role.get("elasticEp"), Mapping)]
    if not elastic:
        return []
    engine = str((spec.get("engine") or {}).get("name") or "") if isinstance(spec.get("engine"), Mapping) else ""
    found: list[tuple[str, str]] = []
    if engine != ENGINE_VLLM:
        found.append(("spec.engine.name", "the elastic-EP profile runs the vLLM engine; no other engine carries the "
                                          "elastic contract this profile renders"))
    if len(elastic) > 1:
        found.append(("spec.roles", "at most one role may carry spec.roles[].elasticEp: the profile is one managed "
                                    "vLLM Server role"))
    if len(roles) > 1:
        found.append(("spec.roles", "spec.roles[].elasticEp is the deployment's ONLY role: one managed vLLM Server "
                                    "role, whose width -- not a second role -- sizes the collective"))
    for i in elastic:
        role, path = roles[i], f"spec.roles[{i}]"
        width = _int(role["elasticEp"].get("width"), 0)
        if not ELASTIC_WIDTH_MIN <= width <= ELASTIC_WIDTH_MAX:
            found.append((f"{path}.elasticEp.width", f"total GPU engines including the reserved master must be between "
                                                     f"{ELASTIC_WIDTH_MIN} and {ELASTIC_WIDTH_MAX}"))
        extra_args = list_at(role, "extraArgs")
        declared, error = declared_parallelism(extra_args)
        if error:
            found.append((f"{path}.extraArgs", error))
        else:
            if declared["elastic_max_dp"] > 0 and width > declared["elastic_max_dp"]:
                found.append((f"{path}.elasticEp.width",
                              f"must not exceed the startup --elastic-ep-max-dp-size ({declared['elastic_max_dp']})"))
            if declared["pipeline"] != 1 or declared["prefill_context"] != 1:
                found.append((f"{path}.extraArgs", "each elastic member holds one TP group; pipeline and prefill "
                                                   "context parallel sizes must be one"))
            found += _elastic_resources(role, path, declared["tensor"])
        if effective_role_kind(role) != KIND_SERVER:
            found.append((f"{path}.kind", "the elastic-EP profile is one managed vLLM Server role; prefill/decode "
                                          "kinds do not compose with it"))
        if _int(role.get("replicas"), 1) != 1:
            found.append((f"{path}.replicas", "the elastic-EP profile is one serving instance; width, not replicas, "
                                              "sizes the collective"))
        if _int(role.get("size"), 1) != 1:
            found.append((f"{path}.size", "each elastic member is exactly one Pod; the member count is width, not size"))
        if role.get("command"):
            found.append((f"{path}.command", "the elastic renderer owns the argv of the managed role; a taken-over "
                                             "command has no elastic rendering"))
        found += _elastic_owned_keys(role, path)
    return found


def _elastic_resources(role: Mapping[str, Any], path: str, tensor_parallel: int) -> list[tuple[str, str]]:
    """validateModelDeploymentElasticResources: the whole, fixed TP group per member, no interface."""
    resources = role.get("resources")
    if not isinstance(resources, Mapping):
        return []
    path = f"{path}.resources"
    found = []
    accelerator = resources.get("accelerator")
    if accelerator is not None and _quantity(accelerator) != tensor_parallel:
        found.append((f"{path}.accelerator", f"each elastic member takes exactly {tensor_parallel} whole accelerators per Pod"))
    for key in ("acceleratorSlicedMemoryPercentage", "acceleratorSlicedCoresPercentage"):
        if resources.get(key):
            found.append((f"{path}.{key}", "the elastic profile takes whole, non-sliced accelerators"))
    if resources.get("acceleratorPartitionedProfile"):
        found.append((f"{path}.acceleratorPartitionedProfile", "the elastic profile takes whole, non-partitioned accelerators"))
    interface = resources.get("interface")
    if interface is not None and _quantity(interface) != 0:
        found.append((f"{path}.interface", "the initial elastic profile requests no fabric interface"))
    return found


def _elastic_owned_keys(role: Mapping[str, Any], path: str) -> Iterable[tuple[str, str]]:
    """validateModelDeploymentElasticOwnedKeys."""
    extra_args = list_at(role, "extraArgs")
    for arg in extra_args:
        flag_name = str(arg).lstrip("-").split("=", 1)[0]
        flag = "--" + _ELASTIC_ABBREVIATIONS.get(flag_name, flag_name)
        if flag in ELASTIC_OWNED_FLAGS:
            yield f"{path}.extraArgs", f"{flag} is written by the elastic renderer itself"
    env = list_at(role, "env")
    for i, entry in enumerate(env):
        name = str((entry or {}).get("name", "")) if isinstance(entry, Mapping) else ""
        if name in ELASTIC_OWNED_ENV:
            yield f"{path}.env[{i}].name", f"{name} is written by the elastic renderer itself"


# ---- KVCachePool and KVCachePoolBinding (pkg/worker/webhooks/worker/kv_cache_pool.go, kv_cache_pool_binding.go) ----


def _object_finding(kind: str, obj: Mapping[str, Any], found: list[tuple[str, str]], namespace: str | None) -> list[Finding]:
    meta = mapping_at(obj, "metadata")
    return [Finding(kind, str(meta.get("name") or ""), path, message, namespace) for path, message in found]


def pool_findings(pool: Mapping[str, Any]) -> list[Finding]:
    """``validateKVCachePoolSpec``: exactly one backend, each named."""
    spec = mapping_at(pool, "spec")
    backends = list_at(spec, "backends")
    found: list[tuple[str, str]] = []
    if len(backends) != 1:
        found.append(("spec.backends", f"exactly 1 backend is supported, and {len(backends)} were given: quota is "
                                       "enforced by one master's per-tenant ledger, and no master can account for "
                                       "bytes held in another"))
    for i, name in enumerate(backends):
        if not name:
            found.append((f"spec.backends[{i}]", "a backend is named by the name of a KVCacheBackend"))
    return _object_finding("KVCachePool", pool, found, None)


def binding_findings(binding: Mapping[str, Any], namespace: str) -> list[Finding]:
    """``validateKVCachePoolBindingSpec`` / ``validateKVCachePoolBindingDomain``: the Binding's own shape."""
    spec = mapping_at(binding, "spec")
    found: list[tuple[str, str]] = []
    if not ((spec.get("poolRef") or {}).get("name") if isinstance(spec.get("poolRef"), Mapping) else None):
        found.append(("spec.poolRef.name", "a Binding grants exactly one pool, named here"))
    domain = mapping_at(spec, "domain")
    name = domain.get("name")
    if name:
        why = is_dns1123_label(str(name))
        if why:
            found.append(("spec.domain.name", "a reuse domain is named like a Kubernetes object, so nobody learns a "
                                              "second naming rule, and it travels to the storage layer as the tenant "
                                              f"id verbatim: {'; '.join(why)}"))
    if _int(domain.get("blockSize"), 0) <= 0:
        found.append(("spec.domain.blockSize", "must be greater than 0: it is the number of tokens one cache block holds"))
    dtype = domain.get("dtype")
    if not dtype:
        found.append(("spec.domain.dtype", "the element type the cached tensors carry, in the engine's own spelling"))
    elif str(dtype) != str(dtype).lower():
        found.append(("spec.domain.dtype", "must be lowercase: engines spell it that way, and this value is compared "
                                           "rather than interpreted, so two spellings of one type would read as two types"))
    return _object_finding("KVCachePoolBinding", binding, found, namespace)


# ---- KVCacheBackend (pkg/worker/webhooks/worker/kv_cache_backend.go) -------------------------------------------
# The subset that the pinned schema's fields carry and that is answered from the object alone. Not mirrored: the
# fallback-image Setting, image-reference parsing, leader/member extraArgs rule tables, the disk-tier/offload
# pairing (leader.offload is not in the pinned schema) and update-time rules.

MAX_LEADER_REPLICAS = 5  # MaxLeaderReplicas (the schema's leader.replicas maximum carries the same number)


def _host_port_problem(address: str) -> str | None:
    """``checkHostPort``: why an address is not one the operator could dial, or ``None``."""
    if address != address.strip():
        return "must not begin or end with a space: the address is stored and dialed exactly as written here"
    host, sep, port = address.rpartition(":")
    if not sep:
        return f"address {address}: missing port in address"
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not host:
        return "no host"
    if not port.isdigit():
        return f'port "{port}" is not a number'
    if not 1 <= int(port) <= 65535:
        return f"port {int(port)} is outside 1-65535"
    if any(ch in host for ch in " /?#@"):
        return "cannot be used as an address: the host part is not a host name"
    return None


def backend_findings(backend: Mapping[str, Any]) -> list[Finding]:
    """``validateKVCacheBackendSpec`` on create: names, image, pull secrets, connection branch and its contents."""
    meta = mapping_at(backend, "metadata")
    name = str(meta.get("name") or "")
    spec = mapping_at(backend, "spec")
    connection = mapping_at(spec, "connection")
    managed, external = connection.get("managed"), connection.get("external")
    found: list[tuple[str, str]] = []
    if isinstance(managed, Mapping):
        # validateKVCacheBackendName: the leader Service (<name>-leader) and member DaemonSets (<name>-member-<i>).
        members = list_at(managed, "members")
        for rendered in [f"{name}-leader", *(f"{name}-member-{i}" for i in range(len(members)))]:
            why = is_dns1035_label(rendered)
            if why:
                found.append(("metadata.name", f'this backend renders an object named "{rendered}", which is not a '
                                                f"valid name for one: {'; '.join(why)}"))
                break
        # validateKVCacheBackendImage: blank is refused (unset falls back to the cluster Setting).
        image = spec.get("image")
        if isinstance(image, str) and image and not image.strip():
            found.append(("spec.image", 'must not be blank: an image is either named here or left out entirely so the '
                                        '"kv-cache-backend-image" setting decides'))
    secrets = list_at(spec, "imagePullSecrets")
    for i, ref in enumerate(secrets):
        secret = str((ref or {}).get("name") or "") if isinstance(ref, Mapping) else ""
        if not secret:
            found.append((f"spec.imagePullSecrets[{i}].name", "name of the referenced secret must be specified"))
        elif len(secret) > 253 or not re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*", secret):
            found.append((f"spec.imagePullSecrets[{i}].name", "a lowercase RFC 1123 subdomain must consist of lower "
                                                               "case alphanumeric characters, '-' or '.', and must "
                                                               "start and end with an alphanumeric character"))
    # validateKVCacheBackendConnection: exactly one branch.
    if managed is None and external is None:
        found.append(("spec.connection", 'one of "managed" or "external" must be set: a backend with neither describes nothing'))
    elif managed is not None and external is not None:
        found.append(("spec.connection", 'only one of "managed" or "external" may be set: a backend with both describes two'))
    elif isinstance(external, Mapping):
        found += _backend_external(external)
    elif isinstance(managed, Mapping):
        found += _backend_managed(managed)
    return _object_finding("KVCacheBackend", backend, found, None)


def _backend_external(external: Mapping[str, Any]) -> list[tuple[str, str]]:
    """validateKVCacheBackendExternal: dialable addresses, and both a Client and an Admin entry."""
    endpoints = list_at(external, "endpoints")
    found = []
    for i, endpoint in enumerate(endpoints):
        address = str((endpoint or {}).get("address", "")) if isinstance(endpoint, Mapping) else ""
        problem = _host_port_problem(address)
        if problem:
            found.append((f"spec.connection.external.endpoints[{i}].address",
                          f"must be host:port, and this operator dials it as given: {problem}"))
    names = {str((endpoint or {}).get("name")) for endpoint in endpoints if isinstance(endpoint, Mapping)}
    for role in ("Client", "Admin"):
        if role not in names:
            found.append(("spec.connection.external.endpoints",
                          f'an entry named "{role}" is required: this operator reads the "Admin" address and publishes '
                          'the "Client" one, so an external backend naming only one leaves either the scrape or every '
                          "engine with no address"))
    return found


def _backend_managed(managed: Mapping[str, Any]) -> list[tuple[str, str]]:
    """validateKVCacheBackendManaged / validateKVCacheBackendMember / validateKVCacheBackendScaleIn (create)."""
    found = []
    leader = mapping_at(managed, "leader")
    replicas = leader.get("replicas")
    if replicas is not None:
        replicas = _int(replicas, 0)
        if replicas > MAX_LEADER_REPLICAS:
            found.append(("spec.connection.managed.leader.replicas",
                          f"at most {MAX_LEADER_REPLICAS} is supported: only one leader serves at a time and the rest "
                          "are standbys, so more of them adds spare processes rather than capacity"))
        if replicas > 1 and leader.get("highAvailability") is None:
            found.append(("spec.connection.managed.leader.replicas",
                          "more than one leader requires leader.highAvailability, which elects one of them through a "
                          "Kubernetes Lease; without it every replica would serve"))
    members = list_at(managed, "members")
    for i, member in enumerate(members):
        found += _backend_member(member if isinstance(member, Mapping) else {}, f"spec.connection.managed.members[{i}]")
        capacity = _quantity((member or {}).get("capacityPerMember")) if isinstance(member, Mapping) else None
        if capacity is not None and capacity <= 0:
            found.append((f"spec.connection.managed.members[{i}].capacityPerMember",
                          "must be greater than 0: a member contributing nothing is a Pod with no reason to run"))
        elif capacity is not None and capacity > 2**63 - 1:
            found.append((f"spec.connection.managed.members[{i}].capacityPerMember",
                          "must not exceed 9223372036854775807 (2^63-1) bytes: the renderer reads this as a signed "
                          "64-bit count, and a larger one does not survive the conversion"))
    scale_in = mapping_at(managed, "scaleIn")
    grace = scale_in.get("gracePeriodSeconds")
    if grace is not None and _int(grace, 0) < 0:
        found.append(("spec.connection.managed.scaleIn.gracePeriodSeconds", "must not be negative"))
    return found


_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def is_valid_label_value(value: str) -> list[str]:
    """``validation.IsValidLabelValue``."""
    problems = []
    if len(value) > 63:
        problems.append("must be no more than 63 characters")
    if not _LABEL_VALUE.match(value):
        problems.append(_regex_error("a valid label must be an empty string or consist of alphanumeric characters, "
                                     "'-', '_' or '.', and must start and end with an alphanumeric character",
                                     "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?", "MyValue", "my_value", "12345"))
    return problems


def _backend_member(member: Mapping[str, Any], path: str) -> list[tuple[str, str]]:
    """validateKVCacheBackendMember: localBufferSize not negative, a node selector made of labels, no blank image."""
    found = []
    buffer = _quantity(member.get("localBufferSize")) if member.get("localBufferSize") is not None else None
    if buffer is not None and buffer < 0:
        found.append((f"{path}.localBufferSize", "must not be negative: it is added to the member Pod's memory request"))
    selector = mapping_at(member, "nodeSelector")
    for key in sorted(selector, key=str):
        problems = is_qualified_name(str(key))
        if problems:
            found.append((f"{path}.nodeSelector[{key}]", "is not a label key: " + "; ".join(problems)))
        problems = is_valid_label_value(str(selector[key]))
        if problems:
            found.append((f"{path}.nodeSelector[{key}]", "is not a label value: " + "; ".join(problems)))
    image = member.get("image")
    if isinstance(image, str) and image and not image.strip():
        found.append((f"{path}.image", "must not be blank: an image is either named here or left out so the "
                                       "backend's decides"))
    return found
