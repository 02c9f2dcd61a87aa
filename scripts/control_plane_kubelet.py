"""A real kubelet on this machine for ``scripts/control-plane kubelet``: fake container runtime, fake
NUMA-aware device plugins, a fake two-NUMA-node topology, and nothing on the host changed.

gpu-fabric's real-kubelet tests run the kubelet (``k8s.io/kubernetes/cmd/kubelet``, the module
kube-apiserver is built from) so that its Topology Manager, not gpu-fabric's reading of it, decides
whether a pod's accelerators and NICs are admitted together (the walkthrough's step 2). What it
needs on a CI machine with no containers, no accelerators and one NUMA node
(``research/feasibility-scheduler-kubelet/REPORT.md`` §2):

* ``fakenode cri`` (``scripts/engine/kube-node/main.go``): k8s.io/cri-client's fake runtime;
  ``fakenode deviceplugin``: device plugins that report NUMA affinity.
* A private mount namespace (``unshare --mount``, root or CAP_SYS_ADMIN) in which
  ``/sys/devices/system/node`` is a fake tree of two NUMA nodes (cadvisor reads the topology there),
  the six ``/proc/sys`` files the kubelet's ``setupKernelTunables`` rewrites
  (pkg/kubelet/cm/container_manager_linux.go) are copies, and ``/var/lib`` and ``/var/log`` are
  scratch folders (the kubelet serves device plugins from ``/var/lib/kubelet/device-plugins``
  whatever ``--root-dir`` says). The fake device plugins run inside that namespace too.
* Settings that keep the host untouched: ``cgroupsPerQOS: false`` and ``enforceNodeAllocatable: [none]``
  (no kubepods cgroups), ``makeIPTablesUtilChains: false``, ``failCgroupV1: false`` (cgroup v1 hosts),
  ``failSwapOn: false``.
* **An empty working directory.** The fake runtime leaves a container's LogPath empty, and the
  kubelet's log manager (pkg/kubelet/logs ``Clean``) then deletes every file matching ``"*"`` in its
  working directory when a container is removed. The kubelet starts in a fresh empty folder.

The kubelet reads a base configuration written here (the settings above, its runtime, TLS
authentication by the control plane's client CA) and a ``--config-dir`` of drop-ins the caller fills,
exactly where gpu-fabric's node-group user data installs its topology drop-in on a real node
(``DROPIN_PATH``). It serves on the machine's first global IPv4 address (it refuses a loopback node
IP), on a free port, and accepts only clients with a certificate of the control plane's client CA (the
API server presents the admin certificate: ``--kubelet-client-certificate``).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from pathlib import Path
from typing import Iterable, Optional

import yaml

# pkg/kubelet/cm/container_manager_linux.go setupKernelTunables: the sysctls the kubelet sets unless
# --protect-kernel-defaults; each is a bind-mounted copy inside the kubelet's namespace.
KERNEL_TUNABLES = ("vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
                   "kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes")
NUMA_NODES = 2
SOCKET_ROOT_MAX = 80
"""Longest kubelet root folder whose sockets (``pods-api/<9 digits>``, ``device-plugins/kubelet.sock``) fit sun_path."""
DEFAULT_DEVICES = ("nvidia.com/gpu=8/2", "vpc.amazonaws.com/efa=16/2")
"""p5en.48xlarge-like: 8 GPUs and 16 EFA, half on each NUMA node (2 EFA per GPU)."""


class KubeletNodeError(RuntimeError):
    """Something this machine cannot give the kubelet; the message says what."""


def node_address() -> str:
    """The machine's first global IPv4 address (the kubelet refuses a loopback node IP)."""
    done = subprocess.run(["ip", "-4", "-o", "addr", "show", "scope", "global"], capture_output=True, text=True)
    for line in done.stdout.splitlines():
        words = line.split()
        if "inet" in words:
            return words[words.index("inet") + 1].split("/", 1)[0]
    raise KubeletNodeError("the kubelet needs a non-loopback IPv4 address and this machine has none "
                           "(`ip -4 addr show scope global` lists nothing)")


def free_port(address: str) -> int:
    with socket.socket() as probe:
        probe.bind((address, 0))
        return probe.getsockname()[1]


