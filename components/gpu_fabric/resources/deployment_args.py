"""The nested argument types of a ModelDeployment (``ModelDeployment``, ``GpuFabric``'s ``deployments``).

Each ``TypedDict`` mirrors one model of :mod:`gpu_fabric.config.serving` field for field, as
:mod:`gpu_fabric.resources.args` describes; the references and environment variables here are shared with
the KV-cache types (:mod:`gpu_fabric.resources.kv_cache_args`).

No ``from __future__ import annotations`` here: the analyzer reads these annotations at run time.
"""

from typing import Sequence, TypedDict

import pulumi

from gpu_fabric.resources.args import Required


class NamedRefArgs(TypedDict, total=False):
    """A reference by name."""

    name: Required[str]
    """The referenced object's name."""


class LocalObjectRefArgs(TypedDict, total=False):
    """A reference to an object in the deployment's namespace (ConfigMap, Secret, pull secret)."""

    name: Required[str]
    """The object's name."""


class ModelArgs(TypedDict, total=False):
    """The served model."""

    name: Required[str]
    """Model name, e.g. ``Qwen/Qwen3-8B``."""
    artifact_ref: NamedRefArgs
    """A ModelArtifact to serve instead of downloading by name."""


class EngineArgs(TypedDict, total=False):
    """The inference engine."""

    name: Required[str]
    """``vLLM`` or ``SGLang``."""
    image: pulumi.Input[str]
    """Runner image every role without its own image runs (GPUStack operator 0.9 and later; required there
    unless every role names one). ``main@5cfac77b`` has no such field."""
    version: str
    """Engine version (``main@5cfac77b`` synthesizes runner images from it; released lines do not)."""


class RouterArgs(TypedDict, total=False):
    """The router in front of the roles; a router plus Prefill/Decode roles renders a KV-transfer leg."""

    name: Required[str]
    """``llm-d-router``, ``vllm-router`` or ``sglang-gateway``."""
    replicas: int
    """Router replicas."""
    image: pulumi.Input[str]
    """Router image."""
    image_pull_policy: str
    """``Always``, ``IfNotPresent`` or ``Never``."""
    image_pull_secrets: Sequence[LocalObjectRefArgs]
    """Pull secrets in the deployment's namespace."""
    extra_args: Sequence[str]
    """Extra router arguments."""
    request_timeout_seconds: int
    """Request timeout."""
    disaggregation_threshold_tokens: int
    """Prompt length from which ``llm-d-router`` disaggregates."""


class KvTransferArgs(TypedDict, total=False):
    """Direct prefill-to-decode KV transfer."""

    protocol: str
    """``Auto``, ``TCP``, ``RDMA``, ``EFA``, ``CANN`` or ``ROCM``."""
    backend: str
    """The direct connector's backend (GPUStack operator 0.11 and later)."""


class KvCacheRefArgs(TypedDict, total=False):
    """The KVCachePoolBinding (same namespace) whose pool serves the deployment's KV cache."""

    pool_ref: Required[NamedRefArgs]
    """The binding."""
    connector: str
    """``Mooncake``."""


class RoleResourcesArgs(TypedDict, total=False):
    """Per-Pod resources of a role; ``interface`` is translated into fabric device keys."""

    accelerator: str
    """Accelerators per Pod (a quantity)."""
    accelerator_sliced_memory_percentage: int
    """Memory share of a sliced accelerator."""
    accelerator_sliced_cores_percentage: int
    """Core share of a sliced accelerator."""
    accelerator_partitioned_profile: str
    """Partition profile of a partitioned accelerator."""
    interface: str
    """Fabric interfaces per Pod (a quantity)."""
    cpu: str
    """CPU per Pod (a quantity; GPUStack operator 0.11 and later)."""
    ram: str
    """Memory per Pod (a quantity; GPUStack operator 0.11 and later)."""
    local_storage: str
    """Local storage per Pod (a quantity; GPUStack operator 0.11 and later)."""


