"""The GPUStack operator's elastic-EP admission shape: one managed vLLM Server role of whole cards.

Mirrors ``validateModelDeploymentElasticShape`` and the rules it calls
(``pkg/worker/webhooks/worker/model_deployment_elastic.go``, at the commit
:data:`gpu_fabric.gpustack.operator_pin.SOURCE_FILES` names), with the operator's messages; the
ModelDeployment webhook (:mod:`gpu_fabric.gpustack.admission.model_deployment`) runs it on create.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping, Sequence

from gpu_fabric.config.shapes import list_at
from gpu_fabric.gpustack.admission.common import (
    ENGINE_VLLM,
    KIND_SERVER,
    effective_role_kind,
    engine_name,
    int_or,
    quantity_or_none,
    roles_of,
)
from gpu_fabric.findings import Finding, ObjectRef, Severity
from gpu_fabric.gpustack.rules import MODEL_DEPLOYMENT_ADMISSION

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


def _refuse(path: str, message: str) -> Finding:
    """A refusal of the webhook at ``path`` of the object (named by the caller)."""
    return Finding.of(MODEL_DEPLOYMENT_ADMISSION, path, message)



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


def elastic_findings(spec: Mapping[str, Any]) -> list[Finding]:
    """``validateModelDeploymentElasticShape`` (create): one managed vLLM Server role of whole cards."""
    roles = roles_of(spec)
    elastic = [i for i, role in enumerate(roles) if isinstance(role.get("elasticEp"), Mapping)]
    if not elastic:
        return []
    engine = engine_name(spec)
    found: list[Finding] = []
    if engine != ENGINE_VLLM:
        found.append(_refuse("spec.engine.name", "the elastic-EP profile runs the vLLM engine; no other engine carries the "
                                          "elastic contract this profile renders"))
    if len(elastic) > 1:
        found.append(_refuse("spec.roles", "at most one role may carry spec.roles[].elasticEp: the profile is one managed "
                                    "vLLM Server role"))
    if len(roles) > 1:
        found.append(_refuse("spec.roles", "spec.roles[].elasticEp is the deployment's ONLY role: one managed vLLM Server "
                                    "role, whose width -- not a second role -- sizes the collective"))
    for i in elastic:
        role, path = roles[i], f"spec.roles[{i}]"
        width = int_or(role["elasticEp"].get("width"), 0)
        if not ELASTIC_WIDTH_MIN <= width <= ELASTIC_WIDTH_MAX:
            found.append(_refuse(f"{path}.elasticEp.width", f"total GPU engines including the reserved master must be between "
                                                     f"{ELASTIC_WIDTH_MIN} and {ELASTIC_WIDTH_MAX}"))
        extra_args = list_at(role, "extraArgs")
        declared, error = declared_parallelism(extra_args)
        if error:
            found.append(_refuse(f"{path}.extraArgs", error))
        else:
            if declared["elastic_max_dp"] > 0 and width > declared["elastic_max_dp"]:
                found.append(_refuse(f"{path}.elasticEp.width",
                              f"must not exceed the startup --elastic-ep-max-dp-size ({declared['elastic_max_dp']})"))
            if declared["pipeline"] != 1 or declared["prefill_context"] != 1:
                found.append(_refuse(f"{path}.extraArgs", "each elastic member holds one TP group; pipeline and prefill "
                                                   "context parallel sizes must be one"))
            found += _elastic_resources(role, path, declared["tensor"])
        if effective_role_kind(role) != KIND_SERVER:
            found.append(_refuse(f"{path}.kind", "the elastic-EP profile is one managed vLLM Server role; prefill/decode "
                                          "kinds do not compose with it"))
        if int_or(role.get("replicas"), 1) != 1:
            found.append(_refuse(f"{path}.replicas", "the elastic-EP profile is one serving instance; width, not replicas, "
                                              "sizes the collective"))
        if int_or(role.get("size"), 1) != 1:
            found.append(_refuse(f"{path}.size", "each elastic member is exactly one Pod; the member count is width, not size"))
        if role.get("command"):
            found.append(_refuse(f"{path}.command", "the elastic renderer owns the argv of the managed role; a taken-over "
                                             "command has no elastic rendering"))
        found += _elastic_owned_keys(role, path)
    return found


def _elastic_resources(role: Mapping[str, Any], path: str, tensor_parallel: int) -> list[Finding]:
    """validateModelDeploymentElasticResources: the whole, fixed TP group per member, no interface."""
    resources = role.get("resources")
    if not isinstance(resources, Mapping):
        return []
    path = f"{path}.resources"
    found = []
    accelerator = resources.get("accelerator")
    if accelerator is not None and quantity_or_none(accelerator) != tensor_parallel:
        found.append(_refuse(f"{path}.accelerator", f"each elastic member takes exactly {tensor_parallel} whole accelerators per Pod"))
    for key in ("acceleratorSlicedMemoryPercentage", "acceleratorSlicedCoresPercentage"):
        if resources.get(key):
            found.append(_refuse(f"{path}.{key}", "the elastic profile takes whole, non-sliced accelerators"))
    if resources.get("acceleratorPartitionedProfile"):
        found.append(_refuse(f"{path}.acceleratorPartitionedProfile", "the elastic profile takes whole, non-partitioned accelerators"))
    interface = resources.get("interface")
    if interface is not None and quantity_or_none(interface) != 0:
        found.append(_refuse(f"{path}.interface", "the initial elastic profile requests no fabric interface"))
    return found


def _elastic_owned_keys(role: Mapping[str, Any], path: str) -> Iterable[Finding]:
    """validateModelDeploymentElasticOwnedKeys."""
    extra_args = list_at(role, "extraArgs")
    for arg in extra_args:
        flag_name = str(arg).lstrip("-").split("=", 1)[0]
        flag = "--" + _ELASTIC_ABBREVIATIONS.get(flag_name, flag_name)
        if flag in ELASTIC_OWNED_FLAGS:
            yield _refuse(f"{path}.extraArgs", f"{flag} is written by the elastic renderer itself")
    env = list_at(role, "env")
    for i, entry in enumerate(env):
        name = str((entry or {}).get("name", "")) if isinstance(entry, Mapping) else ""
        if name in ELASTIC_OWNED_ENV:
            yield _refuse(f"{path}.env[{i}].name", f"{name} is written by the elastic renderer itself")
