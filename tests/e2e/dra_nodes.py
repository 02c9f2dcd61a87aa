"""Kubelet-less GPU nodes for the real kube-scheduler: a Node kept Ready, and the ResourceSlices and DeviceClasses
the DRA drivers would publish and install for its PCIe layout.

The scheduler allocates claims from what is published on the API server; no kubelet (nor driver) needs to run
for it to decide, so a Node object whose status and Lease a thread renews is enough. Names follow the drivers:

* NVIDIA's GPU DRA driver (kubernetes-sigs/dra-driver-nvidia-gpu): driver and DeviceClass ``gpu.nvidia.com``;
  the chart's class selects ``device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type ==
  'gpu'`` (``deployments/helm/.../templates/deviceclass-gpu.yaml``), and on ``resource.k8s.io/v1`` may set
  ``extendedResourceName: nvidia.com/gpu``; each GPU carries ``type``, ``uuid``, ``productName`` and the standard
  ``resource.kubernetes.io/pcieRoot`` (``cmd/gpu-kubelet-plugin/deviceinfo.go``).
* DRANET (kubernetes-sigs/dranet), driver ``dra.net``; AWS's ``aws-dranet`` chart installs the DeviceClass
  ``efa.networking.k8s.aws`` selecting ``device.driver == "dra.net" && device.attributes["dra.net"].pciDevice ==
  'Elastic Fabric Adapter (EFA)'``; each NIC carries ``dra.net/pciAddress``, ``pciDevice``, ``numaNode``,
  ``rdma`` and ``resource.kubernetes.io/pcieRoot`` (``pkg/inventory/db.go``).

PCIe layouts are gpu-fabric's own table (:data:`gpu_fabric.aws.pcie_topology.PCIE_TOPOLOGY`); root names, bus
numbers and UUIDs are invented, and roots are split evenly over two NUMA nodes.
"""

from __future__ import annotations

import datetime
import threading
from typing import Any, Optional

from gpu_fabric.aws.pcie_topology import PcieTopology, pcie_topology
from gpu_fabric.kube.dra_claims import EFA_DEVICE_CLASS, GPU_DEVICE_CLASS, NVIDIA_GPU_DRIVER, PCIE_ROOT_ATTRIBUTE

DRANET = "dra.net"
EFA_PCI_DEVICE = "Elastic Fabric Adapter (EFA)"
RESOURCE_V1 = "resource.k8s.io/v1"


def device_classes(extended_resource: bool = False) -> list[dict[str, Any]]:
    """``gpu.nvidia.com`` and ``efa.networking.k8s.aws`` as the drivers' charts install them."""
    gpu: dict[str, Any] = {"apiVersion": RESOURCE_V1, "kind": "DeviceClass", "metadata": {"name": GPU_DEVICE_CLASS},
                           "spec": {"selectors": [{"cel": {"expression": (
                               "device.driver == 'gpu.nvidia.com' && "
                               "device.attributes['gpu.nvidia.com'].type == 'gpu'")}}]}}
    if extended_resource:
        gpu["spec"]["extendedResourceName"] = "nvidia.com/gpu"
    efa = {"apiVersion": RESOURCE_V1, "kind": "DeviceClass", "metadata": {"name": EFA_DEVICE_CLASS},
           "spec": {"selectors": [{"cel": {"expression": (
               f'device.driver == "{DRANET}" && device.attributes["{DRANET}"].pciDevice == \'{EFA_PCI_DEVICE}\'')}}]}}
    return [gpu, efa]


def roots_of(layout: PcieTopology) -> list[str]:
    """Invented root names, one per PCIe root of the layout: ``pci0000:08``, ``pci0000:18``, ..."""
    return [f"pci0000:{0x08 + 0x10 * index:02x}" for index in range(layout.roots)]


