"""A team's own stack program beside the seed stack, written into a test's folder and run by the CLI in a subprocess."""

from __future__ import annotations

import os
from pathlib import Path

import gpu_fabric
from support.stack_configs import PROJECT_DIR

PROGRAM = (PROJECT_DIR / "stacks" / "__main__.py").read_text()
"""The example stacks' program, which a test extends with the team's own lines."""

SUBPROCESS_ENV = {**os.environ, "PYTHONPATH": str(Path(gpu_fabric.__file__).resolve().parents[1])}
"""The environment a ``python -m gpu_fabric.cli`` subprocess needs to import this checkout's package."""


def project(tmp_path: Path, program: str) -> tuple[Path, Path]:
    """A project in ``tmp_path``: ``stacks/`` holding the seed-rdma stack file and ``program``; returns the
    project folder and the program's path."""
    stacks = tmp_path / "stacks"
    stacks.mkdir(parents=True)
    (stacks / "Pulumi.seed-rdma.yaml").write_text((PROJECT_DIR / "stacks" / "Pulumi.seed-rdma.yaml").read_text())
    (stacks / "__main__.py").write_text(program)
    return tmp_path, stacks / "__main__.py"
