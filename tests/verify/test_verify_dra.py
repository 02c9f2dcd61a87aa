"""``verify``: every GPU/NIC pair of an allocated DRA claim sits on one PCIe root.

The ResourceSlices are what NVIDIA's GPU DRA driver and DRANET publish on a p5en.48xlarge node (one GPU
and two EFAs per root: research breadth-late-2026 §1.2, §1.6); the claims are what the scheduler writes
for a pod of a template pairing ``gpu`` and ``efa`` under ``resource.kubernetes.io/pcieRoot``.
"""

from __future__ import annotations

import copy
import json

import pytest
from kubernetes import config as kube_config
from support.dra_objects import EFA_CLASS, GPU_CLASS, PCIE_ROOT, aligned_spec, claim_spec, claim_template, request
from support.fake_kube import FakeApiServer
from support.verify_clusters import seed_cluster

from gpu_fabric.verify.api import LiveTransport
from gpu_fabric.verify.checks import FAIL, INCONCLUSIVE, PASS, alignment_checks, verify
from gpu_fabric.verify.collect import collect
from gpu_fabric.verify.expectations import StackExpectations, claim_namespaces, object_expectations
from gpu_fabric.verify.recording import RECORDING_INDEX, RecordingTransport, ReplayTransport
from gpu_fabric.verify.report import render_json, render_table

NODE = "ip-10-0-1-1"
ROOTS = ("pci0000:10", "pci0000:20")


def gpu_slice(roots=ROOTS, node=NODE):
    """NVIDIA's GPU driver's slice: one GPU per root."""
    devices = [{"name": f"gpu-{i}", "attributes": {PCIE_ROOT: {"string": root}, "productName": {"string": "H200"}}}
               for i, root in enumerate(roots)]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{node}-gpu.nvidia.com"},
            "spec": {"driver": "gpu.nvidia.com", "nodeName": node, "pool": {"name": node, "generation": 1,
                                                                             "resourceSliceCount": 1},
                     "devices": devices}}


def efa_slice(roots=ROOTS, node=NODE):
    """DRANET's slice: two EFAs per root."""
    devices = [{"name": f"rdmap{i}", "attributes": {PCIE_ROOT: {"string": root}, "dra.net/rdma": {"bool": True}}}
               for i, root in enumerate(root for root in roots for _ in range(2))]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{node}-dra.net"},
            "spec": {"driver": "dra.net", "nodeName": node, "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": devices}}


def claim(name, results, pod="trainer-0", namespace="team-a", spec=None):
    """A ResourceClaim generated for ``pod``, allocated ``results`` (``(request, driver, device)``)."""
    return {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace,
                     "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": pod, "uid": "u"}]},
        "spec": copy.deepcopy(spec if spec is not None else aligned_spec(1, 2)),
        "status": {"allocation": {"devices": {"results": [
            {"request": req, "driver": driver, "pool": NODE, "device": device} for req, driver, device in results]}},
            "reservedFor": [{"resource": "pods", "name": pod, "uid": "u"}]},
    }


ALIGNED = [("gpu", "gpu.nvidia.com", "gpu-0"), ("efa", "dra.net", "rdmap0"), ("efa", "dra.net", "rdmap1")]
SPLIT = [("gpu", "gpu.nvidia.com", "gpu-0"), ("efa", "dra.net", "rdmap2"), ("efa", "dra.net", "rdmap3")]


def test_an_aligned_pair_passes():
    (check,) = alignment_checks([claim("trainer-0-gpu-efa", ALIGNED)], [gpu_slice(), efa_slice()])
    assert check.status == PASS and check.subject == "pod team-a/trainer-0"
    assert check.found == {"gpu.nvidia.com/ip-10-0-1-1/gpu-0": "pci0000:10", "dra.net/ip-10-0-1-1/rdmap0": "pci0000:10",
                           "dra.net/ip-10-0-1-1/rdmap1": "pci0000:10"}


