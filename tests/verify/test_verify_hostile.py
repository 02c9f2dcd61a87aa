"""``gpu-fabric verify`` against a server that trickles, loops or lies, and recordings that point elsewhere.

Every case ends -- within its deadline -- with exit 2 (or 1 for a finding), one line on stderr that
names the server and what it sent, never a traceback or a hang.
"""

from __future__ import annotations

import json
import os
import time

import pytest
from support.fake_kube import FakeApiServer
from support.verify_clusters import EFA_PLUGIN, SEED_NODES, efa_cluster, seed_cluster

from test_verify_cli import assert_refused, problems, run, verify_against

NODES = "/api/v1/nodes"


def timed(cluster, tmp_path, capsys, *args, stack="seed-rdma"):
    started = time.monotonic()
    code, out, err = verify_against(cluster, tmp_path, capsys, *args, stack=stack)
    return code, out, err, time.monotonic() - started


# -- a server that trickles ---------------------------------------------------------------------------


def test_a_body_sent_one_byte_a_second_is_cut_off_at_the_request_timeout(tmp_path, capsys):
    cluster = seed_cluster()
    cluster.trickle.add(NODES)
    code, out, err, elapsed = timed(cluster, tmp_path, capsys, "--request-timeout", "2.5")
    assert_refused(code, out, err, "GET /api/v1/nodes?limit=500 from http://127.0.0.1:",
                   "no complete answer within 2.5s (--request-timeout)", "bytes of the body: '{")
    assert elapsed < 10, f"took {elapsed:.1f}s"


def test_headers_sent_one_byte_a_second_are_cut_off_too(tmp_path, capsys):
    cluster = seed_cluster()
    cluster.trickle.add(NODES)
    cluster.trickle_headers = True
    code, out, err, elapsed = timed(cluster, tmp_path, capsys, "--request-timeout", "2")
    assert_refused(code, out, err, "from http://127.0.0.1:", "had not sent a complete status line and headers")
    assert elapsed < 10, f"took {elapsed:.1f}s"


def test_the_whole_run_has_its_own_deadline(tmp_path, capsys):
    cluster = seed_cluster()
    cluster.trickle.add(f"{NODES}/{SEED_NODES[0]}/proxy/configz")  # each request within its own timeout...
    code, out, err, elapsed = timed(cluster, tmp_path, capsys, "--timeout", "2", "--request-timeout", "30")
    assert_refused(code, out, err, "before the run's deadline of 2s (--timeout)", f"{SEED_NODES[0]}/proxy/configz")
    assert elapsed < 10, f"took {elapsed:.1f}s"


@pytest.mark.parametrize("flag, value", [("--timeout", "0"), ("--request-timeout", "-1"), ("--timeout", "nan"),
                                         ("--max-body-bytes", "10")])
def test_limits_must_be_sensible(flag, value, capsys):
    code, out, err = run(capsys, ["--stack", "seed-rdma", "--replay", "/nonexistent", flag, value])
    assert_refused(code, out, err, flag)


def test_a_body_larger_than_the_limit_is_not_buffered(tmp_path, capsys):
    cluster = seed_cluster()
    cluster.huge[NODES] = 50 * 2**20
    code, out, err = verify_against(cluster, tmp_path, capsys, "--max-body-bytes", "1048576")
    assert_refused(code, out, err, "GET /api/v1/nodes?limit=500 from http://127.0.0.1:",
                   "larger than 1048576 bytes (--max-body-bytes)")


# -- a server that loops --------------------------------------------------------------------------------


def test_a_repeated_continue_token_stops_the_listing(tmp_path, capsys):
    cluster = seed_cluster()
    cluster.loop_continue = "same-page-again"
    code, out, err = verify_against(cluster, tmp_path, capsys)
    assert_refused(code, out, err, "http://127.0.0.1:", "continue token 'same-page-again' a second time",
                   "would repeat forever")
    assert sum(1 for request in cluster.requests if request.startswith(NODES + "?")) == 2


# -- a server that lies about types -----------------------------------------------------------------


def _node(cluster):
    return cluster.nodes[SEED_NODES[0]]


