"""What one pod asks of one node: device-plugin keys and claimed devices, against a node of its pool (pure).

A pod is placed on one node, so whatever it asks for -- ``nvidia.com/gpu``, ``vpc.amazonaws.com/efa``, the
devices its ResourceClaims ask of ``gpu.nvidia.com`` and ``efa.networking.k8s.aws`` -- must be on one node of
the pool it lands on; more than a node has keeps it Pending for ever ("Insufficient vpc.amazonaws.com/efa";
a claim no node can satisfy is never allocated). The pod's demand is Kubernetes' effective request
(kubernetes.io, "Resource Management for Pods and Containers" and "Init Containers": the larger of the sum
of the app containers and the largest init container, restartable init containers -- sidecars -- added to
both, plus ``spec.overhead``), and every claim the pod lists is allocated once for the pod, whichever
containers name it.

:func:`node_capacity_of` states what one node of a pool offers; :func:`node_capacity_findings` is the rule
``workload-node-capacity``, reported per pod template and pool by :func:`gpu_fabric.kube.workloads.judge_workloads`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

from gpu_fabric.config import constants
from gpu_fabric.kube.dra_claims import (
    ALL,
    CLAIM_KIND,
    CLAIM_TEMPLATE_KIND,
    EFA_DEVICE_CLASS,
    GPU_DEVICE_CLASS,
    ClaimSpec,
)
from gpu_fabric.kube.dra_rules import ClaimKey  # (namespace, kind, name), as claim_specs keys them



def node_capacity_of(fabric: str, *, dra: bool, accelerators: Optional[int], accelerator_resource: Optional[str],
                     interfaces: Optional[int], partitioned: Optional[int] = None) -> dict[str, int]:
    """How many of each countable resource one node of a pool offers (only what the pool states).

    Device-plugin pools: the accelerator key (``acceleratorsPerNode``), ``vpc.amazonaws.com/efa`` on EFA pools and
    ``device.gpustack.ai/rdma`` / ``.partitioned`` on RDMA pools (``interfacesPerNode``,
    ``partitionedInterfacesPerNode``; ``rdma.shared`` is shared, so not counted). ``dra`` pools: the DeviceClasses
    of the stack's claims, ``gpu.nvidia.com`` and ``efa.networking.k8s.aws`` (docs/dra.md).
    """
    capacity: dict[str, int] = {}
    if dra:
        if accelerators is not None:
            capacity[GPU_DEVICE_CLASS] = accelerators
        if interfaces is not None and fabric == "efa":
            capacity[EFA_DEVICE_CLASS] = interfaces
        return capacity
    if accelerator_resource and accelerators is not None:
        capacity[accelerator_resource] = accelerators
    if interfaces is not None and fabric == "efa":
        capacity[constants.EFA_RESOURCE] = interfaces
    if fabric == "rdma":
        if interfaces is not None:
            capacity[constants.RDMA_RESOURCE] = interfaces
        if partitioned is not None:
            capacity[constants.RDMA_PARTITIONED_RESOURCE] = partitioned
    return capacity


def _count(value: Any) -> Optional[int]:
    """An extended resource's quantity (a whole number; anything else -- unknown, ``500m`` -- is not counted)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _container_counts(container: Any) -> dict[str, int]:
    """Resource -> count a container asks for: its requests, else its limits (an extended resource's request
    defaults to its limit and must equal it)."""
    resources = container.get("resources") if isinstance(container, Mapping) else None
    if not isinstance(resources, Mapping):
        return {}
    counts: dict[str, int] = {}
    for section in ("limits", "requests"):  # requests win: read last
        values = resources.get(section)
        if isinstance(values, Mapping):
            for key, value in values.items():
                count = _count(value)
                if count is not None:
                    counts[str(key)] = count
    return counts


def claim_device_counts(spec: ClaimSpec) -> dict[str, int]:
    """DeviceClass -> devices one claim is allocated at least (``firstAvailable``: its smallest alternative;
    ``allocationMode: All`` and unknown counts are not counted)."""
    counts: dict[str, int] = {}
    for request in spec.requests:
        asks = [ask for ask in request.asks if ask.allocation_mode != ALL and ask.count is not None and ask.device_class]
        if not asks or len(asks) != len(request.asks):
            continue
        smallest = min(asks, key=lambda ask: ask.count or 0)
        counts[str(smallest.device_class)] = counts.get(str(smallest.device_class), 0) + int(smallest.count or 0)
    return counts


