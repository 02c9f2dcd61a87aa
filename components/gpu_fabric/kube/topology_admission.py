"""Predict the kubelet's (v1.37.2) Topology Manager admission of pods on one node, and what they take (pure).

:class:`NodeState` holds a node's free devices (per resource, per NUMA node) and exclusive CPUs;
:meth:`NodeState.admit` runs a core/v1 Pod manifest through the same steps as the kubelet: hints from the
device manager and the static CPU manager (:mod:`gpu_fabric.kube.topology_hints`), the policy's merge and
verdict per container or per pod (the scope), then the allocation that an admitted pod holds. A refused pod
takes nothing, as in the kubelet (its partial allocation is garbage-collected by the next allocation:
devicemanager/manager.go UpdateAllocatedDevices, cpumanager removeStaleState). Go sources are under
``k8s.io/kubernetes@v1.37.2/pkg/kubelet/cm``; limits of the model are in docs/topology-admission.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from gpu_fabric.config.quantity import parse_quantity
from gpu_fabric.kube.topology_hints import (
    DEFAULT_MAX_ALLOWABLE_NUMA_NODES,
    POLICIES,
    ResourceHints,
    TopologyHint,
    bits,
    generate_hints,
    policy_merge,
)

TOPOLOGY_AFFINITY_ERROR = "TopologyAffinityError"  # topologymanager/topology_manager.go ErrorTopologyAffinity
UNEXPECTED_ADMISSION_ERROR = "UnexpectedAdmissionError"  # admission/errors.go: an allocation that failed


@dataclass(frozen=True)
class NodeTopology:
    """What one node offers the Topology Manager: devices of each resource per NUMA node, CPUs per NUMA node."""

    devices: Mapping[str, tuple[int, ...]]
    """Resource name -> device count on NUMA node 0, 1, ..."""
    cpus: tuple[tuple[int, ...], ...]
    """CPU ids on NUMA node 0, 1, ... (its length is the number of NUMA nodes)."""
    reserved_cpus: frozenset[int] = frozenset()
    policy: str = "restricted"
    """none | best-effort | restricted | single-numa-node"""
    scope: str = "container"
    """container | pod"""
    cpu_manager_policy: str = "none"
    """none | static"""
    max_allowable_numa_nodes: int = DEFAULT_MAX_ALLOWABLE_NUMA_NODES

    def __post_init__(self) -> None:
        # Lists and sets read as the tuples and frozenset the fields hold (a dataclass does not convert).
        object.__setattr__(self, "cpus", tuple(tuple(cpus) for cpus in self.cpus))
        object.__setattr__(self, "reserved_cpus", frozenset(self.reserved_cpus))
        object.__setattr__(self, "devices", {r: tuple(counts) for r, counts in self.devices.items()})
        numa = len(self.cpus)
        for resource, counts in self.devices.items():
            if len(counts) > numa or min(counts, default=0) < 0:
                raise ValueError(f"{resource}: {counts} needs one count >= 0 per NUMA node (the node has {numa})")
        if self.policy not in POLICIES or self.scope not in ("container", "pod") or \
                self.cpu_manager_policy not in ("none", "static"):
            raise ValueError(f"unknown policy/scope/cpuManagerPolicy {self.policy}/{self.scope}/{self.cpu_manager_policy}")
        all_cpus = {cpu for cpus in self.cpus for cpu in cpus}
        if not self.reserved_cpus <= all_cpus:
            raise ValueError(f"reserved CPUs {sorted(self.reserved_cpus - all_cpus)} are not CPUs of the node")
        # cpumanager/cpu_manager.go NewManager: "the static policy requires systemreserved.cpu + kubereserved.cpu
        # to be greater than zero" (the kubelet exits).
        if self.cpu_manager_policy == "static" and not self.reserved_cpus:
            raise ValueError("cpuManagerPolicy static needs reserved CPUs (reservedSystemCPUs)")
        # topologymanager/policy_options.go NewPolicyOptions, topology_manager.go NewManager: the kubelet exits.
        if self.max_allowable_numa_nodes < DEFAULT_MAX_ALLOWABLE_NUMA_NODES:
            raise ValueError(f"max-allowable-numa-nodes must be at least {DEFAULT_MAX_ALLOWABLE_NUMA_NODES}")
        if self.policy != "none" and numa > self.max_allowable_numa_nodes:
            raise ValueError(f"the kubelet does not start: Topology Manager unsupported on machines with more than "
                             f"{self.max_allowable_numa_nodes} NUMA Nodes ({numa})")

    def device_counts(self, resource: str) -> tuple[int, ...]:
        """Devices of ``resource`` per NUMA node, one entry per node."""
        counts = tuple(self.devices[resource])
        return counts + (0,) * (len(self.cpus) - len(counts))

    def cpu_node(self, cpu: int) -> int:
        """The NUMA node of ``cpu``."""
        return next(node for node, cpus in enumerate(self.cpus) if cpu in cpus)


@dataclass(frozen=True)
class Admission:
    """The kubelet's verdict on one pod, and where an admitted pod's devices and exclusive CPUs came from."""

    admitted: bool
    reason: Optional[str]
    """``TopologyAffinityError`` when the policy refuses, ``UnexpectedAdmissionError`` when allocation fails."""
    numa_nodes: Mapping[str, Mapping[str, tuple[int, ...]]]
    """Container name -> resource -> NUMA nodes its devices/CPUs came from (admitted pods)."""
    detail: str
    """One line a user can act on: which container/resources could not share a NUMA node and why."""
    affinity: Mapping[str, Optional[tuple[int, ...]]] = field(default_factory=dict)
    """Container name -> NUMA nodes of the Topology Manager's best hint (``None``: no affinity)."""


