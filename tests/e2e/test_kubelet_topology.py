"""Step 2 decided by the real kubelet: the Topology Manager settings gpu-fabric renders, loaded by kubelet v1.37.2,
admit and refuse exactly the pods gpu-fabric predicts, and ``gpu-fabric verify`` reads them back through ``/configz``.

Each kubelet (``scripts/control-plane kubelet``: fake container runtime, fake device plugins reporting NUMA
affinity, a fake two-NUMA-node topology, all in a private mount namespace) loads, through ``--config-dir``, the
topology drop-in a stack renders: the node-group user data's (nodeadm's ``spec.kubelet.config``, aws-efa) or the
kubelet topology agent's (seed-rdma with each topology setting). A corpus of pods (aligned, misaligned, several
containers, init containers, with and without exclusive CPUs) is run on a fresh kubelet per group, and each
outcome -- admitted, or Failed with ``TopologyAffinityError`` -- is compared with
:mod:`gpu_fabric.kube.topology_admission`'s prediction for the same node and sequence. The tests print N/N.

Needs root (or CAP_SYS_ADMIN) for the private mount namespace; nothing on the host changes, and the last test
asserts it (the sysctls the kubelet would rewrite, ``/var/lib/kubelet``, ``/var/log/containers``, cgroups).
"""

from __future__ import annotations

import base64
import email
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Optional

import pytest
import yaml

from e2e.conftest import _unavailable
from e2e.engine import ControlPlane, gpu_fabric, output_of, render_example_stack, rendered_objects, wait_for
from gpu_fabric.kube.topology_admission import NodeState, NodeTopology

GPU, EFA = "nvidia.com/gpu", "vpc.amazonaws.com/efa"
DEVICES = (f"{GPU}=8/2", f"{EFA}=16/2")
"""p5en.48xlarge-like: 8 GPUs and 16 EFA, half on each NUMA node (scripts/control_plane_kubelet.py)."""
TUNABLES = ("vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
            "kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes")
DECISION_TIMEOUT = 60


def host_state() -> dict[str, Any]:
    """What a kubelet could change on the host, read from outside its namespace."""
    def listing(path: str) -> Optional[list[str]]:
        return sorted(os.listdir(path)) if os.path.isdir(path) else None

    cgroups = {}
    for top in sorted(os.listdir("/sys/fs/cgroup")) if os.path.isdir("/sys/fs/cgroup") else []:
        path = os.path.join("/sys/fs/cgroup", top)
        if os.path.isdir(path) and not os.path.islink(path):
            cgroups[top] = sorted(entry for entry in os.listdir(path) if os.path.isdir(os.path.join(path, entry)))
    return {"sysctls": {name: Path(f"/proc/sys/{name}").read_text() for name in TUNABLES},
            "/var/lib/kubelet": listing("/var/lib/kubelet"), "/var/log/containers": listing("/var/log/containers"),
            "/var/log/pods": listing("/var/log/pods"), "cgroups": cgroups}


def _can_make_a_private_mount_namespace() -> str:
    if shutil.which("unshare") is None:
        return "unshare(1) is not installed"
    done = subprocess.run(["unshare", "--mount", "--propagation", "private", "true"], capture_output=True, text=True)
    return "" if done.returncode == 0 else f"no private mount namespace here (needs root or CAP_SYS_ADMIN): {done.stderr.strip()}"


@pytest.fixture(scope="module")
def kubelet_plane(engine_bin: Path, tmp_path_factory):
    reason = _can_make_a_private_mount_namespace()
    if reason:
        _unavailable(f"the real-kubelet tests need a private mount namespace: {reason}")
    for tool in ("kubelet", "fakenode"):
        if not (engine_bin / tool).is_file():
            _unavailable(f"{engine_bin / tool} is not built (scripts/engine-tools builds the kube-node tool)")
    before = host_state()
    # A short folder: the kubelet's unix sockets live under it (107 bytes a path); removed by plane.stop().
    plane = ControlPlane.start(Path(tempfile.mkdtemp(prefix="gf-kubelet-", dir="/tmp")) / "p", engine_bin)
    try:
        plane.ensure_namespace("team-a")
        yield plane, before
    finally:
        plane.stop()


# ---------------------------------------------------------------------------------- rendered settings


