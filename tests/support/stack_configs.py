"""Example configurations for tests: the seed stack file, loaded as plain values."""

import copy
import functools
from pathlib import Path
from typing import Any

import yaml

PROJECT_DIR = Path(__file__).resolve().parents[2]


def stack_document(stack: str = "seed-rdma") -> dict[str, Any]:
    """A fresh copy of ``stacks/Pulumi.<stack>.yaml`` as data (the file is parsed once per process)."""
    return copy.deepcopy(_parsed_stack_file(stack))


@functools.lru_cache(maxsize=None)
def _parsed_stack_file(stack: str) -> dict[str, Any]:
    # Tests read the example stacks hundreds of times (the bad-input table alone builds about a hundred rows at
    # import, in every test worker): PyYAML's pure-Python parser took seconds of it. Callers get deep copies.
    return yaml.safe_load((PROJECT_DIR / "stacks" / f"Pulumi.{stack}.yaml").read_text())


def stack_values(stack: str = "seed-rdma") -> dict:
    """The ``gpu-fabric:*`` values of ``stacks/Pulumi.<stack>.yaml`` without the namespace prefix."""
    document = stack_document(stack)
    return {key.split(":", 1)[1]: value for key, value in document["config"].items() if key.startswith("gpu-fabric:")}


def seed_values() -> dict:
    """A fresh deep copy of the seed stack's configuration, safe to mutate."""
    return copy.deepcopy(stack_values("seed-rdma"))


def as_args(values: dict) -> dict:
    """Stack-file values as ``GpuFabricArgs``: the same settings under snake_case keys."""
    from gpu_fabric.aws import snake_case

    return {snake_case(key): value for key, value in values.items()}


AWS_EFA_GPU_POOL = "gpustack--nvidia-h100-linux-amd64"
"""The GPU pool of the aws-efa example (its ``pools[0]``)."""


def efa_values(**pool_changes) -> dict:
    """The aws-efa example with its GPU pool (pools[0]) changed; renames follow into the roles."""
    values = copy.deepcopy(stack_values("aws-efa"))
    pool = values["pools"][0]
    for key, value in pool_changes.items():
        if key in ("instanceTypes", "amiType"):
            pool["aws"][key] = value
        else:
            pool[key] = value
    if "name" in pool_changes:
        for deployment in values.get("modelDeployments", []):
            for role in deployment["roles"]:
                if role["instanceType"] == AWS_EFA_GPU_POOL:
                    role["instanceType"] = pool_changes["name"]
    return values


def b200_values(tag: str | None) -> dict:
    """The aws-efa example on p6-b200.48xlarge (8 x B200, 8 EFA), with the EFA plugin at ``tag``."""
    values = copy.deepcopy(stack_values("aws-efa"))
    new = "gpustack--nvidia-b200-linux-amd64"
    pool = values["pools"][0]
    assert pool["name"] != new
    pool.update(name=new, interfacesPerNode=8)
    pool["aws"]["instanceTypes"] = ["p6-b200.48xlarge"]
    for role in values["modelDeployments"][0]["roles"]:
        role["instanceType"] = new
        role["resources"]["interface"] = "8"
    if tag:
        values["devicePlugins"] = {"efa": {"imageTag": tag}}
    return values


def seed_with_stack_device_manager() -> dict:
    """The seed with GPUStack's Device Manager deployed by the stack itself, in ``gpu-ops``."""
    values = seed_values()
    values["devicePlugins"] = {"deviceManager": {"deployedBy": "stack", "namespace": "gpu-ops"}}
    return values


@functools.lru_cache(maxsize=None)
def _fleet_function():
    import runpy

    return runpy.run_path(str(PROJECT_DIR / "benchmarks" / "render_fleet.py"), run_name="fleet_for_tests")["fleet"]


def fleet_config(scale: int) -> dict[str, Any]:
    """``config:`` of benchmarks/render_fleet.py's synthetic fleet at ``scale`` (``gpu-fabric:*`` keys), a fresh copy."""
    return copy.deepcopy(_fleet_function()(scale))