# -- reading the pod ------------------------------------------------------------------------------------


def _value(quantity: Any) -> int:
    # resource.Quantity.Value(): rounded up to a whole number.
    return math.ceil(parse_quantity(quantity))


def _resources(container: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(requests, limits)`` after the API server's defaulting (core/v1/defaults.go SetDefaults_Pod)."""
    resources = container.get("resources") or {}
    limits = dict(resources.get("limits") or {})
    return {**limits, **(resources.get("requests") or {})}, limits


def _containers(pod: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any], str]]:
    """``(name, container, kind)``, init containers first; kind is init, sidecar (restartable init) or app."""
    spec = pod.get("spec") or {}
    if spec.get("resources"):
        raise ValueError("pod-level resources (spec.resources) are not modelled")
    found = [(c["name"], c, "sidecar" if c.get("restartPolicy") == "Always" else "init")
             for c in spec.get("initContainers") or []]
    return found + [(c["name"], c, "app") for c in spec.get("containers") or []]


def _container_qos(container: Mapping[str, Any]) -> str:
    # qos.go requirementsQOS / resourceQOS over cpu and memory.
    requests, limits = _resources(container)
    if not requests and not limits:
        return "BestEffort"
    shapes = set()
    for name in ("cpu", "memory"):
        request, limit = (parse_quantity(requests.get(name, 0)), parse_quantity(limits.get(name, 0)))
        shapes.add("Burstable" if request != limit else "BestEffort" if request == 0 else "Guaranteed")
    return shapes.pop() if len(shapes) == 1 else "Burstable"


def pod_qos(pod: Mapping[str, Any]) -> str:
    """The pod's QoS class: ``status.qosClass`` if set, else computed (apis/core/v1/helper/qos/qos.go GetPodQOS)."""
    if (pod.get("status") or {}).get("qosClass"):
        return pod["status"]["qosClass"]
    classes = {_container_qos(c) for _, c, _ in _containers(pod)} or {"BestEffort"}
    return classes.pop() if len(classes) == 1 else "Burstable"