def agent_settings(tmp: Path, topology: dict[str, Any]) -> tuple[bytes, dict[str, Any]]:
    """The drop-in the kubelet topology agent installs for seed-rdma's pool with ``topology``, and the settings
    (``topology.json``) it checks ``/configz`` against: both from the agent's rendered ConfigMap."""
    def edit(config: dict) -> None:
        config["gpu-fabric:pools"][0]["topology"] = topology

    label = "_".join(str(v) for v in topology.values()).replace("-", "")
    for obj in rendered_objects(render_example_stack(tmp, "seed-rdma", f"seed-rdma.{label}", edit)):
        if obj.get("kind") == "ConfigMap" and "50-gpu-fabric-topology.conf" in obj.get("data", {}):
            return obj["data"]["50-gpu-fabric-topology.conf"].encode(), json.loads(obj["data"]["topology.json"])
    raise AssertionError("seed-rdma rendered no kubelet topology agent ConfigMap")


def user_data_dropin(tmp: Path) -> bytes:
    """What nodeadm makes of the aws-efa stack's node-group user data: its NodeConfig's ``spec.kubelet.config``
    as a KubeletConfiguration drop-in (nodeadm merges it into the kubelet's configuration the same way)."""
    out = render_example_stack(tmp, "aws-efa", "aws-efa", lambda config: None)
    resources = json.loads((out / "resources.json").read_text())
    for text in json.dumps(resources).split('"userData": "')[1:]:
        document = base64.b64decode(text.split('"', 1)[0]).decode()
        if not document.startswith("MIME-Version"):
            continue
        for part in email.message_from_string(document).walk():
            if part.get_content_type() == "application/node.eks.aws":
                node_config = yaml.safe_load(part.get_payload())
                config = node_config["spec"]["kubelet"]["config"]
                return yaml.safe_dump({"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
                                       **config}).encode()
    raise AssertionError("aws-efa rendered no nodeadm NodeConfig user data")


# ------------------------------------------------------------------------------------------------ pods


def container(name: str, gpus: int, efas: int, cpu: Optional[str]) -> dict[str, Any]:
    limits: dict[str, Any] = {key: str(count) for key, count in ((GPU, gpus), (EFA, efas)) if count}
    if cpu:
        limits.update({"cpu": cpu, "memory": "100Mi"})
    return {"name": name, "image": "registry.k8s.io/pause:3.10", "resources": {"limits": limits}}


def pod(name: str, node: str, shape: list[tuple[int, int]], cpu: Optional[str] = None,
        init: Optional[list[tuple[int, int]]] = None) -> dict[str, Any]:
    """A pod bound to ``node`` (nodeName: the kubelet alone decides) with one container per ``(GPUs, EFA)``."""
    spec: dict[str, Any] = {"nodeName": node, "automountServiceAccountToken": False,
                            "terminationGracePeriodSeconds": 0,
                            "containers": [container(f"c{i}", g, e, cpu) for i, (g, e) in enumerate(shape)]}
    if init:
        spec["initContainers"] = [container(f"init{i}", g, e, cpu) for i, (g, e) in enumerate(init)]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "team-a"}, "spec": spec}


# Groups run each on a fresh kubelet, in order: (name, containers, init containers).
CORPUS: list[list[tuple[str, list[tuple[int, int]], Optional[list[tuple[int, int]]]]]] = [
    [("aligned", [(4, 8)], None), ("misaligned", [(1, 12)], None), ("second-numa", [(4, 8)], None),
     ("one-too-many", [(1, 2)], None)],
    [("two-containers", [(4, 8), (4, 8)], None)],
    [("init-then-app", [(4, 8)], [(4, 8)]), ("small", [(1, 2)], None), ("no-devices", [(0, 0)], None)],
    [("quarter-a", [(2, 4)], None), ("quarter-b", [(2, 4)], None), ("quarter-c", [(2, 4)], None),
     ("across", [(2, 12)], None)],
]

SETTINGS = [
    {"policy": "restricted", "scope": "container"},
    {"policy": "single-numa-node", "scope": "container"},
    {"policy": "single-numa-node", "scope": "pod"},
    {"policy": "best-effort", "scope": "container"},
    {"policy": "single-numa-node", "scope": "container", "cpuManagerPolicy": "static", "reservedSystemCPUs": "0"},
]


def decision(cluster: ControlPlane, name: str) -> Optional[tuple[bool, str]]:
    """``(admitted, reason)`` once the kubelet decided on the pod, else ``None``."""
    from kubernetes.dynamic.exceptions import NotFoundError

    try:
        found = cluster.resource("v1", "Pod").get(name=name, namespace="team-a").to_dict()
    except NotFoundError:
        return None
    status = found.get("status") or {}
    if status.get("phase") == "Failed":
        return False, status.get("reason") or ""
    if status.get("phase") == "Running" or status.get("containerStatuses") or status.get("initContainerStatuses"):
        return True, ""
    return None


