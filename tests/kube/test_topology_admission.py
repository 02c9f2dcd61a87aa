"""The Topology Manager model predicts what a real kubelet v1.37.2 decided, and follows policy.go's merge rules.

The scenario tests are the cases gpu-fabric's real-kubelet test runs (measured: 2 NUMA nodes, 8 GPUs = 4 per
node, 16 EFA = 8 per node, CPUs ((0,), (1,)); research/feasibility-scheduler-kubelet/policy_matrix.txt); the
others pin single rules with small hand-checked inputs.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpu_fabric.kube.topology_admission import (
    TOPOLOGY_AFFINITY_ERROR,
    UNEXPECTED_ADMISSION_ERROR,
    NodeState,
    NodeTopology,
    pod_device_requests,
    pod_guaranteed_cpus,
    pod_qos,
)
from gpu_fabric.kube.topology_hints import (
    TopologyHint,
    best_non_preferred_affinity_count,
    compare,
    filter_provider_hints,
    generate_hints,
    merge,
    merge_permutation,
    policy_merge,
)

GPU, EFA = "nvidia.com/gpu", "vpc.amazonaws.com/efa"
P5_LIKE = {GPU: (4, 4), EFA: (8, 8)}


def node(policy="restricted", scope="container", cpu_policy="none", reserved=frozenset(), **devices) -> NodeState:
    return NodeState(NodeTopology(devices or P5_LIKE, ((0,), (1,)), frozenset(reserved), policy, scope, cpu_policy))


def container(name, gpu=0, efa=0, cpu=None, **extra):
    limits = {k: str(v) for k, v in ((GPU, gpu), (EFA, efa)) if v}
    if cpu is not None:
        limits.update({"cpu": cpu, "memory": "100Mi"})
    return {"name": name, "image": "pause", "resources": {"limits": limits}, **extra}


def pod(name, *containers, init=()):
    spec = {"containers": list(containers)}
    if init:
        spec["initContainers"] = list(init)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "team-a"}, "spec": spec}


def aligned(cpu=None):
    return pod("tm-aligned", container("engine", 4, 8, cpu))


def misaligned(cpu=None):
    return pod("tm-misaligned", container("engine", 1, 12, cpu))


def second(cpu=None):
    return pod("tm-second-numa", container("engine", 4, 8, cpu))


def two_containers(cpu=None):
    return pod("tm-two-ctr", container("engine", 4, 8, cpu), container("engine-2", 4, 8, cpu))


# -- what the real kubelet decided ------------------------------------------------------------------------


@pytest.mark.parametrize("policy", ["restricted", "single-numa-node"])
def test_container_scope_aligns_refuses_the_misaligned_pod_and_uses_the_second_numa_node(policy):
    state = node(policy)
    first = state.admit(aligned())
    assert first.admitted and first.reason is None
    assert first.numa_nodes == {"engine": {GPU: (0,), EFA: (0,)}}
    refused = state.admit(misaligned())
    assert (refused.admitted, refused.reason) == (False, TOPOLOGY_AFFINITY_ERROR)
    assert "container engine" in refused.detail and f"{EFA} x12: only 8 free" in refused.detail
    assert state.admit(second()).numa_nodes == {"engine": {GPU: (1,), EFA: (1,)}}
    both = node(policy).admit(two_containers())
    assert both.admitted
    assert both.numa_nodes == {"engine": {GPU: (0,), EFA: (0,)}, "engine-2": {GPU: (1,), EFA: (1,)}}


def test_single_numa_node_pod_scope_refuses_a_pod_that_needs_both_numa_nodes():
    state = node("single-numa-node", "pod")
    assert state.admit(aligned()).numa_nodes == {"engine": {GPU: (0,), EFA: (0,)}}
    assert state.admit(misaligned()).reason == TOPOLOGY_AFFINITY_ERROR
    refused = node("single-numa-node", "pod").admit(two_containers())
    assert (refused.admitted, refused.reason) == (False, TOPOLOGY_AFFINITY_ERROR)
    assert f"{GPU} x8 needs NUMA 0+1 (single-numa-node allows one node)" in refused.detail


def test_best_effort_admits_the_misaligned_pod_on_a_free_node():
    admitted = node("best-effort").admit(misaligned())
    assert admitted.admitted and admitted.affinity == {"engine": (0, 1)}
    assert admitted.numa_nodes["engine"][EFA] == (0, 1)


def test_best_effort_admits_but_allocation_fails_when_devices_ran_out():
    # Measured: UnexpectedAdmissionError "requested number of devices unavailable ... Requested: 12, Available: 8".
    state = node("best-effort")
    state.admit(aligned())
    refused = state.admit(misaligned())
    assert refused.reason == UNEXPECTED_ADMISSION_ERROR
    assert refused.detail.startswith("container engine: Allocate failed due to requested number of devices")
    assert f"unavailable for {EFA}. Requested: 12, Available: 8" in refused.detail
    assert state.free_devices[GPU] == [0, 4]  # the refused pod's GPU is given back


def test_static_cpus_follow_the_only_exclusive_cpu_and_refuse_once_it_is_taken():
    state = node("single-numa-node", cpu_policy="static", reserved={0})
    first = state.admit(aligned("1"))
    assert first.numa_nodes == {"engine": {GPU: (1,), EFA: (1,), "cpu": (1,)}}
    assert state.admit(misaligned("1")).reason == TOPOLOGY_AFFINITY_ERROR
    no_cpu = state.admit(second("1"))
    assert no_cpu.reason == TOPOLOGY_AFFINITY_ERROR and "cpu x1: only 0 free" in no_cpu.detail
    both = node("single-numa-node", cpu_policy="static", reserved={0}).admit(two_containers("1"))
    assert both.reason == TOPOLOGY_AFFINITY_ERROR and both.detail.startswith("container engine-2")


# -- what follows from the Go code ------------------------------------------------------------------------


def test_a_pod_without_device_or_cpu_requests_is_admitted_without_affinity():
    # Every hint is "no preference": the merge is the whole machine, which single-numa-node stores as no affinity.
    for state, affinity in ((node("single-numa-node"), None), (node("restricted", "pod", "static", {0}), (0, 1))):
        admitted = state.admit(pod("plain", {"name": "app", "resources": {"requests": {"cpu": "500m"}}}))
        assert admitted.admitted and admitted.numa_nodes == {"app": {}}
        assert admitted.affinity == {"app": affinity}


def test_restricted_pod_scope_admits_two_containers_across_both_numa_nodes():
    # Pod scope asks 8 GPU + 16 EFA at once: only NUMA 0+1 holds them, and that mask is the narrowest: preferred.
    admitted = node("restricted", "pod").admit(two_containers())
    assert admitted.admitted and admitted.affinity == {"engine": (0, 1), "engine-2": (0, 1)}


def test_cpu_hints_come_only_from_guaranteed_pods_with_integer_cpus():
    burstable = pod("b", {"name": "a", "resources": {"requests": {"cpu": "1"}, "limits": {GPU: "1"}}})
    fractional = pod("f", container("a", 1, 0, "1500m"))
    assert pod_qos(burstable) == "Burstable" and pod_guaranteed_cpus(burstable) == 0
    assert pod_qos(fractional) == "Guaranteed" and pod_guaranteed_cpus(fractional) == 0
    state = node("single-numa-node", cpu_policy="static", reserved={0})
    assert state.admit(fractional).numa_nodes == {"a": {GPU: (0,)}}  # no CPU hint: shared pool, NUMA 0 free
    assert state.free_cpus == {0, 1}


def test_exclusive_cpus_take_whole_free_numa_nodes_first_then_single_cpus():
    topology = NodeTopology({}, ((0, 1, 2, 3), (4, 5, 6, 7)), frozenset({0}), "best-effort", cpu_manager_policy="static")
    state = NodeState(topology)
    # 5 CPUs: no single node holds them, so the hint is NUMA 0+1; NUMA 1 is free and taken whole, then CPU 1.
    assert state.admit(pod("five", container("a", cpu="5"))).numa_nodes == {"a": {"cpu": (0, 1)}}
    assert state.free_cpus == {0, 2, 3}
    # 4 CPUs fit one node by count, so one-node masks are preferred; NUMA 0 has 3 free (CPU 0 reserved): NUMA 1.
    restricted = NodeState(NodeTopology({}, topology.cpus, frozenset({0}), cpu_manager_policy="static"))
    assert restricted.admit(pod("four", container("a", cpu="4"))).numa_nodes == {"a": {"cpu": (1,)}}
    assert restricted.admit(pod("two", container("a", cpu="2"))).numa_nodes == {"a": {"cpu": (0,)}}
    assert restricted.free_cpus == {0, 3}


def test_app_containers_reuse_the_devices_of_init_containers():
    init = container("fetch", 4, 0)
    state = node("restricted")
    first = state.admit(pod("p", container("engine", 4, 0), init=[init]))
    assert first.numa_nodes == {"fetch": {GPU: (0,)}, "engine": {GPU: (0,)}}
    assert state.free_devices[GPU] == [0, 4]  # the pod holds 4 GPUs, not 8
    assert state.admit(pod("q", container("engine", 4, 0), init=[init])).numa_nodes["engine"] == {GPU: (1,)}


def test_pod_requests_take_the_larger_of_init_containers_and_app_containers_plus_sidecars():
    sidecar = container("proxy", 0, 2, restartPolicy="Always")
    manifest = pod("p", container("a", 1, 4), container("b", 1, 4), init=[container("i", 3, 1), sidecar])
    assert pod_device_requests(manifest, NodeTopology(P5_LIKE, ((0,), (1,)))) == {GPU: 3, EFA: 10}


def test_scattered_free_devices_are_refused_under_restricted_and_the_detail_says_so():
    state = node("restricted")
    assert state.admit(pod("a", container("a", 3))).numa_nodes == {"a": {GPU: (0,)}}
    assert state.admit(pod("b", container("b", 3))).numa_nodes == {"b": {GPU: (1,)}}
    refused = state.admit(pod("c", container("c", 2)))  # one GPU free on each node: only NUMA 0+1, not preferred
    assert refused.reason == TOPOLOGY_AFFINITY_ERROR
    assert f"{GPU} x2: too few free on as few NUMA nodes as it needs (NUMA 0: 1, NUMA 1: 1)" in refused.detail
    assert node("best-effort").admit(pod("c", container("c", 5))).numa_nodes == {"c": {GPU: (0, 1)}}


def test_release_gives_a_deleted_pods_devices_back():
    state = node("restricted")
    state.admit(aligned())
    state.admit(second())
    assert state.admit(aligned()).reason == TOPOLOGY_AFFINITY_ERROR
    state.release("team-a/tm-aligned")
    assert state.admit(aligned()).numa_nodes == {"engine": {GPU: (0,), EFA: (0,)}}


def test_more_numa_nodes_than_max_allowable_stops_the_kubelet_except_under_policy_none():
    cpus = tuple((n,) for n in range(9))
    with pytest.raises(ValueError, match="more than 8 NUMA Nodes"):
        NodeTopology({}, cpus, policy="restricted")
    assert NodeTopology({}, cpus, policy="none").cpus == cpus
    assert NodeTopology({}, cpus, max_allowable_numa_nodes=9).max_allowable_numa_nodes == 9


def test_a_static_cpu_manager_needs_reserved_cpus_of_the_node():
    with pytest.raises(ValueError, match="needs reserved CPUs"):
        NodeTopology(P5_LIKE, ((0,), (1,)), cpu_manager_policy="static")
    with pytest.raises(ValueError, match=r"reserved CPUs \[7\]"):
        NodeTopology(P5_LIKE, ((0,), (1,)), frozenset({7}), cpu_manager_policy="static")


def test_pod_level_resources_are_refused_rather_than_guessed():
    manifest = pod("p", container("a", 1))
    manifest["spec"]["resources"] = {"limits": {"cpu": "2"}}
    with pytest.raises(ValueError, match="pod-level resources"):
        node().admit(manifest)


# -- hint generation and merging, hand-checked ------------------------------------------------------------


def h(nodes, preferred):
    return TopologyHint(None if nodes is None else sum(1 << n for n in nodes), preferred)


def test_preferred_hints_are_as_narrow_as_the_total_devices_allow_not_the_free_ones():
    # 3 devices requested; NUMA 0 holds 4 in all but only 2 free: NUMA 0 alone is no hint, and NUMA 0+1 is
    # not preferred because one node *could* hold 3 (minAffinitySize counts all devices).
    assert generate_hints((4, 4), (2, 4), (0, 0), 3) == [h((1,), True), h((0, 1), False)]
    assert generate_hints((4, 4), (4, 4), (0, 0), 6) == [h((0, 1), True)]
    assert generate_hints((4, 4), (0, 0), (0, 0), 1) == []


def test_hints_must_include_every_numa_node_of_reusable_devices():
    assert generate_hints((4, 4), (0, 4), (1, 0), 1) == [h((0,), True), h((0, 1), False)]


def test_hints_combine_only_numa_nodes_that_host_the_resource():
    assert generate_hints((0, 4, 4), (0, 4, 4), (0, 0, 0), 1) == [h((1,), True), h((2,), True), h((1, 2), False)]


def test_providers_without_hints_have_no_preference_and_empty_hints_veto():
    assert filter_provider_hints([{}, None]) == [[h(None, True)], [h(None, True)]]
    assert filter_provider_hints([{"a": None, "b": []}]) == [[h(None, True)], [h(None, False)]]


def test_a_merged_hint_is_preferred_only_if_all_are_preferred_and_equal():
    assert merge_permutation(0b11, [h((0,), True), h((0,), True), h(None, True)]) == h((0,), True)
    assert merge_permutation(0b11, [h((0,), True), h((0, 1), True)]) == h((0,), False)
    assert merge_permutation(0b11, [h((0, 1), False), h((0, 1), True)]) == h((0, 1), False)


def test_compare_prefers_preferred_then_narrower_and_unpreferred_near_the_best_count():
    assert compare(h((0, 1), True), h((0,), True), 1) == h((0,), True)
    assert compare(h((1,), True), h((0,), False), 1) == h((1,), True)
    assert compare(h((0,), False), h((0, 1), False), 2) == h((0, 1), False)  # case 3b: creep up to the count
    assert compare(h((0, 1), False), h((1,), False), 2) == h((0, 1), False)  # case 2: stay at the count
    assert compare(None, h((), False), 1) is None  # an empty AND serves nothing


def test_best_non_preferred_count_is_the_largest_narrowest_mask():
    assert best_non_preferred_affinity_count([[h((0,), True), h((0, 1), False)], [h((0, 1), True)], [h(None, True)]]) == 2


def test_merge_without_any_permutation_is_the_unpreferred_default():
    assert merge([[h((0,), True)], []], 2) == h((0, 1), False)


def test_policies_differ_on_the_same_hints():
    gpu = [h((0,), True), h((1,), True), h((0, 1), False)]
    efa = [h((0, 1), True)]
    assert policy_merge("best-effort", [{"g": gpu, "e": efa}], 2) == (h((0, 1), False), True)
    assert policy_merge("restricted", [{"g": gpu, "e": efa}], 2) == (h((0, 1), False), False)
    assert policy_merge("single-numa-node", [{"g": gpu, "e": efa}], 2) == (h(None, False), False)
    assert policy_merge("single-numa-node", [{}], 2) == (h(None, True), True)  # any node: stored as no affinity
    assert policy_merge("none", [{"e": []}], 2) == (h(None, True), True)


_MASKS = st.integers(min_value=1, max_value=0b111)
_RESOURCE = st.one_of(st.none(), st.lists(st.builds(TopologyHint, _MASKS, st.booleans()), max_size=4))


def _common_preferred(resources):
    listed = [hints for hints in resources.values() if hints is not None]
    masks = [{hint.affinity for hint in hints if hint.preferred} for hints in listed]
    return set.intersection(*masks) if masks else {0b111}


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from("abc"), _RESOURCE, max_size=3))
def test_restricted_admits_exactly_when_one_mask_is_preferred_by_every_resource_and_best_effort_always(resources):
    # mergePermutation: preferred only if all are preferred and equal; compare: the narrowest preferred wins.
    best, admit = policy_merge("restricted", [resources], 3)
    common = _common_preferred(resources)
    assert admit == bool(common)
    if common:
        assert best == TopologyHint(min(common, key=lambda m: (bin(m).count("1"), m)), True)
    assert policy_merge("best-effort", [resources], 3) == (best, True)  # the same merge, always admitted


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from("abc"), _RESOURCE, max_size=3))
def test_single_numa_node_admits_exactly_when_one_node_is_preferred_by_every_resource(resources):
    # filterSingleNumaHints drops wider hints first; with no hints at all the pod has no preference and is admitted.
    _, admit = policy_merge("single-numa-node", [resources], 3)
    unconstrained = all(hints is None for hints in resources.values())
    assert admit == (unconstrained or any(bin(m).count("1") == 1 for m in _common_preferred(resources)))
