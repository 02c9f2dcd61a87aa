"""The KV cache as configuration: GPUStack's ``KVCacheBackend``, ``KVCachePool`` and ``KVCachePoolBinding``.

Like :mod:`gpu_fabric.config.serving` (the ModelDeployment, and the references and quantities these share):
field order follows the operator's documentation and the seed walkthrough, and the models carry the
operator's schema; its admission rules live in :mod:`gpu_fabric.gpustack.admission`.
"""

from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import Field, field_validator, model_validator

from gpu_fabric.config import syntax
from gpu_fabric.config.base import SpecModel
from gpu_fabric.config.pool import check_namespace, check_object_name
from gpu_fabric.config.serving import ApiProtocol, EnvVar, LocalObjectRef, NamedRef, Quantity, check_quantity


class Transport(SpecModel):
    """Transport of a KV-cache backend or of one member group."""

    protocol: Optional[ApiProtocol] = None
    """Transfer protocol (``Auto``, ``TCP``, ``RDMA``, ``EFA``, ``CANN``, ``ROCM``, ``MUSA``, ``MACA``); ``RDMA`` and ``EFA`` need member pools of that fabric."""


class HostPath(SpecModel):
    """An extra host path for a member group."""

    path: str
    """Path on the node."""
    mount_path: Optional[str] = None
    """Path in the member container; ``path`` when absent."""
    type: Optional[Literal["", "DirectoryOrCreate", "Directory", "FileOrCreate", "File", "Socket", "CharDevice", "BlockDevice"]] = None
    """Kubernetes hostPath type (e.g. ``Directory``)."""
    read_only: Optional[bool] = None
    """Mount read-only."""

    @model_validator(mode="after")
    def _no_infiniband(self) -> "HostPath":
        for path in (self.path, self.mount_path):
            if path and path.rstrip("/") == "/dev/infiniband":
                raise ValueError("a hostPath at /dev/infiniband is refused; fabric devices come from the device plugin")
        return self


class MemberGroup(SpecModel):
    """A Mooncake member group: one DaemonSet on the nodes its selector picks."""

    node_selector: dict[str, str]
    """Labels of the nodes the group's DaemonSet runs on; must select a pool of the stack for RDMA/EFA transport."""
    medium: Literal["DRAM", "VRAM"]
    """Where members keep KV blocks: ``DRAM`` or ``VRAM``."""
    capacity_per_member: Quantity
    """Cache capacity of each member, a quantity (e.g. ``64Gi``)."""
    local_buffer_size: Optional[Quantity] = None
    """Each member's local transfer buffer, a quantity."""
    extra_args: Optional[list[str]] = None
    """Extra arguments of the member process."""
    extra_env: Optional[list[EnvVar]] = None
    """Extra environment variables of the member container."""
    image: Optional[syntax.Image] = Field(default=None, max_length=512)
    """Member image; the backend's ``image`` when absent."""
    transport: Optional[Transport] = None
    """The group's transport; the backend's when absent."""
    fabric_interface_count: Optional[int] = Field(default=None, ge=1)
    """Fabric interfaces each member requests (at most the pool's ``interfacesPerNode``)."""
    security_context: Optional[dict[str, Any]] = None
    """Container securityContext of the members (never privileged: rule mooncake-members-unprivileged, which the
    stack decides with the pack's own function, gpu_fabric.validation.pack_verdicts)."""
    host_paths: Optional[list[HostPath]] = Field(default=None, max_length=32)
    """Extra host paths mounted into the members (never ``/dev/infiniband``)."""
    runtime_class_name: Optional[str] = None
    """RuntimeClass of the member Pods."""
    local_disks: Optional[list[dict[str, Any]]] = Field(default=None, max_length=1)
    """At most one local disk for the members, passed to the operator as written (``members[].localDisks``)."""

    _quantities = field_validator("capacity_per_member", "local_buffer_size")(check_quantity)


