"""GPUStack ``worker.gpustack.ai`` objects as configuration: fields and enums of the operator's API -- the
ModelDeployment here, with the references and quantities the KV cache shares (:mod:`gpu_fabric.config.kv_cache`).

Field order follows the operator's documentation and the seed walkthrough, because the builders
dump these models as the manifests' ``spec`` and a stable order keeps preview diffs quiet.
These models carry the operator's schema (fields, enums, bounds). Its admission rules (role kinds,
router and engine, engine version, elastic EP, interfaces, transfer legs) are not repeated here: they
live in :mod:`gpu_fabric.gpustack.admission` and :mod:`gpu_fabric.gpustack.admission_pipeline`, which
``load_config`` runs over the manifests the stack would register.
"""

from __future__ import annotations

from typing import Any, Literal, Optional, Union

from pydantic import Field, field_validator, model_validator

from gpu_fabric.config import syntax
from gpu_fabric.config.quantity import QuantityError, amount
from gpu_fabric.config.base import SpecModel
from gpu_fabric.config.pool import DNS_LABEL, check_namespace, check_object_name

Quantity = Union[int, str]
ApiProtocol = Literal["Auto", "TCP", "RDMA", "EFA", "CANN", "ROCM", "MUSA", "MACA"]
DirectProtocol = Literal["Auto", "TCP", "RDMA", "EFA", "CANN", "ROCM"]


def check_quantity(value: Optional[Quantity]) -> Optional[Quantity]:
    """A field validator: ``value`` (if set) is a Kubernetes quantity and never negative."""
    if value is not None:
        try:
            amount(value)  # every quantity here is an amount: never negative
        except QuantityError as error:
            raise ValueError(str(error)) from None
    return value


class NamedRef(SpecModel):
    """A reference by name."""

    name: str
    """Name of the referenced object."""


class LocalObjectRef(SpecModel):
    """A reference to an object in the deployment's namespace (ConfigMap, Secret, pull secret)."""

    name: str = Field(min_length=1)
    """Name of the object in the deployment's namespace."""


class Model(SpecModel):
    """The served model."""

    name: str = Field(min_length=1, max_length=253)
    """The model to serve (written to the ModelDeployment's ``spec.model.name``)."""
    artifact_ref: Optional[NamedRef] = None
    """A model artifact object, by name (``spec.model.artifactRef``)."""


class Engine(SpecModel):
    """Inference engine; frozen after creation except ``version`` (and ``image``).

    Which fields the operator has depends on its line (:mod:`gpu_fabric.gpustack.profiles`): the
    released lines (0.9, 0.10, 0.11) take ``image``, the runner image, and synthesize nothing; the
    pre-release ``main@5cfac77b`` has no ``image`` and synthesizes a role's runner from ``version``.
    This model accepts both; the chosen line's schema refuses the one it lacks, naming the other.
    """

    name: Literal["vLLM", "SGLang"]
    """``vLLM`` or ``SGLang``."""
    image: Optional[syntax.Image] = Field(default=None, max_length=512)
    """The runner image of every role that names none (released lines: required unless every role names its own)."""
    version: Optional[str] = Field(default=None, min_length=1, max_length=64)
    """Engine version; with no role ``image``, the operator's runner image is synthesized from it."""


class Router(SpecModel):
    """The router in front of the roles; a router plus Prefill/Decode roles renders a KV-transfer leg."""

    name: Literal["llm-d-router", "vllm-router", "sglang-gateway"]
    """``llm-d-router``, ``vllm-router`` or ``sglang-gateway``."""
    replicas: Optional[int] = Field(default=None, ge=1)
    """Router replicas (``spec.router.replicas``)."""
    image: Optional[syntax.Image] = Field(default=None, max_length=512)
    """Router image; the operator's default when absent."""
    image_pull_policy: Optional[Literal["Always", "IfNotPresent", "Never"]] = None
    """``Always``, ``IfNotPresent`` or ``Never``."""
    image_pull_secrets: Optional[list[LocalObjectRef]] = Field(default=None, max_length=32)
    """Pull secrets (in the deployment's namespace) for the router image."""
    extra_args: Optional[list[str]] = None
    """Extra command-line arguments of the router."""
    request_timeout_seconds: Optional[int] = Field(default=None, ge=1)
    """Router request timeout in seconds (``spec.router.requestTimeoutSeconds``)."""
    disaggregation_threshold_tokens: Optional[int] = Field(default=None, ge=0)
    """Prompt length in tokens from which the router disaggregates prefill and decode (``spec.router.disaggregationThresholdTokens``)."""


