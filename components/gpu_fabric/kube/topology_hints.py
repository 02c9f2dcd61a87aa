"""The kubelet's (v1.37.2) Topology Manager hints: how a resource's NUMA placements are listed and merged (pure).

A hint is a NUMA node mask and whether it is preferred. Hint providers (the device manager per resource,
the static CPU manager for ``cpu``) list every mask that could serve a request; the policy merges one hint
of every resource into the best common mask. Go sources are under ``k8s.io/kubernetes@v1.37.2/pkg/kubelet/cm``;
each rule below cites its file and function. :mod:`gpu_fabric.kube.topology_admission` feeds these from a
node's free devices and CPUs.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

POLICIES = ("none", "best-effort", "restricted", "single-numa-node")
# topologymanager/topology_manager.go defaultMaxAllowableNUMANodes: more NUMA nodes and the kubelet refuses to
# start with any policy but none (NewManager); policy_options.go refuses a smaller max-allowable-numa-nodes.
DEFAULT_MAX_ALLOWABLE_NUMA_NODES = 8


@dataclass(frozen=True)
class TopologyHint:
    """One NUMA placement: ``affinity`` is a bit mask over NUMA nodes (``None``: no preference)."""

    affinity: Optional[int]
    preferred: bool

    @property
    def nodes(self) -> Optional[tuple[int, ...]]:
        """The NUMA nodes of the mask, ascending (``None`` for a hint without affinity)."""
        return None if self.affinity is None else bits(self.affinity)


ResourceHints = Optional[Sequence[TopologyHint]]
"""A resource's hints: ``None`` means no preference, ``[]`` means no NUMA placement can serve it."""


def mask(nodes: Sequence[int]) -> int:
    """The bit mask of ``nodes`` (bitmask.go NewBitMask)."""
    value = 0
    for node in nodes:
        value |= 1 << node
    return value


def bits(value: int) -> tuple[int, ...]:
    """The set bits of ``value``, ascending (bitmask.go GetBits)."""
    return tuple(i for i in range(value.bit_length()) if value >> i & 1)


def _count(value: int) -> int:
    return bin(value).count("1")


def _narrower(first: int, second: int) -> bool:
    # bitmask.go IsNarrowerThan: fewer NUMA nodes, or as many and the lower mask value.
    if _count(first) == _count(second):
        return first < second
    return _count(first) < _count(second)


def masks_in_order(nodes: Sequence[int]) -> list[int]:
    """Every non-empty mask over ``nodes``: by size, then in combination order (bitmask.go IterateBitMasks)."""
    return [mask(combo) for size in range(1, len(nodes) + 1) for combo in itertools.combinations(nodes, size)]


def generate_hints(total: Sequence[int], available: Sequence[int], reusable: Sequence[int], request: int) -> list[TopologyHint]:
    """The hints of one request over per-NUMA-node counts (index = NUMA node).

    ``total`` counts every device (CPU) on each node, ``available`` the free ones, ``reusable`` those an init
    container of the same pod hands on. devicemanager/topology_hints.go generateDeviceTopologyHints and
    cpumanager/policy_static.go generateCPUTopologyHints follow the same steps.
    """
    # generateDeviceTopologyHints deviceNUMANodes: only NUMA nodes that host the resource are combined (the CPU
    # manager combines CPUDetails.NUMANodes(), the nodes that have CPUs: the same rule).
    nodes = [node for node, count in enumerate(total) if count > 0] or list(range(len(total)))
    min_affinity_size = len(nodes)
    hints = []
    for candidate in masks_in_order(nodes):
        chosen = bits(candidate)
        # minAffinitySize counts *all* devices (CPUs, reserved ones too): preferred means "as narrow as the
        # narrowest mask that could ever serve the request", not "as narrow as what is free now".
        if sum(total[n] for n in chosen) >= request and len(chosen) < min_affinity_size:
            min_affinity_size = len(chosen)
        # A mask that leaves out a NUMA node of a reusable device is no candidate, however many it holds.
        if any(count and node not in chosen for node, count in enumerate(reusable)):
            continue
        if sum(reusable) + sum(available[n] for n in chosen) >= request:
            hints.append(candidate)
    return [TopologyHint(h, _count(h) == min_affinity_size) for h in hints]


def filter_provider_hints(providers: Sequence[Optional[Mapping[str, ResourceHints]]]) -> list[list[TopologyHint]]:
    """One hint list per resource (topologymanager/policy.go filterProvidersHints)."""
    lists: list[list[TopologyHint]] = []
    for hints in providers:
        if not hints:  # a provider without hints has no preference at all
            lists.append([TopologyHint(None, True)])
            continue
        for resource in sorted(hints):  # Go walks a map; compare() is a total order, so the order cannot matter
            listed = hints[resource]
            if listed is None:
                lists.append([TopologyHint(None, True)])
            elif not listed:  # no NUMA placement can serve it: an unpreferred hint that vetoes alignment
                lists.append([TopologyHint(None, False)])
            else:
                lists.append(list(listed))
    return lists