def guaranteed_cpus(pod: Mapping[str, Any], container: Mapping[str, Any]) -> int:
    """Exclusive CPUs of a container: integer CPU requests of Guaranteed pods only (policy_static.go guaranteedCPUs)."""
    if pod_qos(pod) != "Guaranteed":
        return 0
    requested = parse_quantity(_resources(container)[0].get("cpu", 0))
    # isIntegralCPUAmount: Value()*1000 == MilliValue(), both rounded up.
    whole = math.ceil(requested)
    return whole if whole * 1000 == math.ceil(requested * 1000) else 0


def device_requests(container: Mapping[str, Any], topology: NodeTopology) -> dict[str, int]:
    """Devices a container asks of the node's device plugins (devicemanager/topology_hints.go getContainerDeviceRequest).

    Read from ``limits`` (extended resources cannot be overcommitted, so the kubelet reads limits only); a
    resource given only in ``requests`` is read from there (the API server refuses such a pod; this reads intent).
    """
    requests, limits = _resources(container)
    return {name: _value(limits.get(name, requests.get(name))) for name in {**requests, **limits}
            if name in topology.devices}  # isDevicePluginResource: unknown resources are not the device manager's


def pod_device_requests(pod: Mapping[str, Any], topology: NodeTopology) -> dict[str, int]:
    """The pod's devices: max of init containers vs sum of app containers and sidecars (component-helpers
    resource/helpers.go PodLimits / aggregateContainerResourcesByFn)."""
    total: dict[str, int] = {}
    sidecars: dict[str, int] = {}
    init_max: dict[str, int] = {}
    for _, container, kind in _containers(pod):
        asked = device_requests(container, topology)
        if kind == "app":
            _add(total, asked)
            continue
        if kind == "sidecar":
            _add(total, asked)
            _add(sidecars, asked)
            use = dict(sidecars)
        else:
            use = _add(dict(sidecars), asked)
        for name, count in use.items():
            init_max[name] = max(init_max.get(name, 0), count)
    return {name: max(total.get(name, 0), init_max.get(name, 0)) for name in {**total, **init_max}}


def _add(into: dict[str, int], more: Mapping[str, int]) -> dict[str, int]:
    for name, count in more.items():
        into[name] = into.get(name, 0) + count
    return into


def pod_guaranteed_cpus(pod: Mapping[str, Any]) -> int:
    """The pod's exclusive CPUs (policy_static.go podGuaranteedCPUs): max of init vs app plus sidecar CPUs."""
    by_init = by_sidecars = by_apps = 0
    for _, container, kind in _containers(pod):
        if "cpu" not in _resources(container)[0]:
            continue
        cpus = guaranteed_cpus(pod, container)
        if kind == "app":
            by_apps += cpus
        elif kind == "sidecar":
            by_sidecars += cpus
        else:
            by_init = max(by_init, by_sidecars + cpus)
    return max(by_init, by_apps + by_sidecars)


# -- allocation --------------------------------------------------------------------------------------------


class _AllocationError(Exception):
    """A provider's Allocate failed: the kubelet refuses the pod with UnexpectedAdmissionError."""


def _node_order(hint: TopologyHint, counts: list[int]) -> list[int]:
    # devicemanager/manager.go filterByAffinity: NUMA nodes in the hint first, then the others, each by ascending
    # number of available devices (equal counts by NUMA id: Go's sort.Slice leaves that open). Within a NUMA
    # node the kubelet picks devices in Go set order, so only per-node counts are modelled.
    inside = set(hint.nodes or ())
    return sorted((n for n, c in enumerate(counts) if c), key=lambda n: (n not in inside, counts[n], n))


def _take(source: list[int], order: list[int], needed: int, into: list[int]) -> int:
    for node in order:
        got = min(needed, source[node])
        source[node] -= got
        into[node] += got
        needed -= got
    return needed


