"""Names that the GPUStack operator derives, computed the same way here.

The operator names the tenant entrance LocalQueue of every ClusterQueue (= InstanceType) with a
hash instead of the ClusterQueue name, so a 253-character InstanceType name still yields a valid
DNS-label queue name: ``gpustack-fnv64-`` followed by FNV-1a 64 of the UTF-8 name (Go's
``hash/fnv.New64a``), hex-encoded big-endian, which is always 31 characters.
"""

from __future__ import annotations

LOCAL_QUEUE_PREFIX = "gpustack-fnv64-"

_FNV64_OFFSET_BASIS = 0xCBF29CE484222325
_FNV64_PRIME = 0x100000001B3
_MASK64 = 0xFFFFFFFFFFFFFFFF


def fnv1a_64(data: bytes) -> int:
    """Return the 64-bit FNV-1a hash of ``data``."""
    value = _FNV64_OFFSET_BASIS
    for byte in data:
        value ^= byte
        value = (value * _FNV64_PRIME) & _MASK64
    return value


def local_queue_name(cluster_queue: str) -> str:
    """Return the operator's entrance LocalQueue name for ``cluster_queue``.

    >>> local_queue_name("gpustack--nvidia-a10g-linux-amd64")
    'gpustack-fnv64-c4680bb149644f1c'
    """
    if not cluster_queue:
        raise ValueError("cluster_queue must be a non-empty ClusterQueue name")
    return f"{LOCAL_QUEUE_PREFIX}{fnv1a_64(cluster_queue.encode('utf-8')):016x}"