class KvTransfer(SpecModel):
    """Direct prefill-to-decode KV transfer."""

    protocol: Optional[DirectProtocol] = None
    """Prefill-to-decode KV transfer protocol (``Auto``, ``TCP``, ``RDMA``, ``EFA``, ``CANN``, ``ROCM``); ``RDMA`` and ``EFA`` need role pools of that fabric."""
    backend: Optional[str] = Field(default=None, min_length=1, max_length=64)
    """The direct connector's backend (operator 0.11 line; its values are not documented in what was read)."""


class KvCacheRef(SpecModel):
    """The KVCachePoolBinding (same namespace) whose pool serves this deployment's KV cache."""

    pool_ref: NamedRef
    """The KVCachePoolBinding, in the deployment's namespace, by name."""
    connector: Optional[Literal["Mooncake"]] = None
    """The engine's KV connector (``Mooncake``)."""


class RoleResources(SpecModel):
    """Per-Pod resources of a role; ``interface`` is translated into fabric device keys."""

    accelerator: Optional[Quantity] = None
    """Accelerators per Pod (a quantity, at most the pool's ``acceleratorsPerNode``)."""
    accelerator_sliced_memory_percentage: Optional[int] = Field(default=None, ge=0, le=100)
    """Percentage of one accelerator's memory per Pod (sliced sharing)."""
    accelerator_sliced_cores_percentage: Optional[int] = Field(default=None, ge=0, le=100)
    """Percentage of one accelerator's cores per Pod (sliced sharing)."""
    accelerator_partitioned_profile: Optional[str] = Field(default=None, max_length=64)
    """Partition profile of the accelerator (e.g. a MIG profile)."""
    interface: Optional[Quantity] = None
    """Fabric interfaces per Pod, translated into the fabric's device keys (``vpc.amazonaws.com/efa`` or ``device.gpustack.ai/rdma``); at most the pool's ``interfacesPerNode``."""
    cpu: Optional[Quantity] = None
    """CPU per Pod (operator 0.11 line)."""
    ram: Optional[Quantity] = None
    """Memory per Pod (operator 0.11 line)."""
    local_storage: Optional[Quantity] = None
    """Local storage per Pod (operator 0.11 line)."""

    _quantities = field_validator("accelerator", "interface", "cpu", "ram", "local_storage")(check_quantity)


class EnvVar(SpecModel):
    """An environment variable: a name Kubernetes accepts (``syntax.env_var_name``); any string value."""

    name: syntax.EnvVarName
    """Variable name."""
    value: str = ""
    """Variable value (any string; default empty)."""


class Port(SpecModel):
    """A container port."""

    port: int = Field(ge=1, le=65535)
    """Container port (1-65535)."""
    protocol: Optional[Literal["TCP", "UDP", "SCTP"]] = None
    """``TCP``, ``UDP`` or ``SCTP``."""


class RoleTopology(SpecModel):
    """Kueue topology-aware scheduling for a role (``requiredLevel`` is a topology label key)."""

    required_level: Optional[str] = None
    """Topology label key the role's Pods must share (Kueue topology-aware scheduling)."""


class HostPathSource(SpecModel):
    """A host path volume (the operator gates it behind a Setting)."""

    path: str
    """Path on the node."""
    type: Optional[str] = None
    """Kubernetes hostPath type (e.g. ``Directory``)."""


class AdditionalVolume(SpecModel):
    """A volume mounted into every container of the role: exactly one of configMap, secret, hostPath."""

    mount_path: str = Field(max_length=1024, pattern=r"^(/[^/]+)+$")
    """Absolute path the volume is mounted at in every container of the role."""
    read_only: Optional[bool] = None
    """Mount read-only."""
    sub_path: Optional[str] = Field(default=None, max_length=1024, pattern=r"^[^/].*$")
    """Relative path inside the volume to mount instead of its root."""
    config_map: Optional[LocalObjectRef] = None
    """A ConfigMap in the deployment's namespace."""
    secret: Optional[LocalObjectRef] = None
    """A Secret in the deployment's namespace."""
    host_path: Optional[HostPathSource] = None
    """A path on the node (the operator gates it behind a Setting)."""


class ElasticEp(SpecModel):
    """The elastic expert-parallel profile: one managed vLLM Server role of ``width`` engines."""

    width: int = Field(ge=2, le=64)
    """Engines of the elastic expert-parallel group (2-64)."""