def configz(cluster: ControlPlane, node: str) -> dict[str, Any]:
    """The kubelet's ``/configz`` through the API server's node proxy (as ``gpu-fabric verify`` reads it)."""
    response = cluster.api.call_api(f"/api/v1/nodes/{node}/proxy/configz", "GET", _preload_content=False,
                                    _return_http_data_only=True)
    return json.loads(response.data.decode())["kubeletconfig"]


def start_kubelet(cluster: ControlPlane, engine_bin: Path, node: str, dropin: bytes, tmp: Path,
                  labels: str = "") -> None:
    config_dir = tmp / f"{node}-config.d"
    config_dir.mkdir()
    (config_dir / "50-gpu-fabric-topology.conf").write_bytes(dropin)
    options = ["--config-dir", str(config_dir), "--devices", *DEVICES]
    if labels:
        options += ["--labels", labels]
    cluster.kubelet(node, *options, engine_bin=engine_bin)

    def devices_allocatable() -> bool:
        node_object = cluster.resource("v1", "Node").get(name=node).to_dict()
        allocatable = (node_object.get("status") or {}).get("allocatable") or {}
        return allocatable.get(GPU) == "8" and allocatable.get(EFA) == "16"

    wait_for(f"{node}: 8 {GPU} and 16 {EFA} allocatable", devices_allocatable, timeout=60)


def kubelet_log(cluster: ControlPlane, node: str, pod_name: str) -> str:
    """The kubelet's log lines on ``pod_name``'s topology admission (to explain a disagreement)."""
    log = cluster.folder / "logs" / f"kubelet-{node}.log"
    lines = log.read_text(errors="replace").splitlines() if log.is_file() else []
    return "\n".join(f"    | {line[:400]}" for line in lines
                     if pod_name in line and any(word in line for word in ("opology", "hint", "Hint", "llocat")))[-6000:]


def node_topology(setting: dict[str, Any]) -> NodeTopology:
    """The node the kubelet sees: the fake two-NUMA-node topology, cpu0 on node 0 and cpu1 on node 1."""
    reserved = frozenset(int(cpu) for cpu in setting.get("reservedSystemCPUs", "").split(",") if cpu)
    return NodeTopology(devices={GPU: (4, 4), EFA: (8, 8)}, cpus=((0,), (1,)), reserved_cpus=reserved,
                        policy=setting["policy"], scope=setting["scope"],
                        cpu_manager_policy=setting.get("cpuManagerPolicy", "none"))


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: "/".join(str(v) for v in s.values()))
def test_the_kubelet_admits_and_refuses_as_gpu_fabric_predicts(kubelet_plane, engine_bin: Path, tmp_path: Path,
                                                              setting: dict[str, Any]):
    cluster, _ = kubelet_plane
    dropin, _ = agent_settings(tmp_path, setting)
    cpu = "1" if setting.get("cpuManagerPolicy") == "static" else None
    agreed, total, rows = 0, 0, []
    label = "-".join(str(v) for v in setting.values()).replace(",", "")
    for index, group in enumerate(CORPUS):
        node = f"tm-{label}-{index}".lower()
        start_kubelet(cluster, engine_bin, node, dropin, tmp_path)
        try:
            loaded = configz(cluster, node)
            for key in ("topologyManagerPolicy", "topologyManagerScope"):
                assert loaded[key] == yaml.safe_load(dropin)[key], (key, loaded)
            predictor = NodeState(node_topology(setting))
            for name, shape, init in group:
                manifest = pod(name, node, shape, cpu, init)
                predicted = predictor.admit(manifest)
                cluster.resource("v1", "Pod").create(body=manifest, namespace="team-a")
                admitted, reason = wait_for(f"the kubelet's decision on {name}", lambda: decision(cluster, name),
                                            timeout=DECISION_TIMEOUT)
                total += 1
                agree = admitted == predicted.admitted and (admitted or reason == predicted.reason)
                agreed += agree
                rows.append(f"  {name:16} kubelet {'admitted' if admitted else reason:22} gpu-fabric "
                            f"{'admitted' if predicted.admitted else predicted.reason:22} {'ok' if agree else 'DISAGREE'}"
                            + ("" if agree else f" ({predicted.detail})\n" + kubelet_log(cluster, node, name)))
            for name, _, _ in group:
                cluster.resource("v1", "Pod").delete(name=name, namespace="team-a", body={"gracePeriodSeconds": 0})
        finally:
            cluster.kubelet(node, "--stop")
    print(f"\n{label}: the kubelet and gpu-fabric agree on {agreed}/{total} pods\n" + "\n".join(rows))
    assert agreed == total, "\n".join(rows)