class Leader(SpecModel):
    """The managed Mooncake leader (master)."""

    replicas: Optional[int] = Field(default=None, ge=1, le=5)
    """Leader (master) replicas (1-5)."""
    allocation_strategy: Optional[Literal["Random", "FreeRatioFirst"]] = None
    """``Random`` or ``FreeRatioFirst``: how the leader places KV blocks on members."""
    multi_tenancy: Optional[bool] = None
    """Passed to the operator as written (``leader.multiTenancy``)."""
    extra_args: Optional[list[str]] = None
    """Extra arguments of the leader process."""
    extra_env: Optional[list[EnvVar]] = None
    """Extra environment variables of the leader container."""
    high_availability: Optional[dict[str, Any]] = None
    """Passed to the operator as written (``leader.highAvailability``)."""
    election_backend: Optional[str] = Field(default=None, min_length=1, max_length=64)
    """How the leader elects (operator 0.11 line; its docs show ``None``, for images without Lease election)."""


class Managed(SpecModel):
    """A backend whose leader and members the operator runs."""

    leader: Leader = Field(default_factory=Leader)
    """The Mooncake leader (master)."""
    members: list[MemberGroup] = Field(min_length=1, max_length=32)
    """Member groups (1-32), one DaemonSet each."""
    scale_in: Optional[dict[str, Any]] = None
    """Passed to the operator as written (``managed.scaleIn``)."""


class ExternalEndpoint(SpecModel):
    """An endpoint of an external Mooncake deployment."""

    name: Literal["Client", "Admin"]
    """``Client`` or ``Admin``."""
    address: str = Field(max_length=259)
    """``host:port`` of the endpoint."""


class External(SpecModel):
    """A backend run outside the operator."""

    endpoints: list[ExternalEndpoint] = Field(min_length=1)
    """Endpoints of the external Mooncake deployment."""


class Connection(SpecModel):
    """Exactly one of ``managed`` and ``external`` (the operator's backend webhook refuses any other shape)."""

    managed: Optional[Managed] = None
    """A backend whose leader and members the operator runs."""
    external: Optional[External] = None
    """A backend run outside the operator."""


class KVCacheBackendSpec(SpecModel):
    """A cluster-scoped KVCacheBackend (Mooncake)."""

    name: str
    """Name of the KVCacheBackend (cluster-scoped)."""
    type: Literal["Mooncake"] = "Mooncake"
    """Backend type (``Mooncake``, the only one)."""
    image: Optional[syntax.Image] = Field(default=None, max_length=512)
    """Mooncake image of the leader and members."""
    image_pull_policy: Optional[Literal["Always", "IfNotPresent", "Never"]] = None
    """``Always``, ``IfNotPresent`` or ``Never``."""
    image_pull_secrets: Optional[list[LocalObjectRef]] = Field(default=None, max_length=32)
    """Pull secrets for the backend's images."""
    transport: Optional[Transport] = None
    """Default transport of the member groups."""
    connection: Connection
    """Managed by the operator, or external."""

    _name = field_validator("name")(check_object_name)

    def spec_fields(self) -> dict[str, Any]:
        """The manifest ``spec``."""
        return self.model_dump(by_alias=True, exclude_none=True, exclude={"name"})


class PoolQuota(SpecModel):
    """Total capacity a KVCachePool may use."""

    total: Quantity
    """Total capacity, a quantity (e.g. ``512Gi``)."""

    _quantity = field_validator("total")(check_quantity)


class KVCachePoolSpec(SpecModel):
    """A cluster-scoped KVCachePool over exactly one backend."""

    name: str
    """Name of the KVCachePool (cluster-scoped)."""
    backends: list[str] = Field(min_length=1)
    """Exactly one KVCacheBackend name (the operator's pool webhook refuses any other count, with its reason)."""
    quota: PoolQuota
    """Capacity the pool may use."""

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
    """Most of the pool the binding may use, a quantity."""

    _quantity = field_validator("ceiling")(check_quantity)


class KVCachePoolBindingSpec(SpecModel):
    """A namespaced KVCachePoolBinding: what a ModelDeployment's ``kvCache.poolRef`` names."""

    name: str
    """Name of the KVCachePoolBinding."""
    namespace: str
    """Namespace of the binding; one of the stack's ``namespaces``."""
    pool_ref: NamedRef
    """The KVCachePool, by name."""
    domain: Domain
    """The store tenant the binding writes to."""
    quota: BindingQuota
    """The binding's share of the pool."""

    _name = field_validator("name")(check_object_name)
    _namespace = field_validator("namespace")(check_namespace)

    def spec_fields(self) -> dict[str, Any]:
        """The manifest ``spec``."""
        return self.model_dump(by_alias=True, exclude_none=True, exclude={"name", "namespace"})