class EnvVarArgs(TypedDict, total=False):
    """An environment variable."""

    name: Required[str]
    """Variable name."""
    value: str
    """Variable value."""


class PortArgs(TypedDict, total=False):
    """A container port."""

    port: Required[int]
    """Port number."""
    protocol: str
    """``TCP``, ``UDP`` or ``SCTP``."""


class RoleTopologyArgs(TypedDict, total=False):
    """Kueue topology-aware scheduling for a role."""

    required_level: str
    """The topology label key all Pods of a replica must share."""


class HostPathSourceArgs(TypedDict, total=False):
    """A host path volume (the operator gates it behind a Setting)."""

    path: Required[str]
    """Path on the node."""
    type: str
    """Kubernetes hostPath type."""


class AdditionalVolumeArgs(TypedDict, total=False):
    """A volume mounted into every container of the role: exactly one of config_map, secret, host_path."""

    mount_path: Required[str]
    """Absolute mount path."""
    read_only: bool
    """Mount read-only."""
    sub_path: str
    """Relative path within the volume."""
    config_map: LocalObjectRefArgs
    """A ConfigMap."""
    secret: LocalObjectRefArgs
    """A Secret."""
    host_path: HostPathSourceArgs
    """A host path."""


class ElasticEpArgs(TypedDict, total=False):
    """The elastic expert-parallel profile: one managed vLLM Server role of ``width`` engines."""

    width: Required[int]
    """Engines, 2 to 64."""


class RoleArgs(TypedDict, total=False):
    """One role of a ModelDeployment: replicas on one pool (InstanceType, or AcceleratorType from operator 0.11)."""

    name: Required[str]
    """Role name (a DNS label)."""
    kind: str
    """``Server`` (default), ``Prefill`` or ``Decode``."""
    replicas: int
    """Replicas of the role."""
    size: int
    """Pods per replica."""
    instance_type: str
    """The InstanceType (pool) the role runs on (GPUStack operator up to 0.10 and ``main@5cfac77b``)."""
    accelerator_type: str
    """The AcceleratorType (pool) the role runs on (GPUStack operator 0.11 and later); set it or ``instance_type``."""
    resources: RoleResourcesArgs
    """Per-Pod resources."""
    image: pulumi.Input[str]
    """Runner image of the role, for example one built in the same program."""
    image_pull_policy: str
    """``Always``, ``IfNotPresent`` or ``Never``."""
    image_pull_secrets: Sequence[LocalObjectRefArgs]
    """Pull secrets in the deployment's namespace."""
    command: Sequence[str]
    """Container command."""
    extra_args: Sequence[str]
    """Extra engine arguments."""
    env: Sequence[EnvVarArgs]
    """Environment variables."""
    ports: Sequence[PortArgs]
    """Container ports."""
    shm_size: str
    """Shared memory size (a quantity)."""
    privileged: bool
    """Run privileged (advised against; fabric devices come from the device plugins)."""
    additional_volumes: Sequence[AdditionalVolumeArgs]
    """Volumes mounted into every container of the role."""
    topology: RoleTopologyArgs
    """Topology-aware scheduling."""
    termination_grace_period_seconds: int
    """Grace period, 15 to 3600 seconds."""
    elastic_ep: ElasticEpArgs
    """Elastic expert parallelism."""


class DeploymentArgs(TypedDict, total=False):
    """A GPUStack ModelDeployment: ``name`` and ``namespace`` plus the object's ``spec`` fields."""

    name: Required[str]
    """Object name."""
    namespace: Required[str]
    """Tenant namespace."""
    model: Required[ModelArgs]
    """The served model."""
    engine: Required[EngineArgs]
    """The engine."""
    router: RouterArgs
    """The router."""
    kv_transfer: KvTransferArgs
    """Direct prefill-to-decode transfer."""
    kv_cache: KvCacheRefArgs
    """The KV-cache pool binding."""
    roles: Required[Sequence[RoleArgs]]
    """The roles (1 to 10)."""
