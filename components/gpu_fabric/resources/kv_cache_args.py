"""The nested argument types of the KV cache (``KVCache``, ``GpuFabric``'s ``kvCacheBackends``, ``kvCachePools``
and ``kvCachePoolBindings``).

Each ``TypedDict`` mirrors one model of :mod:`gpu_fabric.config.kv_cache` field for field, as
:mod:`gpu_fabric.resources.args` describes.

No ``from __future__ import annotations`` here: the analyzer reads these annotations at run time.
"""

from typing import Any, Mapping, Sequence, TypedDict

import pulumi

from gpu_fabric.resources.args import Required
from gpu_fabric.resources.deployment_args import EnvVarArgs, LocalObjectRefArgs, NamedRefArgs


class TransportArgs(TypedDict, total=False):
    """Transport of a KV-cache backend or of one member group."""

    protocol: str
    """``Auto``, ``TCP``, ``RDMA``, ``EFA``, ``CANN``, ``ROCM``, ``MUSA`` or ``MACA``."""


class HostPathArgs(TypedDict, total=False):
    """An extra host path of a member group."""

    path: Required[str]
    """Path on the node."""
    mount_path: str
    """Path in the container."""
    type: str
    """Kubernetes hostPath type."""
    read_only: bool
    """Mount read-only."""


class MemberGroupArgs(TypedDict, total=False):
    """A Mooncake member group: one DaemonSet on the nodes its selector picks."""

    node_selector: Required[Mapping[str, str]]
    """Nodes of the group."""
    medium: Required[str]
    """``DRAM`` or ``VRAM``."""
    capacity_per_member: Required[str]
    """Capacity each member contributes (a quantity)."""
    local_buffer_size: str
    """Local buffer size (a quantity)."""
    extra_args: Sequence[str]
    """Extra member arguments."""
    extra_env: Sequence[EnvVarArgs]
    """Extra environment."""
    image: pulumi.Input[str]
    """Member image."""
    transport: TransportArgs
    """Transport of this group."""
    fabric_interface_count: int
    """Fabric interfaces per member."""
    security_context: Mapping[str, Any]
    """Container security context (never privileged)."""
    host_paths: Sequence[HostPathArgs]
    """Extra host paths."""
    runtime_class_name: str
    """RuntimeClass of the members."""
    local_disks: Sequence[Mapping[str, Any]]
    """Local disk (at most one)."""


class LeaderArgs(TypedDict, total=False):
    """The managed Mooncake leader (master)."""

    replicas: int
    """Leader replicas (1 to 5)."""
    allocation_strategy: str
    """``Random`` or ``FreeRatioFirst``."""
    multi_tenancy: bool
    """Serve several domains."""
    extra_args: Sequence[str]
    """Extra leader arguments."""
    extra_env: Sequence[EnvVarArgs]
    """Extra environment."""
    high_availability: Mapping[str, Any]
    """High-availability settings, as the operator takes them."""
    election_backend: str
    """How the leader elects (GPUStack operator 0.11 and later; its docs show ``None``)."""


class ManagedArgs(TypedDict, total=False):
    """A backend whose leader and members the operator runs."""

    leader: LeaderArgs
    """The leader."""
    members: Required[Sequence[MemberGroupArgs]]
    """Member groups (1 to 32)."""
    scale_in: Mapping[str, Any]
    """Scale-in settings, as the operator takes them."""


class ExternalEndpointArgs(TypedDict, total=False):
    """An endpoint of an external Mooncake deployment."""

    name: Required[str]
    """``Client`` or ``Admin``."""
    address: Required[pulumi.Input[str]]
    """``host:port``."""


class ExternalArgs(TypedDict, total=False):
    """A backend run outside the operator."""

    endpoints: Required[Sequence[ExternalEndpointArgs]]
    """Its endpoints."""


class ConnectionArgs(TypedDict, total=False):
    """Exactly one of ``managed`` and ``external``."""

    managed: ManagedArgs
    """Operator-managed leader and members."""
    external: ExternalArgs
    """An external deployment."""


class KVCacheBackendArgs(TypedDict, total=False):
    """A cluster-scoped KVCacheBackend (Mooncake)."""

    name: Required[str]
    """Object name."""
    type: str
    """``Mooncake`` (default)."""
    image: pulumi.Input[str]
    """Mooncake image."""
    image_pull_policy: str
    """``Always``, ``IfNotPresent`` or ``Never``."""
    image_pull_secrets: Sequence[LocalObjectRefArgs]
    """Pull secrets in the operator's namespace for the Mooncake pods."""
    transport: TransportArgs
    """Transport of the backend."""
    connection: Required[ConnectionArgs]
    """Managed or external."""


class PoolQuotaArgs(TypedDict, total=False):
    """Total capacity a KVCachePool may use."""

    total: Required[str]
    """A quantity, e.g. ``"512Gi"``."""


class KVCachePoolArgs(TypedDict, total=False):
    """A cluster-scoped KVCachePool over exactly one backend."""

    name: Required[str]
    """Object name."""
    backends: Required[Sequence[str]]
    """The one backend's name."""
    quota: Required[PoolQuotaArgs]
    """The pool's capacity."""


class DomainArgs(TypedDict, total=False):
    """The store tenant a binding writes to (immutable)."""

    name: str
    """Domain name."""
    block_size: Required[int]
    """Block size."""
    dtype: Required[str]
    """KV data type."""


class BindingQuotaArgs(TypedDict, total=False):
    """A binding's share of the pool."""

    ceiling: Required[str]
    """A quantity, e.g. ``"64Gi"``."""


class KVCachePoolBindingArgs(TypedDict, total=False):
    """A namespaced KVCachePoolBinding: what a ModelDeployment's ``kv_cache.pool_ref`` names."""

    name: Required[str]
    """Object name."""
    namespace: Required[str]
    """Tenant namespace."""
    pool_ref: Required[NamedRefArgs]
    """The KVCachePool."""
    domain: Required[DomainArgs]
    """The store tenant."""
    quota: Required[BindingQuotaArgs]
    """The binding's share."""
