"""The package root exports the components and their Args, and importing it stays cheap."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

import gpu_fabric

COMPONENTS = ["GpuFabric", "EfaDomain", "EfaNodeGroup", "KueuePool", "KVCache", "ModelDeployment", "EfaDevicePlugin",
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


def test_every_component_the_readme_lists_comes_from_the_package_root() -> None:
    import pulumi

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    table = readme[readme.index("| part |"):readme.index("## Using it")]
    listed = sorted({name for cell in re.findall(r"^\| ([^|]+) \|", table, re.M)
                     for name in re.findall(r"`([A-Z][A-Za-z]+)`", cell)})
    assert {"EfaDomain", "GpuFabric", "KubeletTopologyAgent"} <= set(listed)
    for name in listed:
        assert issubclass(getattr(gpu_fabric, name), pulumi.ComponentResource), name
        assert f"{name}Args" in gpu_fabric.__all__, name
