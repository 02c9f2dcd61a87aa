"""Every field of every answer ``verify`` reads, replaced by every wrong JSON type: a refusal or a report, never a crash.

The pure half of ``test_verify_hostile``: the shape-checked readers (``gpu_fabric.verify.answers``)
and then the checks and both report formats run on each mutated answer, without a server, so all
placements (leaf, list, object) of the example clusters' nodes and DaemonSets are tried.
"""

from __future__ import annotations

import copy
from typing import Any, Iterator

import pytest
from support.stack_configs import stack_values
from support.verify_clusters import EFA_PLUGIN, efa_cluster, rendered_manifests, seed_cluster

from gpu_fabric.validation.configuration import load_config
from gpu_fabric.verify import answers
from gpu_fabric.verify.checks import verify
from gpu_fabric.verify.expectations import ObjectRef, stack_expectations
from gpu_fabric.verify.report import render_json, render_table
from gpu_fabric.verify.snapshot import ClusterSnapshot

SERVER = "https://fake.example:6443"
WRONG = ["text", ["a", 1], 7, 2.5, None, {"k": "v"}, True, [{"key": 1}]]


def paths(value: Any, prefix: tuple = ()) -> Iterator[tuple]:
    """Every path into ``value``: each mapping key and list index, containers included."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield (*prefix, key)
            yield from paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield (*prefix, index)
            yield from paths(item, (*prefix, index))


def replaced(document: Any, path: tuple, value: Any) -> Any:
    copied = copy.deepcopy(document)
    holder = copied
    for part in path[:-1]:
        holder = holder[part]
    holder[path[-1]] = value
    return copied


def expectations_of(stack: str):
    return stack_expectations(stack, load_config(stack_values(stack)), rendered_manifests(stack))


@pytest.fixture(scope="module")
def seed():
    return expectations_of("seed-rdma"), seed_cluster()


@pytest.fixture(scope="module")
def efa():
    return expectations_of("aws-efa"), efa_cluster()


def judge(expectations, nodes, objects=None) -> str:
    snapshot = ClusterSnapshot(nodes=nodes, objects=objects or {})
    report = verify(expectations, snapshot, SERVER)
    return render_table(report) + render_json(report)


def test_every_node_field_of_any_wrong_type_is_refused_or_judged(seed) -> None:
    expectations, cluster = seed
    page = {"kind": "NodeList", "metadata": {"resourceVersion": "1"}, "items": list(cluster.nodes.values())}
    tried = refused = 0
    for path in paths(page):
        for value in WRONG:
            tried += 1
            broken = replaced(page, path, value)
            try:
                nodes, _ = answers.read_node_page(answers.Reader(SERVER, "GET /api/v1/nodes?limit=500", "the node list"),
                                                  broken)
            except answers.MalformedAnswer as refusal:
                refused += 1
                message = str(refusal)
                assert message.startswith(f"{SERVER} sent ") and "\n" not in message, message
                continue
            judge(expectations, nodes)  # the checks index only what the reader vouched for
    assert tried > 500 and 0 < refused < tried


def test_every_daemonset_field_of_any_wrong_type_is_refused_or_judged(efa) -> None:
    expectations, cluster = efa
    plugin = cluster.objects[EFA_PLUGIN]
    ref = next(e.ref for e in expectations.objects if e.rollout and e.ref.name == "aws-efa-k8s-device-plugin")
    nodes = list(cluster.nodes.values())
    for path in paths(plugin):
        for value in WRONG:
            broken = replaced(plugin, path, value)
            try:
                found = answers.read_object(answers.Reader(SERVER, f"GET {EFA_PLUGIN}", ref.label()), broken, rollout=True)
            except answers.MalformedAnswer as refusal:
                assert "DaemonSet kube-system/aws-efa-k8s-device-plugin with " in str(refusal)
                continue
            judge(expectations, nodes, {ref: found})


def test_a_resource_list_of_any_wrong_shape_is_refused_or_read() -> None:
    listing = {"kind": "APIResourceList", "groupVersion": "apps/v1",
               "resources": [{"name": "daemonsets", "kind": "DaemonSet", "namespaced": True}]}
    for path in paths(listing):
        for value in WRONG:
            try:
                served = answers.read_resource_list(answers.Reader(SERVER, "GET /apis/apps/v1", "apps/v1"),
                                                    replaced(listing, path, value))
            except answers.MalformedAnswer:
                continue
            assert all(isinstance(item["name"], str) and isinstance(item["namespaced"], bool) for item in served.values())


def test_object_refs_still_compare_by_value() -> None:
    # The snapshot's objects are keyed by ObjectRef; a reader must hand back the document, not a copy keyed otherwise.
    ref = ObjectRef("apps/v1", "DaemonSet", "kube-system", "x")
    document = {"metadata": {"name": "x"}, "status": {"numberReady": 1, "desiredNumberScheduled": 1}}
    assert answers.read_object(answers.Reader(SERVER, "GET x", ref.label()), document, rollout=True) is document
