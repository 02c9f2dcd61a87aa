"""What ``verify`` read from a cluster: the plain data the pure checks compare (no client types)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from gpu_fabric.verify.expectations import ObjectRef


@dataclass(frozen=True)
class KubeletConfigResult:
    """A node's ``/configz`` ``kubeletconfig`` section, or why it could not be read."""

    config: Optional[dict[str, Any]]
    error: str = ""
    checkable: bool = True
    """``False`` when nothing could be asked: the node lists no address, so no kubelet has registered
    it (a Node object made by hand, or a control plane without kubelets). Not checked, not failed."""


@dataclass
class ClusterSnapshot:
    """Nodes (as the API lists them), kubelet configurations by node, objects by reference, DRA claims and slices.

    ``objects`` maps each looked-up reference to the object, or ``None`` when the API answered 404.
    """

    nodes: list[dict[str, Any]] = field(default_factory=list)
    kubelet: dict[str, KubeletConfigResult] = field(default_factory=dict)
    objects: dict[ObjectRef, Optional[dict[str, Any]]] = field(default_factory=dict)
    claims: list[Any] = field(default_factory=list)
    """ResourceClaims (``resource.k8s.io/v1``) listed in the namespaces the stack renders claim templates in;
    each item as the server sent it (:mod:`gpu_fabric.verify.dra` reads its allocation by shape)."""
    slices: list[Any] = field(default_factory=list)
    """Every ResourceSlice (``resource.k8s.io/v1``), listed when there are claims to judge."""