def test_a_split_pair_fails_naming_the_pod_claim_devices_and_roots():
    (check,) = alignment_checks([claim("trainer-0-gpu-efa", SPLIT)], [gpu_slice(), efa_slice()])
    assert check.status == FAIL
    assert check.subject == "pod team-a/trainer-0" and "trainer-0-gpu-efa" in check.name
    sentence = check.sentence()
    assert "ResourceClaim team-a/trainer-0-gpu-efa" in sentence
    assert "GPU gpu-0 (gpu.nvidia.com, pool ip-10-0-1-1, request gpu) on pci0000:10 has no NIC of the claim on its root " \
           "(rdmap2 on pci0000:20, rdmap3 on pci0000:20)" in sentence
    assert "NIC rdmap2" in sentence and "GPUDirect RDMA is off" in sentence


def test_pairs_are_judged_within_each_pcie_root_constraint():
    spec = claim_spec([request("gpu-0", GPU_CLASS), request("efa-0", EFA_CLASS), request("gpu-1", GPU_CLASS),
                       request("efa-1", EFA_CLASS)],
                      [{"requests": ["gpu-0", "efa-0"], "matchAttribute": PCIE_ROOT},
                       {"requests": ["gpu-1", "efa-1"], "matchAttribute": PCIE_ROOT}])
    crossed = [("gpu-0", "gpu.nvidia.com", "gpu-0"), ("efa-0", "dra.net", "rdmap2"),
               ("gpu-1", "gpu.nvidia.com", "gpu-1"), ("efa-1", "dra.net", "rdmap0")]
    (check,) = alignment_checks([claim("c", crossed, spec=spec)], [gpu_slice(), efa_slice()])
    assert check.status == FAIL  # across the claim every GPU has a NIC on its root; within each pair none does
    paired = [("gpu-0", "gpu.nvidia.com", "gpu-0"), ("efa-0", "dra.net", "rdmap0"),
              ("gpu-1", "gpu.nvidia.com", "gpu-1"), ("efa-1", "dra.net", "rdmap2")]
    (check,) = alignment_checks([claim("c", paired, spec=spec)], [gpu_slice(), efa_slice()])
    assert check.status == PASS


def test_a_device_whose_slice_publishes_no_pcie_root_is_not_checked():
    slices = [gpu_slice(), efa_slice()]
    del slices[1]["spec"]["devices"][1]["attributes"][PCIE_ROOT]
    (check,) = alignment_checks([claim("c", ALIGNED)], slices)
    assert (check.status, check.found) == (INCONCLUSIVE, "not checked")
    assert "rdmap1 (dra.net, pool ip-10-0-1-1, request efa) on node ip-10-0-1-1: its ResourceSlice publishes no " \
           "resource.kubernetes.io/pcieRoot" in check.detail
    (check,) = alignment_checks([claim("c", ALIGNED)], [gpu_slice()])  # DRANET published nothing
    assert check.status == INCONCLUSIVE and "rdmap0 (dra.net, pool ip-10-0-1-1, request efa): no ResourceSlice publishes it" \
        in check.detail


@pytest.mark.parametrize("break_it, field", [
    (lambda c: c["status"].__setitem__("allocation", "yes"), "status.allocation"),
    (lambda c: c["status"]["allocation"]["devices"].__setitem__("results", {"gpu": 1}), "status.allocation.devices.results"),
    (lambda c: c["status"]["allocation"]["devices"]["results"].__setitem__(1, "rdmap0"), "status.allocation.devices.results[1]"),
    (lambda c: c["status"]["allocation"]["devices"]["results"][0].__setitem__("device", 7),
     "status.allocation.devices.results[0].device"),
    (lambda c: c["status"]["allocation"]["devices"]["results"][2].pop("driver"), "status.allocation.devices.results[2].driver"),
    (lambda c: c.__setitem__("status", ["allocated"]), "status"),
])
def test_a_malformed_allocation_is_a_failed_check_not_a_crash(break_it, field):
    broken = claim("c", ALIGNED)
    break_it(broken)
    (check,) = alignment_checks([broken], [gpu_slice(), efa_slice()])
    assert (check.status, check.found) == (FAIL, "malformed allocation")
    assert check.detail == f"ResourceClaim team-a/c: {field} is not of the resource.k8s.io/v1 shape"