def check_private_namespace() -> None:
    """Fail in a second, with the reason, where a private mount namespace cannot be made."""
    if shutil.which("unshare") is None:
        raise KubeletNodeError("the kubelet needs unshare(1) (util-linux) for its private mount namespace")
    done = subprocess.run(["unshare", "--mount", "--propagation", "private", "true"], capture_output=True, text=True)
    if done.returncode != 0:
        raise KubeletNodeError("the kubelet runs in a private mount namespace (fake NUMA nodes, scratch /var/lib, "
                               "copies of the sysctls it rewrites), which needs root or CAP_SYS_ADMIN: "
                               f"unshare exited {done.returncode}: {done.stderr.strip()}")
    cpus = os.cpu_count() or 1
    if cpus < NUMA_NODES:
        raise KubeletNodeError(f"a fake topology of {NUMA_NODES} NUMA nodes needs at least {NUMA_NODES} CPUs; "
                               f"this machine has {cpus}")


def fake_numa_tree(folder: Path, nodes: int = NUMA_NODES) -> Path:
    """A ``/sys/devices/system/node`` of ``nodes`` NUMA nodes sharing this machine's CPUs round-robin
    (cpu0 on node0, cpu1 on node1, ...), with the files cadvisor's sysfs reader opens."""
    tree = folder / "sys-node"
    if tree.exists():
        shutil.rmtree(tree)
    cpus = os.cpu_count() or 1
    for node in range(nodes):
        node_dir = tree / f"node{node}"
        node_dir.mkdir(parents=True)
        owned = [cpu for cpu in range(cpus) if cpu % nodes == node]
        for cpu in owned:
            (node_dir / f"cpu{cpu}").symlink_to(f"/sys/devices/system/cpu/cpu{cpu}")
        (node_dir / "cpulist").write_text(",".join(map(str, owned)) + "\n")
        (node_dir / "meminfo").write_text(f"Node {node} MemTotal:       12000000 kB\n"
                                          f"Node {node} MemFree:        10000000 kB\n")
        (node_dir / "distance").write_text(" ".join("10" if other == node else "20" for other in range(nodes)) + "\n")
        for size in ("hugepages-2048kB", "hugepages-1048576kB"):
            pages = node_dir / "hugepages" / size
            pages.mkdir(parents=True)
            for name in ("nr_hugepages", "free_hugepages", "surplus_hugepages"):
                (pages / name).write_text("0\n")
    everything = f"0-{nodes - 1}\n"
    for name in ("online", "possible", "has_cpu", "has_memory", "has_normal_memory"):
        (tree / name).write_text(everything)
    return tree


def base_configuration(folder: Path, pki: Path, address: str, port: int, healthz_port: int) -> dict:
    """The KubeletConfiguration this machine needs (the topology settings come from drop-ins)."""
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
        "failCgroupV1": False, "failSwapOn": False, "cgroupDriver": "cgroupfs",
        # "none", not []: with --config-dir the kubelet re-defaults an empty list to ["pods"], which needs
        # cgroupsPerQOS (pkg/kubelet/apis/config/validation: NodeAllocatableNoneKey skips enforcement).
        "cgroupsPerQOS": False, "enforceNodeAllocatable": ["none"], "makeIPTablesUtilChains": False,
        "containerRuntimeEndpoint": f"unix://{folder / 'cri.sock'}",
        "address": address, "port": port, "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1", "healthzPort": healthz_port,
        "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": False},
                           "x509": {"clientCAFile": str(pki / "client-ca.crt")}},
        "authorization": {"mode": "AlwaysAllow"},
        "evictionHard": {}, "imageGCHighThresholdPercent": 100, "localStorageCapacityIsolation": False,
        # Device allocatable reaches the Node at the next status update (10 s by default).
        "nodeStatusUpdateFrequency": "1s", "nodeStatusReportFrequency": "1s",
        "syncFrequency": "2s", "fileCheckFrequency": "2s",
    }