def merge_permutation(default_affinity: int, permutation: Sequence[TopologyHint]) -> TopologyHint:
    """AND of the masks; preferred only if every hint is preferred and every mask is equal (policy.go mergePermutation)."""
    affinities = [hint.affinity for hint in permutation if hint.affinity is not None]
    preferred = all(hint.preferred for hint in permutation) and all(a == affinities[0] for a in affinities)
    merged = default_affinity
    for affinity in affinities:
        merged &= affinity
    return TopologyHint(merged, preferred)


def _narrowest(hints: Sequence[TopologyHint]) -> Optional[int]:
    # policy.go narrowestHint: hints without affinity do not count.
    best = None
    for hint in hints:
        if hint.affinity is not None and (best is None or _narrower(hint.affinity, best)):
            best = hint.affinity
    return best


def best_non_preferred_affinity_count(lists: Sequence[Sequence[TopologyHint]]) -> int:
    """The largest of each resource's narrowest mask size (policy.go maxOfMinAffinityCounts)."""
    counts = [_count(n) for n in map(_narrowest, lists) if n is not None]
    return max(counts, default=0)


def _merged(hint: TopologyHint) -> int:
    # A merged hint always has a mask (mergePermutation ANDs into the default affinity).
    return 0 if hint.affinity is None else hint.affinity


def _fitter(current: TopologyHint, candidate: TopologyHint) -> TopologyHint:
    # policy.go NewHintMerger compareNumaAffinityMasks (prefer-closest-numa-nodes is not modelled): equal masks
    # keep the current hint, else the narrower mask wins.
    if candidate.affinity == current.affinity or not _narrower(_merged(candidate), _merged(current)):
        return current
    return candidate


def compare(current: Optional[TopologyHint], candidate: TopologyHint, best_count: int) -> Optional[TopologyHint]:
    """The better of two merged hints (policy.go HintMerger.compare)."""
    if _count(_merged(candidate)) == 0:  # an empty AND serves nothing
        return current
    if current is None:
        return candidate
    if current.preferred != candidate.preferred:  # a preferred hint always beats an unpreferred one
        return current if current.preferred else candidate
    if current.preferred:
        return _fitter(current, candidate)
    # Both unpreferred: get as close to best_count as possible without exceeding it (cases 1 to 3cc).
    now, new = _count(_merged(current)), _count(_merged(candidate))
    if now > best_count:
        return _fitter(current, candidate)
    if now == best_count:
        return _fitter(current, candidate) if new == best_count else current
    if new > best_count:
        return current
    if new == best_count or new > now:
        return candidate
    return current if new < now else _fitter(current, candidate)


def merge(lists: Sequence[Sequence[TopologyHint]], numa_nodes: int) -> TopologyHint:
    """The best merged hint over every permutation of one hint per resource (policy.go HintMerger.Merge)."""
    default_affinity = mask(range(numa_nodes))
    best_count = best_non_preferred_affinity_count(lists)
    best = None
    for permutation in itertools.product(*lists):
        best = compare(best, merge_permutation(default_affinity, permutation), best_count)
    return best if best is not None else TopologyHint(default_affinity, False)


def single_numa_hints(lists: Sequence[Sequence[TopologyHint]]) -> list[list[TopologyHint]]:
    """Only preferred hints without affinity or on one NUMA node (policy_single_numa_node.go filterSingleNumaHints)."""
    return [[h for h in hints if h.preferred and (h.affinity is None or _count(h.affinity) == 1)] for hints in lists]


def policy_merge(policy: str, providers: Sequence[Optional[Mapping[str, ResourceHints]]],
                 numa_nodes: int) -> tuple[TopologyHint, bool]:
    """``(best hint, admit)`` of a policy's Merge (policy_{none,best_effort,restricted,single_numa_node}.go)."""
    if policy == "none":  # policy_none.go: no hint, always admit
        return TopologyHint(None, True), True
    lists = filter_provider_hints(providers)
    if policy == "single-numa-node":
        best = merge(single_numa_hints(lists), numa_nodes)
        if best.affinity == mask(range(numa_nodes)):  # "any NUMA node" is stored as no affinity
            best = TopologyHint(None, best.preferred)
        return best, best.preferred
    if policy not in POLICIES:
        raise ValueError(f"unknown Topology Manager policy {policy!r} (known: {', '.join(POLICIES)})")
    best = merge(lists, numa_nodes)
    # policy_restricted.go canAdmitPodResult: only a preferred hint; policy_best_effort.go: always.
    return best, best.preferred or policy == "best-effort"