def test_verify_reads_the_user_data_settings_back_from_the_real_kubelet(kubelet_plane, engine_bin: Path,
                                                                         tmp_path: Path):
    cluster, _ = kubelet_plane
    probe = gpu_fabric("verify", "--stack", "aws-efa", "--kubeconfig", str(cluster.kubeconfig), "--json")
    pools = {pool["name"]: pool for pool in json.loads(probe.stdout)["pools"]}
    pool = pools["gpustack--nvidia-h100-linux-amd64"]
    node = "ip-10-0-7-7.ec2.internal"
    start_kubelet(cluster, engine_bin, node, user_data_dropin(tmp_path), tmp_path,
                  labels=",".join(f"{key}={value}" for key, value in pool["selector"].items()))
    try:
        done = gpu_fabric("verify", "--stack", "aws-efa", "--kubeconfig", str(cluster.kubeconfig), "--json")
        report = json.loads(done.stdout)
        (checked,) = [pool for pool in report["pools"] if pool["name"] == "gpustack--nvidia-h100-linux-amd64"]
        (seen,) = [n for n in checked["nodes"] if n["name"] == node]
        found = {check["check"]: (check["found"], check["status"]) for check in seen["checks"]}
        for key, want in (("topologyManagerPolicy", "restricted"), ("topologyManagerScope", "container"),
                          ("cpuManagerPolicy", "none")):
            assert found.get(f"kubelet {key}") == (want, "pass"), (key, json.dumps(seen), output_of(done))
    finally:
        cluster.kubelet(node, "--stop")


def test_the_topology_agent_changes_what_the_real_kubelets_configz_reports(kubelet_plane, engine_bin: Path,
                                                                            tmp_path: Path):
    """Step 2 on nodes the stack does not provision: the agent's reconcile, against a real kubelet's config folder,
    installs the pool's drop-in and restarts the kubelet; /configz then reports the pool's settings."""
    from gpu_fabric.kubelet_agent.host_files import HostFiles
    from gpu_fabric.kubelet_agent.reconcile import Agent

    cluster, _ = kubelet_plane
    node = "agent-node"
    before, _ = agent_settings(tmp_path, {"policy": "best-effort", "scope": "container"})
    wanted, desired = agent_settings(tmp_path, {"policy": "single-numa-node", "scope": "pod"})
    start_kubelet(cluster, engine_bin, node, before, tmp_path)
    try:
        assert configz(cluster, node)["topologyManagerPolicy"] == "best-effort"
        launch = json.loads((cluster.folder / "processes.json").read_text())["kubelets"][node]
        config_dir = launch["configDir"]
        root_dir = next(arg.split("=", 1)[1] for arg in launch["kubelet"] if arg.startswith("--root-dir="))

        class KubeletService:
            """systemctl for the test's kubelet: scripts/control-plane kubelet --restart."""
            restarts = 0

            def restart(self, unit: str) -> None:
                KubeletService.restarts += 1
                cluster.kubelet(node, "--restart", engine_bin=engine_bin)

            stop = start = restart

        class FreeLease:
            def acquire(self) -> bool:
                return True

            def release(self) -> None:
                pass

            def holder_now(self) -> str:
                return node

        agent = Agent(proc=Path("/proc"), files=HostFiles(Path("/"), (config_dir, root_dir)),
                      dropin_name="50-gpu-fabric-topology.conf", dropin=wanted,
                      desired=desired,
                      services=KubeletService(), lease=FreeLease(), configz=lambda _kubelet: configz(cluster, node),
                      cordoned=lambda: False, log=lambda line: None)
        status = agent.reconcile()
        deadline = time.monotonic() + 60
        while not status.ready and time.monotonic() < deadline:
            time.sleep(1)
            status = agent.reconcile()
        assert status.ready, status.message
        assert KubeletService.restarts == 1
        loaded = configz(cluster, node)
        assert (loaded["topologyManagerPolicy"], loaded["topologyManagerScope"]) == ("single-numa-node", "pod")
        assert Path(config_dir, "50-gpu-fabric-topology.conf").read_bytes() == wanted
        assert agent.reconcile().ready and KubeletService.restarts == 1  # nothing left to change
    finally:
        cluster.kubelet(node, "--stop")


def test_nothing_on_the_host_changed(kubelet_plane):
    _, before = kubelet_plane
    assert host_state() == before