def test_claims_without_an_allocation_or_a_gpu_are_not_judged_and_garbage_fails():
    unallocated = claim("u", ALIGNED)
    del unallocated["status"]["allocation"]
    nic_only = claim("n", ALIGNED[1:])
    checks = alignment_checks([unallocated, nic_only, 3], [gpu_slice(), efa_slice()])
    assert [(c.status, c.found) for c in checks] == [(FAIL, "malformed")]


def test_a_gpu_claimed_without_its_nic_on_a_fabric_node_fails():
    # What the real kube-scheduler allocates for a pod asking for nvidia.com/gpu when the GPU DeviceClass sets
    # extendedResourceName (tests/e2e/test_scheduler_dra.py): an implicit claim holding one GPU and no EFA.
    implicit = claim("trainer-0-extended-resources-x7k2p", ALIGNED[:1], spec={"devices": {"requests": []}})
    (check,) = alignment_checks([implicit], [gpu_slice(), efa_slice()])
    assert check.status == FAIL and check.subject == "pod team-a/trainer-0"
    assert "gpu-0 (gpu.nvidia.com, pool ip-10-0-1-1, request gpu) claimed without a NIC on node ip-10-0-1-1" in check.detail
    assert "extendedResourceName" in check.detail


def test_a_gpu_claimed_alone_on_a_node_publishing_no_nic_is_not_judged():
    assert alignment_checks([claim("g", ALIGNED[:1])], [gpu_slice()]) == []
    # NICs published on another node do not make this one a fabric node.
    assert alignment_checks([claim("g", ALIGNED[:1])], [gpu_slice(), efa_slice(node="ip-10-0-9-9")]) == []


def test_roots_pair_only_on_one_node():
    # Root names repeat on every node of a type: a GPU on one node and NICs "on the same root" of another do not pair.
    other = "ip-10-0-2-2"
    results = [("gpu", "gpu.nvidia.com", "gpu-0"), ("efa", "dra.net", "rdmap0"), ("efa", "dra.net", "rdmap1")]
    cross = claim("c", results)
    for result in cross["status"]["allocation"]["devices"]["results"][1:]:
        result["pool"] = other
    (check,) = alignment_checks([cross], [gpu_slice(), efa_slice(), efa_slice(node=other)])
    assert check.status == FAIL
    assert "on pci0000:10 of node ip-10-0-1-1 has no NIC of the claim on its root" in check.detail
    assert "rdmap0 on pci0000:10 of node ip-10-0-2-2" in check.detail


def test_only_a_pools_newest_generation_decides_a_root():
    stale = efa_slice(roots=("pci0000:10", "pci0000:10"))  # once rdmap2/3 sat on the GPU's root
    newest = efa_slice()
    newest["spec"]["pool"]["generation"] = 2
    for order in ([newest, stale], [stale, newest]):
        (check,) = alignment_checks([claim("s", SPLIT)], [gpu_slice(), *order])
        assert check.status == FAIL, order


def test_a_result_naming_no_request_of_the_spec_is_malformed():
    results = [("gpu", "gpu.nvidia.com", "gpu-0"), ("stray", "dra.net", "rdmap2"), ("stray", "dra.net", "rdmap3")]
    (check,) = alignment_checks([claim("r", results)], [gpu_slice(), efa_slice()])
    assert check.status == FAIL and check.found == "malformed allocation"
    assert "results[1].request ('stray' names no request of the spec)" in check.detail


