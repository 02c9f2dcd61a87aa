"""The device-plugin components under Pulumi's mock runtime."""

from __future__ import annotations

import pulumi
import pytest
from pulumi.runtime.mocks import MockMonitor

from gpu_fabric.kube.device_plugins import efa_device_plugin_daemonset, gpustack_device_manager_daemonsets
from gpu_fabric.resources.device_plugins import EfaDevicePlugin, GpuStackDeviceManager

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "true", "effect": "NO_SCHEDULE"}
EFA_POOL = {
    "name": "p5",
    "fabric": "efa",
    "labels": {"vpc.amazonaws.com/efa.present": "true"},
    "taints": [GPU_TAINT],
}
RDMA_POOL = {"name": "h100-ib", "fabric": "rdma", "manufacturer": "nvidia", "labels": {}, "taints": [GPU_TAINT]}
CPU_POOL = {"name": "system", "fabric": "none", "labels": {}, "taints": [{"key": "system", "effect": "NoSchedule"}]}


class EchoMocks(pulumi.runtime.Mocks):
    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        return f"{args.name}-id", args.inputs

    def call(self, args: pulumi.runtime.MockCallArgs):
        return {}


class RecordingMonitor(MockMonitor):
    """Records every registration with its parent URN and the inputs the engine would receive."""

    def __init__(self, mocks):
        super().__init__(mocks)
        self.registrations: list[dict] = []

    def RegisterResource(self, request):
        response = super().RegisterResource(request)
        if request.type != "pulumi:pulumi:Stack":
            self.registrations.append(
                {
                    "type": request.type,
                    "name": request.name,
                    "urn": response.urn,
                    "parent": request.parent,
                    "inputs": self.resources[response.urn].state,
                }
            )
        return response

    def by_name(self, name: str) -> dict:
        (registration,) = [r for r in self.registrations if r["name"] == name]
        return registration


@pytest.fixture
def monitor():
    recording = RecordingMonitor(EchoMocks())
    pulumi.runtime.set_mocks(EchoMocks(), monitor=recording, preview=False)
    return recording


def _manifest_body(manifest: dict) -> dict:
    return {"apiVersion": manifest["apiVersion"], "kind": manifest["kind"], "metadata": manifest["metadata"], "spec": manifest["spec"]}


@pulumi.runtime.test
def test_efa_plugin_registers_the_builders_manifest_verbatim(monitor):
    component = EfaDevicePlugin("efa", {"pools": [EFA_POOL, CPU_POOL], "image_tag": "v0.5.6"})

    def check(outputs):
        daemonset_name, namespace = outputs
        assert (daemonset_name, namespace) == ("aws-efa-k8s-device-plugin", "kube-system")
        parent = monitor.by_name("efa")
        child = monitor.by_name("efa-daemonset")
        assert parent["type"] == "gpu-fabric:index:EfaDevicePlugin"
        assert child["type"] == "kubernetes:apps/v1:DaemonSet"
        assert child["parent"] == parent["urn"]
        # Only EFA pools' taints are tolerated: the plugin must not run on other pools.
        expected = efa_device_plugin_daemonset(image_tag="v0.5.6", tolerations_from_taints=[GPU_TAINT])
        assert child["inputs"] == _manifest_body(expected)
        assert child["inputs"]["spec"]["template"]["spec"]["nodeSelector"] == {"vpc.amazonaws.com/efa.present": "true"}
        assert [r["name"] for r in monitor.registrations] == ["efa", "efa-daemonset"]

    return pulumi.Output.all(component.daemonset_name, component.namespace).apply(check)


@pulumi.runtime.test
def test_device_manager_registers_one_child_per_manufacturer(monitor):
    pools = [RDMA_POOL, {**RDMA_POOL, "name": "mi300", "manufacturer": "amd", "taints": []}]
    component = GpuStackDeviceManager("dm", {"pools": pools, "shared": False, "namespace": "gpustack"})

    def check(outputs):
        names, namespace = outputs
        assert names == ["gpustack-operator-device-manager-amd", "gpustack-operator-device-manager-nvidia"]
        assert namespace == "gpustack"
        parent = monitor.by_name("dm")
        assert parent["type"] == "gpu-fabric:index:GpuStackDeviceManager"
        expected = gpustack_device_manager_daemonsets(
            manufacturers=["amd", "nvidia"], namespace="gpustack", shared=False, tolerations_from_taints=[GPU_TAINT]
        )
        for manifest in expected:
            manufacturer = manifest["metadata"]["labels"]["gpustack.ai/manufacturer"]
            child = monitor.by_name(f"dm-{manufacturer}")
            assert child["type"] == "kubernetes:apps/v1:DaemonSet"
            assert child["parent"] == parent["urn"]
            assert child["inputs"] == _manifest_body(manifest)
            assert "--no-shared" in child["inputs"]["spec"]["template"]["spec"]["containers"][0]["args"]

    return pulumi.Output.all(component.daemonset_names, component.namespace).apply(check)


def run_program(program) -> None:
    """Run ``program`` as a Pulumi program and wait until every registration has reached the monitor."""

    @pulumi.runtime.test
    def wrapped():
        program()

    wrapped()


def expect_refusal(program, message: str) -> None:
    def refused():
        with pytest.raises(ValueError, match=message):
            program()

    run_program(refused)


def test_registrations_are_visible_after_a_program_run(monitor):
    # Positive control for the refusal tests: the same harness does see registrations.
    run_program(lambda: EfaDevicePlugin("efa", {"pools": [EFA_POOL]}))
    assert [r["name"] for r in monitor.registrations] == ["efa", "efa-daemonset"]


def test_efa_pool_without_the_efa_label_is_refused(monitor):
    unlabelled = {**EFA_POOL, "labels": {"node.kubernetes.io/instance-type": "p5.48xlarge"}}
    expect_refusal(
        lambda: EfaDevicePlugin("efa", {"pools": [unlabelled]}),
        "(?s)pools\\[0\\]: EfaDevicePlugin 'efa' would leave pool 'p5' \\(efa\\) without its fabric resource: .*vpc.amazonaws.com/efa.present",
    )
    assert monitor.registrations == []


def test_rdma_pool_of_an_unserved_manufacturer_is_refused(monitor):
    expect_refusal(
        lambda: GpuStackDeviceManager("dm", {"manufacturers": ["amd"], "pools": [RDMA_POOL]}),
        "pool 'h100-ib' \\(rdma\\) without its fabric resource: .*device-manager-amd: nodeSelector requires .*pci-1002",
    )
    assert monitor.registrations == []


def test_rdma_pool_of_unknown_manufacturer_is_refused(monitor):
    mystery = {**RDMA_POOL, "name": "mystery", "manufacturer": None}
    expect_refusal(
        lambda: GpuStackDeviceManager("dm", {"pools": [RDMA_POOL, mystery]}),
        "pool 'mystery' \\(rdma\\) without its fabric resource: .*pci-10de",
    )
    assert monitor.registrations == []


def test_device_manager_refuses_unknown_manufacturers(monitor):
    expect_refusal(lambda: GpuStackDeviceManager("dm", {"manufacturers": ["intel"], "pools": []}), "intel")
    assert monitor.registrations == []


def test_device_manager_needs_a_manufacturer(monitor):
    expect_refusal(lambda: GpuStackDeviceManager("dm", {"pools": [CPU_POOL]}), "manufacturer")
    assert monitor.registrations == []