def _take_cpus(topology: NodeTopology, available: set[int], count: int) -> set[int]:
    """cpu_assignment.go takeByTopologyNUMAPacked on a topology of one socket per NUMA node, one CPU per core."""
    if count > len(available):
        raise _AllocationError(f"not enough cpus available to satisfy request: requested={count}, "
                               f"available={len(available)}")
    taken: set[int] = set()

    def order() -> list[int]:  # sortAvailableNUMANodes: fewest available CPUs first, then by id
        left = available - taken
        return sorted((n for n, cpus in enumerate(topology.cpus) if left & set(cpus)),
                      key=lambda n: (len(left & set(topology.cpus[n])), n))

    for node in order():  # takeFullNUMANodes (takeFullSockets adds nothing: a socket is a NUMA node here)
        whole = set(topology.cpus[node])
        if whole <= available and count - len(taken) >= len(whole):
            taken |= whole
    for node in order():  # takeFullCores: single-CPU cores in sorted NUMA order, ascending id
        for cpu in sorted((available - taken) & set(topology.cpus[node])):
            if len(taken) < count:
                taken.add(cpu)
    return taken


class NodeState:
    """Free devices and CPUs of one node; admit() records what an admitted pod takes (as the kubelet does, so a sequence of pods is predicted in order)."""

    def __init__(self, topology: NodeTopology):
        self.topology = topology
        self.free_devices: dict[str, list[int]] = {r: list(topology.device_counts(r)) for r in topology.devices}
        all_cpus = {cpu for cpus in topology.cpus for cpu in cpus}
        self.free_cpus: set[int] = all_cpus  # the static policy's default cpuset (reserved CPUs stay in it)
        self.pods: dict[str, tuple[dict[str, list[int]], set[int]]] = {}

    def admit(self, pod: Mapping[str, Any]) -> Admission:
        """The kubelet's verdict on ``pod``; an admitted pod's devices and exclusive CPUs leave the free sets."""
        attempt = _Attempt(self.topology, {r: list(c) for r, c in self.free_devices.items()}, set(self.free_cpus))
        admission = attempt.run(pod)
        if admission.admitted:
            self.free_devices, self.free_cpus = attempt.free, attempt.free_cpus
            self.pods[_pod_key(pod)] = (attempt.held, attempt.held_cpus)
        return admission

    def release(self, name: str) -> None:
        """Free what the admitted pod ``namespace/name`` holds (the pod was deleted)."""
        held, cpus = self.pods.pop(name)
        for resource, counts in held.items():
            self.free_devices[resource] = [a + b for a, b in zip(self.free_devices[resource], counts)]
        self.free_cpus |= cpus


