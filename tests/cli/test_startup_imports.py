"""What start-up and rendering import: ``--help``/``--version`` stay free of pydantic and pulumi, and a
stack without AWS resources renders without loading ``pulumi_aws.ec2`` (issue 27; the figures are
``benchmarks/startup_and_render.py``'s, not asserted here)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT_DIR = Path(__file__).resolve().parents[2]
COMPONENTS = PROJECT_DIR / "components"


def _modules_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code`` (which must not print), and those of
    gpu-fabric and the Pulumi SDKs its renders' children imported (gpu_fabric.program.shared_imports)."""
    env = {**os.environ, "PYTHONPATH": str(COMPONENTS)}
    probe = code + ("\nimport json as _j, sys as _s\n_r = _s.modules.get('gpu_fabric.program.shared_imports')\n"
                    "_s.__stdout__.write('\\n' + _j.dumps(sorted(set(_s.modules) | (_r._seen if _r else set()))))\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=PROJECT_DIR,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def _heavy(modules: set[str], roots: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in roots)


@pytest.mark.parametrize("flag", ["--help", "--version"])
def test_help_and_version_import_neither_pydantic_nor_pulumi(flag: str) -> None:
    code = ("import contextlib, io\nfrom gpu_fabric.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    try:\n        main([{flag!r}])\n    except SystemExit:\n        pass\n")
    assert _heavy(_modules_after(code), ("pydantic", "pydantic_core", "pulumi", "pulumi_aws", "pulumi_kubernetes")) == []


def test_cli_help_output_through_the_module() -> None:
    env = {**os.environ, "PYTHONPATH": str(COMPONENTS)}
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "gpu_fabric.cli", "--help"], capture_output=True,
                          text=True, env=env, cwd=PROJECT_DIR, timeout=120)
    assert done.returncode == 0 and "usage: gpu-fabric" in done.stdout
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert _heavy(imported, ("pydantic", "pulumi")) == []


def test_rendering_a_stack_without_aws_resources_does_not_load_pulumi_aws_ec2(tmp_path: Path) -> None:
    code = ("import contextlib, io\nfrom gpu_fabric.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    assert main(['render', '--stack', 'seed-rdma', '--out', {str(tmp_path / 'out')!r}]) == 0\n")
    modules = _modules_after(code)
    assert "pulumi_kubernetes" in modules  # it did render
    assert [m for m in modules if m == "pulumi_aws.ec2" or m.startswith("pulumi_aws.ec2.")] == []


def test_rendering_an_aws_stack_loads_the_aws_components(tmp_path: Path) -> None:
    code = ("import contextlib, io\nfrom gpu_fabric.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    assert main(['render', '--stack', 'aws-efa', '--out', {str(tmp_path / 'out')!r}]) == 0\n")
    assert {"pulumi_aws.ec2", "gpu_fabric.resources.efa_node_group"} <= _modules_after(code)


@pytest.mark.parametrize("stack", ["seed-rdma", "aws-efa", "dra-efa", "karpenter-efa"])
def test_render_imports_no_policy_module(stack: str, tmp_path: Path) -> None:
    # render prints the stack's domains and warnings from the same view of the resources the pack reads
    # (gpu_fabric.plan.resource_view), not from the pack: the pack and pulumi_policy are check's to load.
    code = ("import contextlib, io\nfrom gpu_fabric.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    assert main(['render', '--stack', {stack!r}, '--out', {str(tmp_path / 'out')!r}]) == 0\n")
    modules = _modules_after(code)
    assert "gpu_fabric.plan.efa_domains.from_resources" in modules  # it did render, and listed the domains
    assert _heavy(modules, ("pulumi_policy",)) == []
    assert sorted(m for m in modules if m == "gpu_fabric.policies" or m.startswith("gpu_fabric.policies.")) == []


def test_loading_the_configuration_models_does_not_read_their_source() -> None:
    # The schema's field descriptions are read from the source only when a schema is made: importing
    # and validating with the models (every render) leaves the source files unread.
    code = ("import linecache\nimport gpu_fabric.config.fabric, gpu_fabric.validation.configuration\n"
            "read = sorted(name for name in linecache.cache if 'gpu_fabric' in name)\n"
            "assert read == [], read\n"
            "from gpu_fabric.config.json_schema import configuration_schema\n"
            "assert configuration_schema()['properties']['pools']['description']\n"
            "assert any('gpu_fabric/config' in name for name in linecache.cache)\n")
    assert "gpu_fabric.config.fabric" in _modules_after(code)


def test_packs_still_import_the_resource_view_from_the_policies() -> None:
    # The view moved below the policies (so render need not load them); the path packs import keeps working.
    from gpu_fabric.plan import resource_view
    from gpu_fabric.policies import resource_view as public_path

    assert all(getattr(public_path, name) is getattr(resource_view, name) for name in public_path.__all__)