LIES = {
    "status a string": (lambda c: _node(c).__setitem__("status", "Ready"),
                        "node a10g-node-1 with status a string ('Ready'), expected a mapping"),
    "conditions strings": (lambda c: _node(c)["status"].__setitem__("conditions", ["Ready"]),
                           "node a10g-node-1 with status.conditions[0] a string ('Ready'), expected a mapping"),
    "a taint without key": (lambda c: _node(c)["spec"].__setitem__("taints", [{"effect": "NoSchedule"}]),
                            "node a10g-node-1 with spec.taints[0].key null, expected a non-empty string"),
    "labels a list": (lambda c: _node(c)["metadata"].__setitem__("labels", ["gpu"]),
                      "node a10g-node-1 with metadata.labels a list of 1, expected a mapping"),
    "a label value a number": (lambda c: _node(c)["metadata"]["labels"].__setitem__("rack", 7),
                               "node a10g-node-1 with metadata.labels.rack a number (7), expected a string"),
    "allocatable a list": (lambda c: _node(c)["status"].__setitem__("allocatable", [4]),
                           "node a10g-node-1 with status.allocatable a list of 1, expected a mapping"),
    "a quantity a mapping": (lambda c: _node(c)["status"]["allocatable"].__setitem__("nvidia.com/gpu", {"n": 4}),
                             "status.allocatable.nvidia.com/gpu a mapping, expected a quantity"),
    "a node name with a terminal escape": (lambda c: _node(c)["metadata"].__setitem__("name", "gpu\x1b[2J\nnode"),
                                           "items[0].metadata.name a string ('gpu\\x1b[2J\\nnode'), expected a node name"),
    "a nameless node": (lambda c: _node(c)["metadata"].pop("name"),
                        "the node list with items[0].metadata.name null, expected a non-empty string"),
    "items a mapping": (lambda c: c.raw.__setitem__(NODES, b'{"kind": "NodeList", "items": {}}'),
                        "the node list with items a mapping, expected a list of nodes"),
    "the answer a list": (lambda c: c.raw.__setitem__(NODES, b"[1, 2]"),
                          "the node list with the answer a list of 2, expected a mapping"),
    "a continue token a number": (lambda c: c.raw.__setitem__(NODES, b'{"items": [], "metadata": {"continue": 5}}'),
                                  "metadata.continue a number (5), expected a string"),
    "discovery resources a string": (lambda c: c.raw.__setitem__("/api/v1", b'{"resources": "all"}'),
                                     "the resource list of v1 with resources a string ('all'), expected a list"),
    "JSON nested 100000 deep": (lambda c: c.raw.__setitem__(NODES, b"[" * 100_000 + b"]" * 100_000),
                                "listing nodes (GET /api/v1/nodes?limit=500 from http://127.0.0.1:"),
    "not JSON at all": (lambda c: c.raw.__setitem__(NODES, b"\xff\xfe<html>"),
                        "is not JSON (is this a Kubernetes API server?); it sent"),
}


@pytest.mark.parametrize("lie", sorted(LIES))
def test_a_wrong_type_is_a_refusal_naming_object_field_and_server(lie, tmp_path, capsys):
    cluster = seed_cluster()
    break_it, fragment = LIES[lie]
    break_it(cluster)
    code, out, err = verify_against(cluster, tmp_path, capsys)
    assert_refused(code, out, err, fragment, "http://127.0.0.1:")


def test_server_text_in_a_reason_stays_on_one_printable_line():
    from gpu_fabric.verify.api import Response

    body = json.dumps({"kind": "Status", "message": "denied\n\x1b[31mfake line\x1b[0m"}).encode()
    assert Response(403, body).reason() == "HTTP 403: denied\\n\\x1b[31mfake line\\x1b[0m"


def test_a_daemonset_status_count_that_is_a_string_is_refused(tmp_path, capsys):
    cluster = efa_cluster()
    cluster.objects[EFA_PLUGIN]["status"]["numberReady"] = "4"
    code, out, err = verify_against(cluster, tmp_path, capsys, stack="aws-efa")
    assert_refused(code, out, err, "DaemonSet kube-system/aws-efa-k8s-device-plugin with status.numberReady a string ('4'), "
                                   "expected a whole number", "http://127.0.0.1:")


def test_a_count_in_non_ascii_digits_is_not_a_number(tmp_path, capsys):
    cluster = seed_cluster()
    cluster.nodes["a10g-node-2"]["status"]["allocatable"]["device.gpustack.ai/rdma"] = "\u0662"  # ARABIC-INDIC TWO
    code, out, _ = verify_against(cluster, tmp_path, capsys, "--json")
    assert code == 1
    assert problems(out) == [("node a10g-node-2", "allocatable device.gpustack.ai/rdma", 2, "\u0662", "fail")]


# -- credentials in the server URL ----------------------------------------------------------------------