class Role(SpecModel):
    """One role of a ModelDeployment: a set of replicas on one pool.

    The pool is ``instance_type`` up to the operator's 0.10 line (and on ``main@5cfac77b``) and
    ``accelerator_type`` from 0.11; exactly one is set, and the chosen line's schema refuses the
    spelling it does not have.
    """

    name: str
    """Role name, unique within the deployment."""
    kind: Literal["Server", "Prefill", "Decode"] = "Server"
    """``Server`` (default), ``Prefill`` or ``Decode``; Prefill plus Decode with a router form a KV-transfer leg."""
    replicas: int = Field(default=1, ge=1, le=1024)
    """Replicas of the role (default 1)."""
    size: Optional[int] = Field(default=None, ge=1, le=64)
    """Pods per replica (an elastic EP role sets ``elasticEp.width`` instead)."""
    instance_type: Optional[str] = Field(default=None, min_length=1, max_length=253)
    """The pool (GPUStack InstanceType) the role runs on (operator lines up to 0.10 and the pin); must name a pool of the stack."""
    accelerator_type: Optional[str] = Field(default=None, min_length=1, max_length=253)
    """The pool (GPUStack AcceleratorType) the role runs on (operator 0.11 line, which renamed ``instanceType``); must name a pool of the stack."""
    resources: RoleResources = Field(default_factory=RoleResources)
    """Per-Pod accelerators and fabric interfaces."""
    image: Optional[syntax.Image] = Field(default=None, max_length=512)
    """The role's image; the operator synthesizes a runner image from ``engine`` when absent."""
    image_pull_policy: Optional[Literal["Always", "IfNotPresent", "Never"]] = None
    """``Always``, ``IfNotPresent`` or ``Never``."""
    image_pull_secrets: Optional[list[LocalObjectRef]] = Field(default=None, max_length=32)
    """Pull secrets (in the deployment's namespace) for the role's image."""
    command: Optional[list[str]] = None
    """Container command, replacing the image's entrypoint."""
    extra_args: Optional[list[str]] = None
    """Extra engine arguments."""
    env: Optional[list[EnvVar]] = None
    """Environment variables of the role's containers."""
    ports: Optional[list[Port]] = None
    """Container ports."""
    shm_size: Optional[Quantity] = None
    """Size of the shared-memory volume (``/dev/shm``), a quantity."""
    privileged: Optional[bool] = None
    """Run privileged (advisory policy model-deployment-unprivileged-roles: not needed for fabric devices)."""
    additional_volumes: Optional[list[AdditionalVolume]] = None
    """Volumes mounted into every container of the role."""
    topology: Optional[RoleTopology] = None
    """Kueue topology-aware scheduling of the role."""
    termination_grace_period_seconds: Optional[int] = Field(default=None, ge=15, le=3600)
    """Pod termination grace period in seconds (15-3600)."""
    elastic_ep: Optional[ElasticEp] = None
    """Elastic expert-parallel profile (one managed vLLM Server role)."""

    _shm = field_validator("shm_size")(check_quantity)

    @field_validator("name")
    @classmethod
    def _dns_label(cls, value: str) -> str:
        if len(value) > 63 or not DNS_LABEL.fullmatch(value):
            raise ValueError(f"role name {value!r} must be a DNS label (lowercase letters, digits, '-', at most 63)")
        return value

    @model_validator(mode="after")
    def _one_pool(self) -> "Role":
        if (self.instance_type is None) == (self.accelerator_type is None):
            raise ValueError("name the role's pool once: instanceType (GPUStack operator up to 0.10, main@5cfac77b) "
                             "or acceleratorType (0.11 and later)" +
                             ("" if self.instance_type is None else ", not both"))
        return self

    @property
    def pool(self) -> str:
        """The pool (ClusterQueue / InstanceType / AcceleratorType name) the role runs on, whichever spelling names it."""
        return self.instance_type or self.accelerator_type or ""


class ModelDeploymentSpec(SpecModel):
    """A GPUStack ModelDeployment: ``name``/``namespace`` plus the object's ``spec`` fields."""

    name: str
    """Name of the ModelDeployment (a DNS label)."""
    namespace: str
    """Namespace of the ModelDeployment; one of the stack's ``namespaces``."""
    model: Model
    """The model the deployment serves (the object's ``spec.model``)."""
    engine: Engine
    """The inference engine."""
    router: Optional[Router] = None
    """The router in front of the roles."""
    kv_transfer: Optional[KvTransfer] = None
    """Direct prefill-to-decode KV transfer."""
    kv_cache: Optional[KvCacheRef] = None
    """The KV-cache pool binding that serves this deployment."""
    roles: list[Role] = Field(min_length=1, max_length=10)
    """The deployment's roles (1-10)."""

    _name = field_validator("name")(check_object_name)
    _namespace = field_validator("namespace")(check_namespace)

    def spec_fields(self) -> dict[str, Any]:
        """The manifest ``spec`` (camelCase, unset fields omitted)."""
        return self.model_dump(by_alias=True, exclude_none=True, exclude={"name", "namespace"})