def test_a_device_published_twice_at_different_roots_is_not_checked():
    twice = efa_slice()
    duplicate = copy.deepcopy(twice)
    duplicate["metadata"]["name"] += "-2"
    duplicate["spec"]["devices"] = [{"name": "rdmap0", "attributes": {PCIE_ROOT: {"string": "pci0000:20"}}}]
    (check,) = alignment_checks([claim("d", ALIGNED)], [gpu_slice(), twice, duplicate])
    assert check.status == INCONCLUSIVE
    assert "publishes rdmap0 more than once, at different places" in check.detail


def test_more_results_than_the_api_allows_is_malformed_without_reading_them():
    results = [("gpu", "gpu.nvidia.com", "gpu-0")] + [("efa", "dra.net", f"rdmap{i % 4}") for i in range(20_000)]
    (check,) = alignment_checks([claim("big", results)], [gpu_slice(), efa_slice()])
    assert check.status == FAIL and "more than 32 entries" in check.detail


def test_expectations_take_the_namespaces_of_the_rendered_claim_templates():
    manifests = [claim_template("gpu-efa", aligned_spec(), "team-b"), claim_template("gpu-efa", aligned_spec(), "team-a"),
                 {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-c"}}]
    assert claim_namespaces(manifests) == ["team-a", "team-b"]


# -- against a fake API server, recorded and replayed ---------------------------------------------------


def dra_cluster(results):
    cluster = seed_cluster()
    for item in (gpu_slice(), efa_slice()):
        cluster.add_listed("resource.k8s.io/v1", "ResourceSlice", "resourceslices", "", item)
    cluster.add_listed("resource.k8s.io/v1", "ResourceClaim", "resourceclaims", "team-a", claim("trainer-0-gpu-efa", results))
    cluster.add_listed("resource.k8s.io/v1", "ResourceClaim", "resourceclaims", "team-a",
                       claim("trainer-1-gpu-efa", ALIGNED, pod="trainer-1"))
    template = claim_template("gpu-efa", aligned_spec(1, 2))
    cluster.add_object("resource.k8s.io/v1", "ResourceClaimTemplate", "resourceclaimtemplates", "team-a", "gpu-efa",
                       {"spec": template["spec"]})
    return cluster, [template]


def expectations_for(manifests):
    return StackExpectations("dra", [], object_expectations(manifests), claim_namespaces(manifests))


def transport_to(server, tmp_path):
    return LiveTransport(kube_config.new_client_from_config(config_file=str(server.kubeconfig(tmp_path))))


def test_verify_reads_claims_and_slices_and_names_the_pod_of_a_split_pair(tmp_path):
    cluster, manifests = dra_cluster(SPLIT)
    with FakeApiServer(cluster) as server:
        snapshot = collect(transport_to(server, tmp_path), expectations_for(manifests))
    report = verify(expectations_for(manifests), snapshot)
    assert [(c.subject, c.status) for c in report.devices] == [("pod team-a/trainer-0", FAIL), ("pod team-a/trainer-1", PASS)]
    assert any(path.startswith("/apis/resource.k8s.io/v1/namespaces/team-a/resourceclaims?limit=") for path in cluster.requests)
    assert any(path.startswith("/apis/resource.k8s.io/v1/resourceslices?limit=") for path in cluster.requests)
    data = json.loads(render_json(report))
    assert data["result"] == "fail" and [p["subject"] for p in data["problems"]] == ["pod team-a/trainer-0"]
    assert [d["status"] for d in data["deviceAlignment"]] == ["fail", "pass"]
    table = render_table(report)
    assert "DRA device alignment" in table and "pod team-a/trainer-0: claim trainer-0-gpu-efa" in table


def test_claims_are_listed_in_pages(tmp_path, monkeypatch):
    from gpu_fabric.verify import collect as collect_module

    monkeypatch.setattr(collect_module, "LIST_PAGE_SIZE", 1)
    cluster, manifests = dra_cluster(ALIGNED)
    with FakeApiServer(cluster) as server:
        snapshot = collect(transport_to(server, tmp_path), expectations_for(manifests))
    assert sorted(c["metadata"]["name"] for c in snapshot.claims) == ["trainer-0-gpu-efa", "trainer-1-gpu-efa"]
    assert len(snapshot.slices) == 2 and any("continue=1" in path for path in cluster.requests)


def test_a_stack_without_claim_templates_reads_no_dra_api(tmp_path):
    cluster, _ = dra_cluster(SPLIT)
    with FakeApiServer(cluster) as server:
        snapshot = collect(transport_to(server, tmp_path), StackExpectations("plain"))
    assert snapshot.claims == [] and not any("resource.k8s.io" in path for path in cluster.requests)


def test_a_recording_keeps_claims_and_slices_whole_and_replays_the_same_verdict(tmp_path):
    cluster, manifests = dra_cluster(SPLIT)
    folder = tmp_path / "recording"
    with FakeApiServer(cluster) as server:
        recording = RecordingTransport(transport_to(server, tmp_path), folder)
        live = verify(expectations_for(manifests), collect(recording, expectations_for(manifests)))
        recording.save()
    index = json.loads((folder / RECORDING_INDEX).read_text())["responses"]
    slices = next(entry for key, entry in index.items() if key.startswith("GET /apis/resource.k8s.io/v1/resourceslices"))
    body = json.loads((folder / slices["body"]).read_text())
    assert body["items"][0]["spec"]["devices"][0]["attributes"][PCIE_ROOT] == {"string": "pci0000:10"}
    replay = ReplayTransport(folder)
    try:
        replayed = verify(expectations_for(manifests), collect(replay, expectations_for(manifests)))
    finally:
        replay.close()
    assert replayed.devices == live.devices and [c.status for c in replayed.devices] == [FAIL, PASS]


def test_a_claims_list_that_is_not_a_list_is_a_refusal_naming_the_server(tmp_path):
    from gpu_fabric.verify.answers import MalformedAnswer

    cluster, manifests = dra_cluster(ALIGNED)
    cluster.raw["/apis/resource.k8s.io/v1/namespaces/team-a/resourceclaims"] = b'{"items": {"a": 1}}'
    with FakeApiServer(cluster) as server, pytest.raises(MalformedAnswer) as refused:
        collect(transport_to(server, tmp_path), expectations_for(manifests))
    assert "the ResourceClaims of namespace team-a with items a mapping, expected a list" in str(refused.value)



def test_a_dra_pools_nodes_are_expected_to_advertise_no_device_plugin_keys():
    """The dra-efa stack's p5en nodes publish their GPUs and EFA devices in ResourceSlices, not as allocatable;
    verify reads the claims of the namespaces its templates go to."""
    from gpu_fabric.plan.dra_pools import dra_manifests
    from gpu_fabric.verify.expectations import pool_expectation, stack_expectations
    from gpu_fabric.cli.lint_workloads import _stack_config
    from support.stack_configs import PROJECT_DIR

    config = _stack_config("dra-efa", PROJECT_DIR)
    assert pool_expectation(config.pools[0]).allocatable == {"nvidia.com/gpu": 0, "vpc.amazonaws.com/efa": 0}
    assert stack_expectations("dra-efa", config, dra_manifests(config)).claim_namespaces == ["team-a"]


def test_a_dra_node_advertising_device_plugin_keys_fails_and_one_advertising_none_passes():
    """A device plugin beside the DRA drivers hands the same devices out twice: its keys on the node fail verify."""
    from gpu_fabric.verify.checks import allocatable_checks

    expected = {"nvidia.com/gpu": 0, "vpc.amazonaws.com/efa": 0}
    clean = allocatable_checks("node p5en-1", {"status": {"allocatable": {"cpu": "192"}}}, expected)
    assert [c.status for c in clean] == [PASS, PASS]
    plugin = allocatable_checks("node p5en-1", {"status": {"allocatable": {"nvidia.com/gpu": "8"}}}, expected)
    assert [(c.name, c.status) for c in plugin] == [("allocatable nvidia.com/gpu", FAIL), ("allocatable vpc.amazonaws.com/efa", PASS)]
