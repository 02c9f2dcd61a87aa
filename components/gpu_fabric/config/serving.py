"""GPUStack ``worker.gpustack.ai`` objects as configuration: fields and enums of the operator's API.

Field order follows the operator's documentation and the seed walkthrough, because the builders
dump these models as the manifests' ``spec`` and a stable order keeps preview diffs quiet.
These models carry the operator's schema (fields, enums, bounds). Its admission rules (role kinds,
router and engine, engine version, elastic EP, interfaces, transfer legs) are not repeated here: they
live in :mod:`gpu_fabric.gpustack.admission` and :mod:`gpu_fabric.gpustack.transfer`, which ``load_config`` runs over the
manifests the stack would register.
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


def _check_quantity(value: Optional[Quantity]) -> Optional[Quantity]:
    if value is not None:
        try:
            amount(value)  # every quantity here is an amount: never negative
        except QuantityError as error:
            raise ValueError(str(error)) from None
    return value


class NamedRef(SpecModel):
    """A reference by name."""

    name: str


class LocalObjectRef(SpecModel):
    """A reference to an object in the deployment's namespace (ConfigMap, Secret, pull secret)."""

    name: str = Field(min_length=1)


class Model(SpecModel):
    """The served model."""

    name: str = Field(min_length=1, max_length=253)
    artifact_ref: Optional[NamedRef] = None


class Engine(SpecModel):
    """Inference engine; frozen after creation except ``version`` (and ``image``).

    Which fields the operator has depends on its line (:mod:`gpu_fabric.gpustack.profiles`): the
    released lines (0.9, 0.10, 0.11) take ``image``, the runner image, and synthesize nothing; the
    pre-release ``main@5cfac77b`` has no ``image`` and synthesizes a role's runner from ``version``.
    This model accepts both; the chosen line's schema refuses the one it lacks, naming the other.
    """

    name: Literal["vLLM", "SGLang"]
    image: Optional[syntax.Image] = Field(default=None, max_length=512)
    version: Optional[str] = Field(default=None, min_length=1, max_length=64)


class Router(SpecModel):
    """The router in front of the roles; a router plus Prefill/Decode roles renders a KV-transfer leg."""

    name: Literal["llm-d-router", "vllm-router", "sglang-gateway"]
    replicas: Optional[int] = Field(default=None, ge=1)
    image: Optional[syntax.Image] = Field(default=None, max_length=512)
    image_pull_policy: Optional[Literal["Always", "IfNotPresent", "Never"]] = None
    image_pull_secrets: Optional[list[LocalObjectRef]] = Field(default=None, max_length=32)
    extra_args: Optional[list[str]] = None
    request_timeout_seconds: Optional[int] = Field(default=None, ge=1)
    disaggregation_threshold_tokens: Optional[int] = Field(default=None, ge=0)


class KvTransfer(SpecModel):
    """Direct prefill-to-decode KV transfer."""

    protocol: Optional[DirectProtocol] = None
    backend: Optional[str] = Field(default=None, min_length=1, max_length=64)
    """The direct connector's backend (operator 0.11 line; its values are not documented in what was read)."""


class KvCacheRef(SpecModel):
    """The KVCachePoolBinding (same namespace) whose pool serves this deployment's KV cache."""

    pool_ref: NamedRef
    connector: Optional[Literal["Mooncake"]] = None


class RoleResources(SpecModel):
    """Per-Pod resources of a role; ``interface`` is translated into fabric device keys."""

    accelerator: Optional[Quantity] = None
    accelerator_sliced_memory_percentage: Optional[int] = Field(default=None, ge=0, le=100)
    accelerator_sliced_cores_percentage: Optional[int] = Field(default=None, ge=0, le=100)
    accelerator_partitioned_profile: Optional[str] = Field(default=None, max_length=64)
    interface: Optional[Quantity] = None
    cpu: Optional[Quantity] = None
    """CPU per Pod (operator 0.11 line)."""
    ram: Optional[Quantity] = None
    """Memory per Pod (operator 0.11 line)."""
    local_storage: Optional[Quantity] = None
    """Local storage per Pod (operator 0.11 line)."""

    _quantities = field_validator("accelerator", "interface", "cpu", "ram", "local_storage")(_check_quantity)


class EnvVar(SpecModel):
    """An environment variable: a name Kubernetes accepts (``syntax.env_var_name``); any string value."""

    name: syntax.EnvVarName
    value: str = ""


class Port(SpecModel):
    """A container port."""

    port: int = Field(ge=1, le=65535)
    protocol: Optional[Literal["TCP", "UDP", "SCTP"]] = None


class RoleTopology(SpecModel):
    """Kueue topology-aware scheduling for a role (``requiredLevel`` is a topology label key)."""

    required_level: Optional[str] = None


