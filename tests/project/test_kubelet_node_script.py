"""scripts/control_plane_kubelet.py: what the real-kubelet tests' kubelet is given, checked without starting one."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


@pytest.fixture(scope="module")
def kubelet_node():
    spec = importlib.util.spec_from_file_location("control_plane_kubelet", SCRIPTS / "control_plane_kubelet.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["control_plane_kubelet"] = module
    spec.loader.exec_module(module)
    return module


def test_the_fake_numa_tree_gives_every_cpu_one_node(kubelet_node, tmp_path: Path, monkeypatch):
    monkeypatch.setattr(kubelet_node.os, "cpu_count", lambda: 4)
    tree = kubelet_node.fake_numa_tree(tmp_path, nodes=2)
    assert (tree / "node0" / "cpulist").read_text() == "0,2\n"
    assert (tree / "node1" / "cpulist").read_text() == "1,3\n"
    assert sorted(p.name for p in (tree / "node1").iterdir() if p.name.startswith("cpu") and p.is_symlink()) == ["cpu1", "cpu3"]
    assert (tree / "node0" / "distance").read_text() == "10 20\n"
    assert (tree / "online").read_text() == "0-1\n"


def test_the_base_configuration_leaves_the_host_alone_and_admits_only_the_control_planes_clients(kubelet_node, tmp_path):
    config = kubelet_node.base_configuration(tmp_path, tmp_path / "pki", "192.0.2.2", 10250, 10248)
    # No kubepods cgroups, no iptables chains, no node-allocatable enforcement on the host's cgroups.
    assert (config["cgroupsPerQOS"], config["enforceNodeAllocatable"], config["makeIPTablesUtilChains"]) == (False, ["none"], False)
    assert config["authentication"]["anonymous"]["enabled"] is False
    assert config["authentication"]["x509"]["clientCAFile"] == str(tmp_path / "pki" / "client-ca.crt")
    assert config["readOnlyPort"] == 0 and config["healthzBindAddress"] == "127.0.0.1"
    # The topology settings come only from the caller's drop-ins (gpu-fabric's rendered ones).
    assert not any(key.startswith(("topologyManager", "cpuManager")) for key in config)


def test_the_namespace_rewrites_only_copies_and_scratch_folders(kubelet_node, tmp_path):
    script = kubelet_node._namespace_script(tmp_path, tmp_path / "sys-node")
    mounts = [part.strip() for part in script.split("&&") if part.strip().startswith("mount --bind")]
    targets = [mount.split()[-1] for mount in mounts]
    assert targets == ["/sys/devices/system/node", "/var/log", "/var/lib",
                       *(f"/proc/sys/{name}" for name in kubelet_node.KERNEL_TUNABLES)]
    assert all(mount.split()[2].startswith(str(tmp_path)) for mount in mounts)


def test_bad_device_layouts_are_refused_before_anything_starts(kubelet_node, tmp_path, monkeypatch):
    monkeypatch.setattr(kubelet_node, "check_private_namespace", lambda: None)
    monkeypatch.setattr(kubelet_node, "node_address", lambda: "192.0.2.2")
    with pytest.raises(kubelet_node.KubeletNodeError, match="RESOURCE=COUNT/NUMA_NODES"):
        kubelet_node.prepare(tmp_path / "k", "n", tmp_path / "kc", tmp_path / "pki", tmp_path, ["nvidia.com/gpu 8"])



def test_a_root_folder_too_long_for_the_kubelets_sockets_is_refused(kubelet_node, tmp_path, monkeypatch):
    monkeypatch.setattr(kubelet_node, "check_private_namespace", lambda: None)
    monkeypatch.setattr(kubelet_node, "node_address", lambda: "192.0.2.2")
    deep = tmp_path / ("x" * 90)
    with pytest.raises(kubelet_node.KubeletNodeError, match="cannot hold the kubelet's unix sockets"):
        kubelet_node.prepare(deep, "n", tmp_path / "kc", tmp_path / "pki", tmp_path, ["nvidia.com/gpu=8/2"])
    assert not deep.exists()  # refused before anything is written
