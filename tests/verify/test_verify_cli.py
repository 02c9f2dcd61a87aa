"""``gpu-fabric verify`` end to end: the official client against a fake API server on 127.0.0.1."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import yaml
from support.fake_kube import FakeApiServer, kubelet_config, node
from support.verify_clusters import (
    EFA_PLUGIN,
    RDMA_LABEL,
    SEED_ALLOCATABLE,
    SEED_LOCAL_QUEUE,
    SEED_LOCAL_QUEUE_PATH,
    SEED_NODES,
    efa_cluster,
    seed_cluster,
)

from gpu_fabric.cli import main

PROJECT_DIR = Path(__file__).resolve().parents[2]
POOL = "gpustack--nvidia-a10g-linux-amd64"


def run(capsys, args):
    code = main(["verify", "--project", str(PROJECT_DIR), *args])
    out, err = capsys.readouterr()
    return code, out, err


def verify_against(cluster, tmp_path, capsys, *args, stack="seed-rdma", token=None):
    with FakeApiServer(cluster) as server:
        kubeconfig = server.kubeconfig(tmp_path, token=token)
        return run(capsys, ["--stack", stack, "--kubeconfig", str(kubeconfig), *args])


def problems(out):
    return [(p["subject"], p["check"], p["expected"], p["found"], p["status"]) for p in json.loads(out)["problems"]]


def test_healthy_seed_cluster_passes(tmp_path, capsys):
    code, out, err = verify_against(seed_cluster(), tmp_path, capsys)
    assert code == 0, out + err
    assert "result: ok" in out
    assert f"pool {POOL} (rdma): ok" in out
    assert "a10g-node-1" in out and "control-plane-1" not in out  # only the pool's nodes are judged


def test_healthy_seed_cluster_as_json(tmp_path, capsys):
    code, out, _ = verify_against(seed_cluster(), tmp_path, capsys, "--json")
    assert code == 0
    report = json.loads(out)
    assert report["result"] == "pass" and report["problems"] == []
    (pool,) = report["pools"]
    assert pool["name"] == POOL and pool["selector"]["feature.gpustack.ai/rdma.capable"] == "true"
    assert [n["name"] for n in pool["nodes"]] == list(SEED_NODES)
    checks = {c["check"]: c for c in pool["nodes"][0]["checks"]}
    assert checks["allocatable device.gpustack.ai/rdma"]["found"] == 2
    assert checks["allocatable nvidia.com/gpu"]["found"] == 4
    assert checks["kubelet topologyManagerPolicy"]["found"] == "restricted"
    assert checks["kubelet topologyManagerScope"]["found"] == "container"
    assert checks["kubelet cpuManagerPolicy"]["found"] == "none"
    subjects = {o["subject"] for o in report["objects"]}
    assert {f"LocalQueue team-a/{SEED_LOCAL_QUEUE}", "KVCacheBackend mooncake-dram", "ModelDeployment team-a/qwen-pd"} <= subjects


def test_a_node_missing_one_rdma_endpoint_fails(tmp_path, capsys):
    cluster = seed_cluster()
    cluster.nodes["a10g-node-2"]["status"]["allocatable"]["device.gpustack.ai/rdma"] = "1"
    code, out, _ = verify_against(cluster, tmp_path, capsys, "--json")
    assert code == 1
    assert problems(out) == [("node a10g-node-2", "allocatable device.gpustack.ai/rdma", 2, 1, "fail")]


def test_a_node_without_the_rdma_resource_fails_as_absent(tmp_path, capsys):
    cluster = seed_cluster()
    del cluster.nodes["a10g-node-1"]["status"]["allocatable"]["device.gpustack.ai/rdma"]
    code, out, _ = verify_against(cluster, tmp_path, capsys)
    assert code == 1
    assert "node a10g-node-1: allocatable device.gpustack.ai/rdma: expected 2, found absent" in out


def test_a_kubelet_on_another_topology_policy_fails(tmp_path, capsys):
    cluster = seed_cluster()
    cluster.configz["a10g-node-1"] = kubelet_config(policy="best-effort")
    code, out, _ = verify_against(cluster, tmp_path, capsys)
    assert code == 1
    assert "node a10g-node-1: kubelet topologyManagerPolicy: expected restricted, found best-effort" in out
    assert "best-effort (want restricted)" in out  # the table cell shows the difference too


def test_a_kubelet_without_topology_keys_runs_the_defaults(tmp_path, capsys):
    cluster = seed_cluster()
    config = kubelet_config()
    for key in ("topologyManagerPolicy", "topologyManagerScope", "cpuManagerPolicy"):
        del config[key]
    cluster.configz["a10g-node-2"] = config
    code, out, _ = verify_against(cluster, tmp_path, capsys, "--json")
    assert code == 1
    assert problems(out) == [("node a10g-node-2", "kubelet topologyManagerPolicy", "restricted", "none", "fail")]


def test_a_missing_tenant_local_queue_fails(tmp_path, capsys):
    cluster = seed_cluster()
    del cluster.objects[SEED_LOCAL_QUEUE_PATH]
    code, out, _ = verify_against(cluster, tmp_path, capsys)
    assert code == 1
    assert f"LocalQueue team-a/{SEED_LOCAL_QUEUE}: exists: expected present, found absent" in out


def test_too_few_nodes_and_a_not_ready_node_fail(tmp_path, capsys):
    cluster = seed_cluster()
    del cluster.nodes["a10g-node-1"]["metadata"]["labels"]["feature.gpustack.ai/rdma.capable"]
    cluster.nodes["a10g-node-2"]["status"]["conditions"][-1]["status"] = "False"
    code, out, _ = verify_against(cluster, tmp_path, capsys, "--json")
    assert code == 1
    assert problems(out) == [(f"pool {POOL}", "nodes", ">= 2", 1, "fail"),
                             ("node a10g-node-2", "Ready", "True", "False", "fail")]


def test_an_unreachable_kubelet_fails_that_node(tmp_path, capsys):
    cluster = seed_cluster()
    cluster.configz["a10g-node-2"] = 503
    code, out, _ = verify_against(cluster, tmp_path, capsys)
    assert code == 1
    assert "node a10g-node-2: kubelet configz: expected readable, found unreadable" in out
    assert "HTTP 503" in out


def test_a_node_without_a_kubelet_is_not_asked_and_its_configz_is_named_as_not_checked(tmp_path, capsys):
    # What a control plane without kubelets shows: a Node object nobody registered has no addresses,
    # and the API server's node proxy answers 500 "no preferred addresses found" for it.
    cluster = seed_cluster()
    del cluster.nodes["a10g-node-2"]["status"]["addresses"]
    cluster.configz["a10g-node-2"] = 500
    code, out, _ = verify_against(cluster, tmp_path, capsys, "--json")
    report = json.loads(out)
    assert problems(out) == [("node a10g-node-2", "kubelet configz", "readable", "not checked", "inconclusive")]
    assert "no kubelet has registered it" in report["problems"][0]["detail"]
    assert code == 1


def test_extra_nodes_count_towards_the_pool(tmp_path, capsys):
    cluster = seed_cluster()
    cluster.add_node(node("a10g-node-3", dict(RDMA_LABEL), dict(SEED_ALLOCATABLE)), kubelet_config())
    code, out, _ = verify_against(cluster, tmp_path, capsys, "--json")
    assert code == 0
    assert json.loads(out)["pools"][0]["checks"][0]["found"] == 3


def test_nodes_are_listed_once_and_only_pool_nodes_are_asked_for_configz(tmp_path, capsys):
    cluster = seed_cluster()
    code, _, _ = verify_against(cluster, tmp_path, capsys)
    assert code == 0
    assert [r for r in cluster.requests if r.startswith("/api/v1/nodes?")] == ["/api/v1/nodes?limit=500"]
    assert sorted(r for r in cluster.requests if r.endswith("/proxy/configz")) == [
        f"/api/v1/nodes/{name}/proxy/configz" for name in SEED_NODES]


# -- cannot verify: exit 2, one line, no traceback --------------------------------------------------


def assert_refused(code, out, err, *fragments):
    assert code == 2, out + err
    assert out == ""
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    for fragment in fragments:
        assert fragment in err


def test_unreachable_cluster(tmp_path, capsys):
    with FakeApiServer(seed_cluster()) as server:
        kubeconfig = server.kubeconfig(tmp_path)
    code, out, err = run(capsys, ["--stack", "seed-rdma", "--kubeconfig", str(kubeconfig)])
    assert_refused(code, out, err, "cannot reach http://127.0.0.1:")


def test_refused_credential(tmp_path, capsys):
    code, out, err = verify_against(seed_cluster(), tmp_path, capsys, token="stolen")
    assert_refused(code, out, err, "refused the credential", "HTTP 401")


def test_missing_kueue_crd(tmp_path, capsys):
    cluster = seed_cluster()
    del cluster.apis["kueue.x-k8s.io/v1beta2"]
    code, out, err = verify_against(cluster, tmp_path, capsys)
    assert_refused(code, out, err, "does not serve kueue.x-k8s.io/v1beta2 (is Kueue installed?)", "LocalQueue")


def test_missing_gpustack_kind(tmp_path, capsys):
    cluster = seed_cluster()
    (api_version,) = [version for version in cluster.apis if version.startswith("worker.gpustack.ai/")]
    cluster.apis[api_version] = [r for r in cluster.apis[api_version] if r["kind"] != "ModelDeployment"]
    code, out, err = verify_against(cluster, tmp_path, capsys)
    assert_refused(code, out, err, f"serves {api_version} but not kind ModelDeployment")


def test_missing_kubeconfig_file(tmp_path, capsys):
    code, out, err = run(capsys, ["--stack", "seed-rdma", "--kubeconfig", str(tmp_path / "nope")])
    assert_refused(code, out, err, "no such file")


def test_unknown_context(tmp_path, capsys):
    code, out, err = verify_against(seed_cluster(), tmp_path, capsys, "--context", "elsewhere")
    assert_refused(code, out, err, "elsewhere")


def project_with_stack(tmp_path, values):
    project = tmp_path / "project"
    shutil.copytree(PROJECT_DIR / "stacks", project / "stacks")
    (project / "stacks" / "Pulumi.probe.yaml").write_text(yaml.safe_dump({"config": values}))
    return project


def seed_stack_values():
    return yaml.safe_load((PROJECT_DIR / "stacks" / "Pulumi.seed-rdma.yaml").read_text())["config"]


def test_invalid_stack(tmp_path, capsys):
    values = seed_stack_values()
    values["gpu-fabric:pools"][0]["interfacesPerNode"] = 0
    project = project_with_stack(tmp_path, values)
    code = main(["verify", "--project", str(project), "--stack", "probe", "--kubeconfig", str(tmp_path / "unused")])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert "pools[0]" in err and "Traceback" not in err


def test_the_stack_context_picks_the_cluster(tmp_path, capsys, monkeypatch):
    values = seed_stack_values()
    values["gpu-fabric:kubernetes"] = {"context": "gpu-cluster"}
    project = project_with_stack(tmp_path, values)
    with FakeApiServer(seed_cluster()) as server:
        # The ambient kubeconfig's current context points elsewhere; the stack's context is the right one.
        wrong = FakeApiServer(seed_cluster()).kubeconfig(tmp_path, context="laptop")
        right = server.kubeconfig(tmp_path, context="gpu-cluster")
        monkeypatch.setenv("KUBECONFIG", f"{wrong}:{right}")
        code = main(["verify", "--project", str(project), "--stack", "probe"])
    out, err = capsys.readouterr()
    assert code == 0, out + err
    assert "(context gpu-cluster)" in out


# -- record and replay -----------------------------------------------------------------------------


def test_a_recording_replays_to_the_same_report(tmp_path, capsys):
    cluster = seed_cluster()
    cluster.configz["a10g-node-1"] = kubelet_config(policy="single-numa-node")
    recording = tmp_path / "recording"
    code, live, _ = verify_against(cluster, tmp_path, capsys, "--json", "--record", str(recording))
    assert code == 1
    assert (recording / "recording.json").is_file()
    code, replayed, err = run(capsys, ["--stack", "seed-rdma", "--json", "--replay", str(recording)])
    assert code == 1, err
    live_report, replayed_report = json.loads(live), json.loads(replayed)
    assert replayed_report["target"].startswith(f"recording {recording}")
    live_report.pop("target"), replayed_report.pop("target")
    assert replayed_report == live_report
    assert ("node a10g-node-1", "kubelet topologyManagerPolicy", "restricted", "single-numa-node", "fail") in problems(replayed)


def test_a_recording_holds_the_raw_responses(tmp_path, capsys):
    recording = tmp_path / "recording"
    verify_against(seed_cluster(), tmp_path, capsys, "--record", str(recording))
    index = json.loads((recording / "recording.json").read_text())
    entry = index["responses"]["GET /api/v1/nodes/a10g-node-1/proxy/configz"]
    assert entry["status"] == 200
    assert json.loads((recording / entry["body"]).read_text())["kubeletconfig"]["topologyManagerPolicy"] == "restricted"


def test_replay_refuses_a_missing_or_malformed_recording(tmp_path, capsys):
    code, out, err = run(capsys, ["--stack", "seed-rdma", "--replay", str(tmp_path / "none")])
    assert_refused(code, out, err, "recording.json does not exist")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "recording.json").write_text("{not json")
    code, out, err = run(capsys, ["--stack", "seed-rdma", "--replay", str(tmp_path / "bad")])
    assert_refused(code, out, err, "not a readable JSON recording")
    (tmp_path / "bad" / "recording.json").write_text(json.dumps({"format": "something-else"}))
    code, out, err = run(capsys, ["--stack", "seed-rdma", "--replay", str(tmp_path / "bad")])
    assert_refused(code, out, err, "not a gpu-fabric-verify-recording/v1 recording")


def test_replay_refuses_a_recording_that_lacks_a_response(tmp_path, capsys):
    recording = tmp_path / "recording"
    verify_against(seed_cluster(), tmp_path, capsys, "--record", str(recording))
    index = json.loads((recording / "recording.json").read_text())
    del index["responses"]["GET /api/v1/nodes/a10g-node-2/proxy/configz"]
    (recording / "recording.json").write_text(json.dumps(index))
    code, out, err = run(capsys, ["--stack", "seed-rdma", "--replay", str(recording)])
    assert_refused(code, out, err, "no response for GET /api/v1/nodes/a10g-node-2/proxy/configz")


def test_replay_refuses_a_body_that_is_not_json(tmp_path, capsys):
    recording = tmp_path / "recording"
    verify_against(seed_cluster(), tmp_path, capsys, "--record", str(recording))
    index = json.loads((recording / "recording.json").read_text())
    (recording / index["responses"]["GET /api/v1/nodes?limit=500"]["body"]).write_text("<html>proxy error</html>")
    code, out, err = run(capsys, ["--stack", "seed-rdma", "--replay", str(recording)])
    assert_refused(code, out, err, "listing nodes", "not JSON")


# -- NCCL logs ---------------------------------------------------------------------------------------

NCCL_LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "nccl"


def test_nccl_logs_join_the_report(tmp_path, capsys):
    code, out, _ = verify_against(seed_cluster(), tmp_path, capsys, "--nccl-log", str(NCCL_LOGS / "rdma-net-ib.log"))
    assert code == 0, out
    assert "NET/IB, 2 device(s)" in out
    code, out, _ = verify_against(seed_cluster(), tmp_path, capsys, "--json",
                                  "--nccl-log", str(NCCL_LOGS / "rdma-net-ib.log"),
                                  "--nccl-log", str(NCCL_LOGS / "socket-fallback.log"))
    assert code == 1
    report = json.loads(out)
    assert [log["result"] for log in report["ncclLogs"]] == ["pass", "fail"]
    assert [p["subject"] for p in report["problems"]] == [f"NCCL log {NCCL_LOGS / 'socket-fallback.log'}"]


def test_an_inconclusive_nccl_log_is_not_a_pass(tmp_path, capsys):
    code, out, _ = verify_against(seed_cluster(), tmp_path, capsys, "--nccl-log", str(NCCL_LOGS / "no-transport.log"))
    assert code == 1
    assert "result: INCONCLUSIVE" in out


def test_a_malformed_nccl_log_is_refused_before_the_cluster_is_read(tmp_path, capsys):
    (tmp_path / "core").write_bytes(b"\x00\x01")
    code, out, err = run(capsys, ["--stack", "seed-rdma", "--kubeconfig", str(tmp_path / "unused"),
                                  "--nccl-log", str(tmp_path / "core")])
    assert_refused(code, out, err, "NUL bytes")


# -- the EFA stack: device-plugin DaemonSet, EFA counts, an explicit kubeconfig over the EKS target ------


def test_healthy_efa_cluster_passes_with_the_efa_log(tmp_path, capsys):
    code, out, err = verify_against(efa_cluster(), tmp_path, capsys, "--nccl-log", str(NCCL_LOGS / "efa-ofi-1.16.log"),
                                    stack="aws-efa")
    assert code == 0, out + err
    assert re.search(r"DaemonSet kube-system/aws-efa-k8s-device-plugin +pods ready +4 +ok", out)
    assert "EFA, 32 NICs" in out


def test_an_efa_node_with_31_devices_a_lost_taint_and_a_lagging_plugin_fail(tmp_path, capsys):
    cluster = efa_cluster()
    cluster.nodes["ip-10-0-1-2"]["status"]["allocatable"]["vpc.amazonaws.com/efa"] = "31"
    cluster.nodes["ip-10-0-1-1"]["spec"] = {}  # the GPU taint is gone
    cluster.objects[EFA_PLUGIN]["status"]["numberReady"] = 3
    code, out, _ = verify_against(cluster, tmp_path, capsys, "--json", stack="aws-efa")
    assert code == 1
    assert problems(out) == [
        ("node ip-10-0-1-1", "taint nvidia.com/gpu", "nvidia.com/gpu:NoSchedule", "absent", "fail"),
        ("node ip-10-0-1-2", "allocatable vpc.amazonaws.com/efa", 32, 31, "fail"),
        ("DaemonSet kube-system/aws-efa-k8s-device-plugin", "pods ready", 4, 3, "fail"),
    ]


def test_a_device_plugin_edited_to_run_elsewhere_fails(tmp_path, capsys):
    cluster = efa_cluster()
    template = cluster.objects[EFA_PLUGIN]["spec"]["template"]["spec"]
    rendered = dict(template["nodeSelector"])
    template["nodeSelector"] = {**rendered, "kubernetes.io/arch": "arm64"}
    code, out, _ = verify_against(cluster, tmp_path, capsys, "--json", stack="aws-efa")
    assert code == 1
    ((subject, check, expected, found, status),) = problems(out)
    assert (subject, check, status) == ("DaemonSet kube-system/aws-efa-k8s-device-plugin", "pod nodeSelector", "fail")
    assert expected == rendered and found["kubernetes.io/arch"] == "arm64"


def test_a_refusal_is_recorded_and_replays_to_the_same_refusal(tmp_path, capsys):
    cluster = seed_cluster()
    del cluster.apis["kueue.x-k8s.io/v1beta2"]
    recording = tmp_path / "recording"
    code, out, err = verify_against(cluster, tmp_path, capsys, "--record", str(recording))
    assert_refused(code, out, err, "is Kueue installed?")
    code, out, replayed = run(capsys, ["--stack", "seed-rdma", "--replay", str(recording)])
    assert_refused(code, out, replayed, "is Kueue installed?")
    assert replayed == err


def test_recordings_keep_no_secret_values():
    from gpu_fabric.verify.recording import redact_secret

    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "hf-token"}, "data": {"token": "aGYtc2VjcmV0"}}
    redacted = json.loads(redact_secret(json.dumps(secret).encode()))
    assert redacted["data"] == {"token": "[redacted]"} and redacted["metadata"] == secret["metadata"]
    node_body = json.dumps({"kind": "Node", "data": {"x": "y"}}).encode()
    assert redact_secret(node_body) == node_body