def test_credentials_in_the_server_url_are_masked_in_output_and_recording(tmp_path, capsys):
    recording = tmp_path / "recording"
    with FakeApiServer(seed_cluster()) as server:
        kubeconfig = server.kubeconfig(tmp_path, userinfo="admin:hunter2")
        code, out, err = run(capsys, ["--stack", "seed-rdma", "--kubeconfig", str(kubeconfig), "--json",
                                      "--record", str(recording)])
    assert code == 0, out + err
    assert "hunter2" not in out + err and "admin:" not in out
    assert json.loads(out)["target"].startswith("http://***@127.0.0.1:")
    for path in recording.iterdir():
        assert "hunter2" not in path.read_text(), path
    assert json.loads((recording / "recording.json").read_text())["server"].startswith("http://***@127.0.0.1:")


def test_credentials_in_an_unreachable_server_url_are_masked(tmp_path, capsys):
    with FakeApiServer(seed_cluster()) as server:
        kubeconfig = server.kubeconfig(tmp_path, userinfo="admin:hunter2")
    code, out, err = run(capsys, ["--stack", "seed-rdma", "--kubeconfig", str(kubeconfig)])
    assert_refused(code, out, err, "cannot reach http://***@127.0.0.1:")
    assert "hunter2" not in err


# -- recordings that point elsewhere --------------------------------------------------------------------


@pytest.fixture
def recording(tmp_path, capsys):
    folder = tmp_path / "recording"
    code, _, err = verify_against(seed_cluster(), tmp_path, capsys, "--record", str(folder))
    assert code == 0, err
    return folder


def body_of(recording, request):
    return recording / json.loads((recording / "recording.json").read_text())["responses"][request]["body"]


def test_record_does_not_write_through_a_symlinked_index(recording, tmp_path, capsys):
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me")
    (recording / "recording.json").unlink()
    (recording / "recording.json").symlink_to(outside)
    code, out, err = verify_against(seed_cluster(), tmp_path, capsys, "--record", str(recording))
    assert_refused(code, out, err, "recording.json is a symbolic link; refusing to write through or over it")
    assert outside.read_text() == "keep me"


def test_record_does_not_write_through_a_symlinked_body_or_folder(recording, tmp_path, capsys):
    outside = tmp_path / "outside.json"
    outside.write_text("keep me")
    body = body_of(recording, "GET /api/v1/nodes?limit=500")
    body.unlink()
    body.symlink_to(outside)
    code, out, err = verify_against(seed_cluster(), tmp_path, capsys, "--record", str(recording))
    assert_refused(code, out, err, f"{body.name} is a symbolic link")
    assert outside.read_text() == "keep me"
    linked = tmp_path / "linked"
    linked.symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    (tmp_path / "elsewhere").mkdir()
    code, out, err = verify_against(seed_cluster(), tmp_path, capsys, "--record", str(linked))
    assert_refused(code, out, err, f"{linked}: is a symbolic link, not a folder")
    assert list((tmp_path / "elsewhere").iterdir()) == []


def test_replay_does_not_follow_a_body_out_of_its_folder(recording, tmp_path, capsys):
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"kind": "NodeList", "items": [], "password": "do-not-print"}))
    body = body_of(recording, "GET /api/v1/nodes?limit=500")
    body.unlink()
    body.symlink_to(secret)
    code, out, err = run(capsys, ["--stack", "seed-rdma", "--replay", str(recording)])
    assert_refused(code, out, err, f"{body} is a symbolic link, not a regular file")
    assert "do-not-print" not in out + err


def test_replay_refuses_a_symlinked_index_and_body_names_with_a_path(recording, tmp_path, capsys):
    index = json.loads((recording / "recording.json").read_text())
    (recording / "index.json").write_text(json.dumps(index))
    (recording / "recording.json").unlink()
    (recording / "recording.json").symlink_to(recording / "index.json")
    code, out, err = run(capsys, ["--stack", "seed-rdma", "--replay", str(recording)])
    assert_refused(code, out, err, "recording.json is a symbolic link")
    (recording / "recording.json").unlink()
    index["responses"]["GET /api/v1/nodes?limit=500"]["body"] = "../outside.json"
    (recording / "recording.json").write_text(json.dumps(index))
    code, out, err = run(capsys, ["--stack", "seed-rdma", "--replay", str(recording)])
    assert_refused(code, out, err, "needs an integer 'status' and a 'body' file name inside the recording's folder")


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_replay_refuses_a_fifo_or_folder_where_a_body_belongs(kind, recording, capsys):
    body = body_of(recording, "GET /api/v1/nodes?limit=500")
    body.unlink()
    os.mkfifo(body) if kind == "fifo" else body.mkdir()
    code, out, err = run(capsys, ["--stack", "seed-rdma", "--replay", str(recording)])
    assert_refused(code, out, err, f"{body} is {'a FIFO' if kind == 'fifo' else 'a folder'}, not a regular file")