def resource_slices(node: str, instance_type: str) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The GPU driver's and DRANET's slices of ``node`` and, for checking, device name -> its root."""
    layout = pcie_topology(instance_type)
    assert layout is not None, instance_type
    gpus, nics, root_of = [], [], {}
    for index, root in enumerate(roots_of(layout)):
        numa = int(index >= layout.roots // 2)
        bus = 0x08 + 0x10 * index
        for g in range(layout.gpus_per_root):
            name = f"gpu-{index * layout.gpus_per_root + g}"
            root_of[name] = root
            gpus.append({"name": name, "attributes": {
                "type": {"string": "gpu"}, "productName": {"string": "NVIDIA H200"},
                "uuid": {"string": f"GPU-{index:08x}-0000-0000-0000-{g:012x}"},
                "resource.kubernetes.io/pciBusID": {"string": f"0000:{bus + 1 + g:02x}:00.0"},
                PCIE_ROOT_ATTRIBUTE: {"string": root}}})
        for n in range(layout.efa_per_root):
            address = f"0000:{bus + 8 + n:02x}:00.0"
            name = "pci-" + address.replace(":", "-").replace(".", "-")
            root_of[name] = root
            nics.append({"name": name, "attributes": {
                f"{DRANET}/pciAddress": {"string": address}, f"{DRANET}/pciDevice": {"string": EFA_PCI_DEVICE},
                f"{DRANET}/pciVendor": {"string": "Amazon.com, Inc."}, f"{DRANET}/numaNode": {"int": numa},
                f"{DRANET}/rdma": {"bool": True}, PCIE_ROOT_ATTRIBUTE: {"string": root}}})

    def one(driver: str, devices: list[dict[str, Any]]) -> dict[str, Any]:
        return {"apiVersion": RESOURCE_V1, "kind": "ResourceSlice", "metadata": {"name": f"{node}-{driver}"},
                "spec": {"driver": driver, "nodeName": node,
                         "pool": {"name": node, "generation": 1, "resourceSliceCount": 1}, "devices": devices}}

    return [one(NVIDIA_GPU_DRIVER, gpus), one(DRANET, nics)], root_of


def node_object(name: str, instance_type: str, labels: dict[str, str],
                taints: Optional[list[dict[str, str]]] = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                                  "kubernetes.io/arch": "amd64",
                                                  "node.kubernetes.io/instance-type": instance_type, **labels}},
            "spec": {"taints": list(taints or [])}}


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


class KubeletlessNodes:
    """Nodes without a kubelet, kept Ready (status and Lease renewed every few seconds) until :meth:`stop`."""

    CAPACITY = {"cpu": "192", "memory": "2000Gi", "pods": "110", "ephemeral-storage": "1000Gi"}

    def __init__(self, api_client: Any):
        from kubernetes import client

        self.core = client.CoreV1Api(api_client)
        self.coordination = client.CoordinationV1Api(api_client)
        self.names: list[str] = []
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._lock = threading.Lock()
        self.errors: list[str] = []

    def add(self, node: dict[str, Any]) -> None:
        self.core.create_node(node)
        with self._lock:
            self.names.append(node["metadata"]["name"])
        self._heartbeat(node["metadata"]["name"])
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="kubeletless-nodes", daemon=True)
            self._thread.start()

    def _heartbeat(self, name: str) -> None:
        from kubernetes.client.rest import ApiException

        stamp = _now().strftime("%Y-%m-%dT%H:%M:%SZ")
        self.core.patch_node_status(name, {"status": {
            "capacity": self.CAPACITY, "allocatable": self.CAPACITY,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet-less test node",
                            "lastHeartbeatTime": stamp, "lastTransitionTime": stamp}],
            "addresses": [{"type": "Hostname", "address": name}],
            "nodeInfo": {"kubeletVersion": "v1.37.2", "architecture": "amd64", "operatingSystem": "linux",
                         "containerRuntimeVersion": "fake://0", "kernelVersion": "6.1", "osImage": "test",
                         "kubeProxyVersion": "", "machineID": name, "systemUUID": name, "bootID": name}}})
        body = {"metadata": {"name": name, "namespace": "kube-node-lease"},
                "spec": {"holderIdentity": name, "leaseDurationSeconds": 40, "renewTime": _now()}}
        try:
            current = self.coordination.read_namespaced_lease(name, "kube-node-lease")
            body["metadata"]["resourceVersion"] = current.metadata.resource_version
            self.coordination.replace_namespaced_lease(name, "kube-node-lease", body)
        except ApiException as error:
            if error.status != 404:
                raise
            self.coordination.create_namespaced_lease("kube-node-lease", body)

    def _run(self) -> None:
        while not self._stop.wait(5.0):
            with self._lock:
                names = list(self.names)
            for name in names:
                try:
                    self._heartbeat(name)
                except Exception as error:  # noqa: BLE001 - reported by the test through .errors
                    self.errors.append(f"{name}: {error}")

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