def _namespace_script(folder: Path, numa_tree: Path) -> str:
    """Mounts of the kubelet's private namespace, then the device plugins in the background, then exec."""
    mounts = [f"mount --bind {numa_tree} /sys/devices/system/node",
              f"mount --bind {folder / 'var-log'} /var/log",
              f"mount --bind {folder / 'var-lib'} /var/lib"]
    for tunable in KERNEL_TUNABLES:
        mounts.append(f"mount --bind {folder / 'sysctl' / tunable.replace('/', '_')} /proc/sys/{tunable}")
    return (" && ".join(mounts)
            + ' && mkdir -p /var/lib/kubelet/device-plugins'
            # FAKENODE_DEVICES is left unquoted on purpose: one RESOURCE=COUNT/NODES argument per word.
            + f' && {{ "$1" deviceplugin /var/lib/kubelet/device-plugins $FAKENODE_DEVICES > {folder / "deviceplugin.log"} 2>&1 & }}'
            + ' && shift && exec "$@"')


def prepare(folder: Path, node: str, kubeconfig: Path, pki: Path, binaries: Path,
            devices: Iterable[str], labels: Optional[str] = None, config_dir: Optional[Path] = None) -> dict:
    """Write the kubelet's folder and return how to launch it: ``{"cri": argv, "kubelet": argv, "cwd": ...}``."""
    devices = list(devices)
    for spec in devices:
        if not spec or any(c.isspace() for c in spec) or "=" not in spec:
            raise KubeletNodeError(f"--devices {spec!r}: want RESOURCE=COUNT/NUMA_NODES, e.g. nvidia.com/gpu=8/2")
    check_private_namespace()
    address = node_address()
    root_dir = folder / "var-lib" / "kubelet"
    # The kubelet binds unix sockets such as <root-dir>/pods-api/<9 digits>; sun_path holds 107 bytes.
    if len(str(root_dir)) > SOCKET_ROOT_MAX:
        raise KubeletNodeError(f"{root_dir}: a kubelet root folder longer than {SOCKET_ROOT_MAX} characters cannot "
                               "hold the kubelet's unix sockets (107 bytes a path); start the control plane in a "
                               "shorter folder")
    folder.mkdir(parents=True, exist_ok=True)
    for sub in ("var-log", "var-lib/kubelet/device-plugins", "sysctl"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    for tunable in KERNEL_TUNABLES:
        copy = folder / "sysctl" / tunable.replace("/", "_")
        if not copy.exists():
            copy.write_text(Path(f"/proc/sys/{tunable}").read_text())
    numa_tree = fake_numa_tree(folder)
    config_dir = config_dir or folder / "config.d"
    config_dir.mkdir(parents=True, exist_ok=True)
    config = folder / "kubelet-config.yaml"
    config.write_text(yaml.safe_dump(base_configuration(folder, pki, address, free_port(address),
                                                        free_port("127.0.0.1")), sort_keys=True))
    # --root-dir names the scratch folder by its host path: inside the namespace it is the same folder as
    # /var/lib/kubelet (device plugins), and a process outside (the topology agent's tests) finds the
    # kubelet's state files where the kubelet's command line says.
    kubelet = [str(binaries / "kubelet"), f"--config={config}", f"--config-dir={config_dir}",
               f"--root-dir={root_dir}",
               f"--kubeconfig={kubeconfig}", f"--hostname-override={node}", f"--node-ip={address}", "-v=2"]
    if labels:
        kubelet.append(f"--node-labels={labels}")
    namespace = ["unshare", "--mount", "--propagation", "private", "sh", "-c", _namespace_script(folder, numa_tree),
                 "kubelet-namespace", str(binaries / "fakenode"), *kubelet]
    return {"cri": [str(binaries / "fakenode"), "cri", str(folder / "cri.sock")], "kubelet": namespace,
            "env": {"FAKENODE_DEVICES": " ".join(devices)}, "folder": str(folder),
            "address": address, "config": str(config), "configDir": str(config_dir)}


def empty_working_directory(folder: Path) -> Path:
    """A fresh empty folder for the kubelet's working directory (see the module's hazard note)."""
    cwd = folder / "cwd"
    if cwd.exists():
        shutil.rmtree(cwd)
    cwd.mkdir()
    return cwd