class HostPathSource(SpecModel):
    """A host path volume (the operator gates it behind a Setting)."""

    path: str
    type: Optional[str] = None


class AdditionalVolume(SpecModel):
    """A volume mounted into every container of the role: exactly one of configMap, secret, hostPath."""

    mount_path: str = Field(max_length=1024, pattern=r"^(/[^/]+)+$")
    read_only: Optional[bool] = None
    sub_path: Optional[str] = Field(default=None, max_length=1024, pattern=r"^[^/].*$")
    config_map: Optional[LocalObjectRef] = None
    secret: Optional[LocalObjectRef] = None
    host_path: Optional[HostPathSource] = None


class ElasticEp(SpecModel):
    """The elastic expert-parallel profile: one managed vLLM Server role of ``width`` engines."""

    width: int = Field(ge=2, le=64)


class Role(SpecModel):
    """One role of a ModelDeployment: a set of replicas on one pool.

    The pool is ``instance_type`` up to the operator's 0.10 line (and on ``main@5cfac77b``) and
    ``accelerator_type`` from 0.11; exactly one is set, and the chosen line's schema refuses the
    spelling it does not have.
    """

    name: str
    kind: Literal["Server", "Prefill", "Decode"] = "Server"
    replicas: int = Field(default=1, ge=1, le=1024)
    size: Optional[int] = Field(default=None, ge=1, le=64)
    instance_type: Optional[str] = Field(default=None, min_length=1, max_length=253)
    accelerator_type: Optional[str] = Field(default=None, min_length=1, max_length=253)
    resources: RoleResources = Field(default_factory=RoleResources)
    image: Optional[syntax.Image] = Field(default=None, max_length=512)
    image_pull_policy: Optional[Literal["Always", "IfNotPresent", "Never"]] = None
    image_pull_secrets: Optional[list[LocalObjectRef]] = Field(default=None, max_length=32)
    command: Optional[list[str]] = None
    extra_args: Optional[list[str]] = None
    env: Optional[list[EnvVar]] = None
    ports: Optional[list[Port]] = None
    shm_size: Optional[Quantity] = None
    privileged: Optional[bool] = None
    additional_volumes: Optional[list[AdditionalVolume]] = None
    topology: Optional[RoleTopology] = None
    termination_grace_period_seconds: Optional[int] = Field(default=None, ge=15, le=3600)
    elastic_ep: Optional[ElasticEp] = None

    _shm = field_validator("shm_size")(_check_quantity)

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
    namespace: str
    model: Model
    engine: Engine
    router: Optional[Router] = None
    kv_transfer: Optional[KvTransfer] = None
    kv_cache: Optional[KvCacheRef] = None
    roles: list[Role] = Field(min_length=1, max_length=10)

    _name = field_validator("name")(check_object_name)
    _namespace = field_validator("namespace")(check_namespace)

    def spec_fields(self) -> dict[str, Any]:
        """The manifest ``spec`` (camelCase, unset fields omitted)."""
        return self.model_dump(by_alias=True, exclude_none=True, exclude={"name", "namespace"})


class Transport(SpecModel):
    """Transport of a KV-cache backend or of one member group."""

    protocol: Optional[ApiProtocol] = None


class HostPath(SpecModel):
    """An extra host path for a member group."""

    path: str
    mount_path: Optional[str] = None
    type: Optional[Literal["", "DirectoryOrCreate", "Directory", "FileOrCreate", "File", "Socket", "CharDevice", "BlockDevice"]] = None
    read_only: Optional[bool] = None

    @model_validator(mode="after")
    def _no_infiniband(self) -> "HostPath":
        for path in (self.path, self.mount_path):
            if path and path.rstrip("/") == "/dev/infiniband":
                raise ValueError("a hostPath at /dev/infiniband is refused; fabric devices come from the device plugin")
        return self


class MemberGroup(SpecModel):
    """A Mooncake member group: one DaemonSet on the nodes its selector picks."""

    node_selector: dict[str, str]
    medium: Literal["DRAM", "VRAM"]
    capacity_per_member: Quantity
    local_buffer_size: Optional[Quantity] = None
    extra_args: Optional[list[str]] = None
    extra_env: Optional[list[EnvVar]] = None
    image: Optional[syntax.Image] = Field(default=None, max_length=512)
    transport: Optional[Transport] = None
    fabric_interface_count: Optional[int] = Field(default=None, ge=1)
    security_context: Optional[dict[str, Any]] = None
    host_paths: Optional[list[HostPath]] = Field(default=None, max_length=32)
    runtime_class_name: Optional[str] = None
    local_disks: Optional[list[dict[str, Any]]] = Field(default=None, max_length=1)

    _quantities = field_validator("capacity_per_member", "local_buffer_size")(_check_quantity)

    @field_validator("security_context")
    @classmethod
    def _never_privileged(cls, value: Optional[dict[str, Any]]) -> Optional[dict[str, Any]]:
        # The operator gives fabric members IPC_LOCK and SYS_RESOURCE; privilege is never needed.
        if value and value.get("privileged"):
            raise ValueError("Mooncake members must not be privileged; fabric groups already get IPC_LOCK and SYS_RESOURCE")
        return value


