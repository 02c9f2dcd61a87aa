"""Fixtures for the real-engine tests: the toolchain, a fresh control plane, a Pulumi workspace.

These tests run the Pulumi CLI built by ``scripts/engine-tools`` against a kube-apiserver started by
``scripts/control-plane`` (or a cluster of your own: ``GPU_FABRIC_E2E_KUBECONFIG``). They carry the
``engine`` marker, which the default ``python -m pytest`` run deselects; run them with
``python -m pytest -m engine``. Where the toolchain is missing they skip with one line, except under
``GPU_FABRIC_E2E_REQUIRED=1`` (set by ``.ci/run``), where a missing toolchain fails the run.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from e2e.engine import ControlPlane, PulumiWorkspace, engine_bin_dir

ROOT = Path(__file__).resolve().parents[2]


def _unavailable(reason: str) -> None:
    if os.environ.get("GPU_FABRIC_E2E_REQUIRED") == "1":
        pytest.fail(f"real-engine tests required but {reason}", pytrace=False)
    pytest.skip(f"real-engine tests: {reason} (run scripts/engine-tools; see docs/development.md)")


@pytest.fixture(scope="session")
def engine_bin() -> Path:
    """The folder holding pulumi, the language hosts, the Kubernetes provider and the control plane."""
    folder = engine_bin_dir()
    if folder is None:
        _unavailable("the engine toolchain is not built")
    return folder


@pytest.fixture
def cluster(engine_bin: Path, tmp_path: Path):
    """A fresh control plane for one test (or ``$GPU_FABRIC_E2E_KUBECONFIG``'s cluster, left running)."""
    own = os.environ.get("GPU_FABRIC_E2E_KUBECONFIG")
    if own:
        yield ControlPlane.existing(Path(own))
        return
    plane = ControlPlane.start(tmp_path / "plane", engine_bin)
    try:
        yield plane
    finally:
        plane.stop()


@pytest.fixture
def workspace(engine_bin: Path, cluster: ControlPlane, tmp_path: Path) -> PulumiWorkspace:
    """A copy of this project (Pulumi.yaml, stacks/, policy/) with file state and passphrase secrets."""
    return PulumiWorkspace.copy_of(ROOT, tmp_path / "project", engine_bin, cluster.kubeconfig, tmp_path)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if Path(str(item.fspath)).is_relative_to(Path(__file__).parent):
            item.add_marker(pytest.mark.engine)