def _pod_key(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace', 'default')}/{meta.get('name', '')}"


class _Attempt:
    """One pod's admission on copies of the node's free sets (kept only if the pod is admitted)."""

    def __init__(self, topology: NodeTopology, free: dict[str, list[int]], free_cpus: set[int]):
        self.topology, self.free, self.free_cpus = topology, free, free_cpus
        numa = len(topology.cpus)
        self.reuse: dict[str, list[int]] = {r: [0] * numa for r in free}  # manager.go devicesToReuse
        self.reuse_cpus: set[int] = set()  # policy_static.go cpusToReuse
        self.held: dict[str, list[int]] = {r: [0] * numa for r in free}
        self.held_cpus: set[int] = set()
        self.numa_nodes: dict[str, dict[str, tuple[int, ...]]] = {}
        self.affinity: dict[str, Optional[tuple[int, ...]]] = {}
        self.allocating = ""

    # hint providers, in the kubelet's order: device manager, CPU manager (the memory manager is not modelled)

    def device_hints(self, requests: Mapping[str, int], with_reuse: bool) -> dict[str, ResourceHints]:
        """devicemanager/topology_hints.go GetTopologyHints / GetPodTopologyHints."""
        hints: dict[str, ResourceHints] = {}
        for resource, requested in requests.items():
            total = self.topology.device_counts(resource)
            if not any(total):  # deviceHasTopologyAlignment: no device with a NUMA node, no preference
                hints[resource] = None
                continue
            reusable = self.reuse[resource] if with_reuse else [0] * len(total)
            if sum(self.free[resource]) + sum(reusable) < requested:
                hints[resource] = []
                continue
            hints[resource] = generate_hints(total, self.free[resource], reusable, requested)
        return hints

    def cpu_hints(self, requested: int) -> Optional[dict[str, ResourceHints]]:
        """cpumanager/policy_static.go getTopologyHintsForAdd / getPodTopologyHintsForAdd (``None``: no preference)."""
        if self.topology.cpu_manager_policy != "static" or requested == 0:
            return None
        per_node = [set(cpus) for cpus in self.topology.cpus]
        available = self.free_cpus - self.topology.reserved_cpus  # GetAvailableCPUs
        return {"cpu": generate_hints([len(c) for c in per_node], [len(c & available) for c in per_node],
                                      [len(c & self.reuse_cpus) for c in per_node], requested)}

    # scopes

    def run(self, pod: Mapping[str, Any]) -> Admission:
        policy = self.topology.policy
        containers = _containers(pod)
        try:
            if policy == "none":  # scope_none.go admitPolicyNone: allocate without any hint
                for name, container, kind in containers:
                    self.allocate(pod, name, container, kind, TopologyHint(None, True))
            elif self.topology.scope == "pod":  # scope_pod.go admitUsingContainerResources: one hint for all
                requests = pod_device_requests(pod, self.topology)
                cpus = pod_guaranteed_cpus(pod)
                providers = [self.device_hints(requests, False), self.cpu_hints(cpus)]
                best, admit = policy_merge(policy, providers, len(self.topology.cpus))
                if not admit:
                    return self.refusal("pod (scope pod: all containers together)", requests, cpus, providers)
                for name, container, kind in containers:
                    self.allocate(pod, name, container, kind, best)
            else:  # scope_container.go Admit: each container in turn, init containers first
                for name, container, kind in containers:
                    requests = device_requests(container, self.topology)
                    cpus = guaranteed_cpus(pod, container)
                    providers = [self.device_hints(requests, True), self.cpu_hints(cpus)]
                    best, admit = policy_merge(policy, providers, len(self.topology.cpus))
                    if not admit:
                        return self.refusal(f"container {name}", requests, cpus, providers)
                    self.allocate(pod, name, container, kind, best)
        except _AllocationError as error:
            return Admission(False, UNEXPECTED_ADMISSION_ERROR, {},
                             f"container {self.allocating}: Allocate failed due to {error}, which is unexpected")
        return Admission(True, None, self.numa_nodes, _admitted_detail(self.numa_nodes), self.affinity)

    # allocation

    def allocate(self, pod: Mapping[str, Any], name: str, container: Mapping[str, Any], kind: str,
                 hint: TopologyHint) -> None:
        """The providers' Allocate for one container under ``hint`` (devices first, then CPUs)."""
        self.affinity[name] = hint.nodes
        self.allocating = name
        placed = self.allocate_devices(device_requests(container, self.topology), kind, hint)
        cpus = self.allocate_cpus(guaranteed_cpus(pod, container), kind, hint)
        if cpus:
            placed["cpu"] = tuple(sorted({self.topology.cpu_node(c) for c in cpus}))
        self.numa_nodes[name] = placed

    def allocate_devices(self, requests: Mapping[str, int], kind: str, hint: TopologyHint) -> dict[str, tuple[int, ...]]:
        """devicemanager/manager.go Allocate and devicesToAllocate: reused devices, then aligned, then the rest."""
        placed = {}
        for resource, needed in requests.items():
            if needed == 0:
                continue
            if not any(self.topology.device_counts(resource)):
                raise _AllocationError(f"no healthy devices present; cannot allocate unhealthy devices {resource}")
            mine, reused = [0] * len(self.topology.cpus), [0] * len(self.topology.cpus)
            needed = _take(self.reuse[resource], _node_order(hint, self.reuse[resource]), needed, reused)
            free = self.free[resource]
            if needed > sum(free):
                raise _AllocationError(f"requested number of devices unavailable for {resource}. "
                                       f"Requested: {needed}, Available: {sum(free)}")
            _take(free, _node_order(hint, free), needed, mine)
            for node, count in enumerate(mine):
                self.held[resource][node] += count
            if kind == "init":  # addContainerAllocatedResources: later containers may reuse them
                self.reuse[resource] = [a + b + c for a, b, c in zip(self.reuse[resource], mine, reused)]
            placed[resource] = tuple(n for n, count in enumerate(mine) if count or reused[n])
        return placed

    def allocate_cpus(self, count: int, kind: str, hint: TopologyHint) -> set[int]:
        """cpumanager/policy_static.go allocateCPUs: CPUs of the hint's NUMA nodes first, then any."""
        if self.topology.cpu_manager_policy != "static" or count == 0:
            return set()
        allocatable = (self.free_cpus - self.topology.reserved_cpus) | self.reuse_cpus
        taken: set[int] = set()
        if hint.affinity is not None:
            aligned = {c for c in allocatable if self.topology.cpu_node(c) in (hint.nodes or ())}
            taken = _take_cpus(self.topology, aligned, min(count, len(aligned)))
        taken |= _take_cpus(self.topology, allocatable - taken, count - len(taken))
        self.free_cpus -= taken
        self.held_cpus |= taken
        # updateCPUsToReuse: an init container hands its CPUs on, anything else uses them up.
        self.reuse_cpus = self.reuse_cpus | taken if kind == "init" else self.reuse_cpus - taken
        return taken

    # explanations

    def refusal(self, who: str, requests: Mapping[str, int], cpus: int, providers: list) -> Admission:
        """The refusal, naming each resource's possible NUMA placements."""
        available = self.free_cpus - self.topology.reserved_cpus
        free = {**self.free, "cpu": [len(set(c) & available) for c in self.topology.cpus]}
        asked = {**requests, "cpu": cpus}
        hints = {**providers[0], **(providers[1] or {})}
        parts = [_explain(r, asked[r], h, free[r], self.topology.policy) for r, h in hints.items() if h is not None]
        detail = (f"{who}: its resources cannot share a NUMA node under the {self.topology.policy} policy: "
                  + "; ".join(parts))
        return Admission(False, TOPOLOGY_AFFINITY_ERROR, {}, detail)


def _nodes_text(nodes: tuple[int, ...]) -> str:
    return "+".join(str(n) for n in nodes)


def _explain(resource: str, requested: int, hints: list[TopologyHint], free: list[int], policy: str) -> str:
    what = f"{resource} x{requested}"
    per_node = ", ".join(f"NUMA {n}: {c}" for n, c in enumerate(free))
    if not hints:
        return f"{what}: only {sum(free)} free ({per_node})"
    preferred = [h.nodes or () for h in hints if h.preferred]
    if not preferred:  # the free devices are scattered: only masks wider than its count needs can serve it
        wider = " or ".join(_nodes_text(h.nodes or ()) for h in hints)
        return f"{what}: too few free on as few NUMA nodes as it needs ({per_node}); only NUMA {wider} together"
    if policy == "single-numa-node" and all(len(p) > 1 for p in preferred):
        return f"{what} needs NUMA {' or '.join(_nodes_text(p) for p in preferred)} (single-numa-node allows one node)"
    return f"{what} fits NUMA {' or '.join(_nodes_text(p) for p in preferred)}"


def _admitted_detail(numa_nodes: Mapping[str, Mapping[str, tuple[int, ...]]]) -> str:
    parts = []
    for name, placed in numa_nodes.items():
        where = ", ".join(f"{r} NUMA {_nodes_text(n)}" for r, n in placed.items())
        parts.append(f"{name}: {where or 'no NUMA affinity (no devices or exclusive CPUs)'}")
    return "admitted: " + "; ".join(parts)