def pod_claim_specs(pod_spec: Mapping[str, Any], namespace: str,
                    claims: Mapping[ClaimKey, ClaimSpec]) -> list[tuple[int, str, str, ClaimSpec]]:
    """``(index, claim name, what it names, spec)`` of every ``spec.resourceClaims[i]`` resolved among ``claims``."""
    found = []
    items = pod_spec.get("resourceClaims")
    for index, item in enumerate(items if isinstance(items, list) else []):
        if not isinstance(item, Mapping):
            continue
        template, claim = item.get("resourceClaimTemplateName"), item.get("resourceClaimName")
        kind, name = (CLAIM_TEMPLATE_KIND, template) if isinstance(template, str) else (CLAIM_KIND, claim)
        spec = claims.get((namespace, kind, name)) if isinstance(name, str) else None
        if spec is not None:
            found.append((index, str(item.get("name") or f"resourceClaims[{index}]"), f"{kind} {name}", spec))
    return found


@dataclass(frozen=True)
class Part:
    """One contributor to a pod's demand of one resource: a container, the overhead or a claim."""

    path: str
    what: str
    count: int


def _sum(parts: Sequence[Part]) -> int:
    return sum(part.count for part in parts)


def demand_of(pod_path: str, pod_spec: Mapping[str, Any], namespace: str,
              claims: Mapping[ClaimKey, ClaimSpec]) -> dict[str, tuple[int, list[Part]]]:
    """Resource -> (the pod's effective demand, the parts it is made of), per Kubernetes' rule (module docstring)."""
    by_key: dict[str, dict[str, list[Part]]] = {}

    def add(kind: str, key: str, part: Part) -> None:
        by_key.setdefault(key, {}).setdefault(kind, []).append(part)

    init = pod_spec.get("initContainers")
    running_sidecars: dict[str, int] = {}
    for i, container in enumerate(init if isinstance(init, list) else []):
        path = f"{pod_path}.initContainers[{i}]"
        name = container.get("name") if isinstance(container, Mapping) else None
        counts = _container_counts(container)
        restartable = isinstance(container, Mapping) and container.get("restartPolicy") == "Always"
        for key, count in counts.items():
            if restartable:
                add("sidecar", key, Part(path, f"init container {name!r} (sidecar)", count))
            else:
                add("init", key, Part(path, f"init container {name!r}", count))
                # An init container runs beside the sidecars started before it.
                by_key[key].setdefault("init-with", []).append(Part(path, "", count + running_sidecars.get(key, 0)))
        if restartable:
            for key, count in counts.items():
                running_sidecars[key] = running_sidecars.get(key, 0) + count
    app = pod_spec.get("containers")
    for i, container in enumerate(app if isinstance(app, list) else []):
        name = container.get("name") if isinstance(container, Mapping) else None
        for key, count in _container_counts(container).items():
            add("app", key, Part(f"{pod_path}.containers[{i}]", f"container {name!r}", count))
    overhead = pod_spec.get("overhead")
    for key, value in (overhead.items() if isinstance(overhead, Mapping) else ()):
        amount = _count(value)
        if amount is not None:
            add("overhead", str(key), Part(f"{pod_path}.overhead", "overhead", amount))
    for index, claim_name, names, spec in pod_claim_specs(pod_spec, namespace, claims):
        for device_class, count in claim_device_counts(spec).items():
            add("claim", device_class, Part(f"{pod_path}.resourceClaims[{index}]", f"claim {claim_name!r} ({names})", count))

    demand: dict[str, tuple[int, list[Part]]] = {}
    for key, kinds in by_key.items():
        running = _sum(kinds.get("app", [])) + _sum(kinds.get("sidecar", []))
        largest_init = max((part.count for part in kinds.get("init-with", [])), default=0)
        total = max(running, largest_init) + _sum(kinds.get("overhead", [])) + _sum(kinds.get("claim", []))
        parts = [*kinds.get("init", []), *kinds.get("sidecar", []), *kinds.get("app", []), *kinds.get("overhead", []),
                 *kinds.get("claim", [])]
        demand[key] = (total, parts)
    return demand
