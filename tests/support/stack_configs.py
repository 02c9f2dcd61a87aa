"""Example configurations for tests: the seed stack file, loaded as plain values."""

import copy
from pathlib import Path

import yaml

PROJECT_DIR = Path(__file__).resolve().parents[2]


def stack_values(stack: str = "seed-rdma") -> dict:
    """The ``gpu-fabric:*`` values of ``stacks/Pulumi.<stack>.yaml`` without the namespace prefix."""
    document = yaml.safe_load((PROJECT_DIR / "stacks" / f"Pulumi.{stack}.yaml").read_text())
    return {key.split(":", 1)[1]: value for key, value in document["config"].items() if key.startswith("gpu-fabric:")}


def seed_values() -> dict:
    """A fresh deep copy of the seed stack's configuration, safe to mutate."""
    return copy.deepcopy(stack_values("seed-rdma"))


def as_args(values: dict) -> dict:
    """Stack-file values as ``GpuFabricArgs``: the same settings under snake_case keys."""
    from gpu_fabric.aws import snake_case

    return {snake_case(key): value for key, value in values.items()}