class Leader(SpecModel):
    """The managed Mooncake leader (master)."""

    replicas: Optional[int] = Field(default=None, ge=1, le=5)
    allocation_strategy: Optional[Literal["Random", "FreeRatioFirst"]] = None
    multi_tenancy: Optional[bool] = None
    extra_args: Optional[list[str]] = None
    extra_env: Optional[list[EnvVar]] = None
    high_availability: Optional[dict[str, Any]] = None
    election_backend: Optional[str] = Field(default=None, min_length=1, max_length=64)
    """How the leader elects (operator 0.11 line; its docs show ``None``, for images without Lease election)."""


class Managed(SpecModel):
    """A backend whose leader and members the operator runs."""

    leader: Leader = Field(default_factory=Leader)
    members: list[MemberGroup] = Field(min_length=1, max_length=32)
    scale_in: Optional[dict[str, Any]] = None


class ExternalEndpoint(SpecModel):
    """An endpoint of an external Mooncake deployment."""

    name: Literal["Client", "Admin"]
    address: str = Field(max_length=259)


class External(SpecModel):
    """A backend run outside the operator."""

    endpoints: list[ExternalEndpoint] = Field(min_length=1)


class Connection(SpecModel):
    """Exactly one of ``managed`` and ``external`` (the operator's backend webhook refuses any other shape)."""

    managed: Optional[Managed] = None
    external: Optional[External] = None


class KVCacheBackendSpec(SpecModel):
    """A cluster-scoped KVCacheBackend (Mooncake)."""

    name: str
    type: Literal["Mooncake"] = "Mooncake"
    image: Optional[syntax.Image] = Field(default=None, max_length=512)
    image_pull_policy: Optional[Literal["Always", "IfNotPresent", "Never"]] = None
    image_pull_secrets: Optional[list[LocalObjectRef]] = Field(default=None, max_length=32)
    transport: Optional[Transport] = None
    connection: Connection

    _name = field_validator("name")(check_object_name)

    def spec_fields(self) -> dict[str, Any]:
        """The manifest ``spec``."""
        return self.model_dump(by_alias=True, exclude_none=True, exclude={"name"})


class PoolQuota(SpecModel):
    """Total capacity a KVCachePool may use."""

    total: Quantity

    _quantity = field_validator("total")(_check_quantity)


class KVCachePoolSpec(SpecModel):
    """A cluster-scoped KVCachePool over exactly one backend."""

    name: str
    backends: list[str] = Field(min_length=1)
    """Exactly one KVCacheBackend name (the operator's pool webhook refuses any other count, with its reason)."""
    quota: PoolQuota

    _name = field_validator("name")(check_object_name)

    def spec_fields(self) -> dict[str, Any]:
        """The manifest ``spec``."""
        return self.model_dump(by_alias=True, exclude_none=True, exclude={"name"})


class Domain(SpecModel):
    """The store tenant a binding writes to (immutable): engines sharing it must agree on block size and dtype."""

    name: Optional[str] = Field(default=None, max_length=63)
    """Defaults to ``default`` (the operator's schema default)."""
    block_size: int = Field(ge=1, le=2**31 - 1)
    """KV block size in tokens, as the engines write it."""
    dtype: str = Field(min_length=1, max_length=32)
    """KV-cache dtype (for example ``auto``, ``bfloat16``, ``fp8``); the operator renders it as ``--kv-cache-dtype``."""


class BindingQuota(SpecModel):
    """A binding's share of the pool."""

    ceiling: Quantity

    _quantity = field_validator("ceiling")(_check_quantity)


class KVCachePoolBindingSpec(SpecModel):
    """A namespaced KVCachePoolBinding: what a ModelDeployment's ``kvCache.poolRef`` names."""

    name: str
    namespace: str
    pool_ref: NamedRef
    domain: Domain
    quota: BindingQuota

    _name = field_validator("name")(check_object_name)
    _namespace = field_validator("namespace")(check_namespace)

    def spec_fields(self) -> dict[str, Any]:
        """The manifest ``spec``."""
        return self.model_dump(by_alias=True, exclude_none=True, exclude={"name", "namespace"})
