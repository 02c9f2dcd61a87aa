"""The package root exports the components and their Args, and importing it stays cheap."""

import subprocess
import sys

import pytest

import gpu_fabric

COMPONENTS = ["GpuFabric", "EfaNodeGroup", "KueuePool", "KVCache", "ModelDeployment", "EfaDevicePlugin",
              "GpuStackDeviceManager", "KubeletTopologyAgent"]


@pytest.mark.parametrize("name", COMPONENTS)
def test_each_component_and_its_args_come_from_the_package_root(name: str) -> None:
    import pulumi

    component = getattr(gpu_fabric, name)
    args = getattr(gpu_fabric, f"{name}Args")
    assert issubclass(component, pulumi.ComponentResource)
    assert component.__init__.__annotations__["args"] is args
    assert {name, f"{name}Args"} <= set(gpu_fabric.__all__) and name in dir(gpu_fabric)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
        gpu_fabric.Nope  # noqa: B018


def test_importing_the_package_does_not_import_pulumi() -> None:
    code = "import sys, gpu_fabric; print(sorted(m for m in ('pulumi', 'pulumi_aws', 'boto3') if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
