"""gpu-fabric as a package: one version, a wheel that works without the checkout.

The wheel is built from a copy of the sources (``pip wheel --no-deps --no-build-isolation``, with the
dev extra's setuptools and wheel, so no index is asked) and installed with ``--no-deps --no-index``
into a fresh venv. The dependencies (pulumi, pydantic, boto3, ...) come from the test's own
environment through a ``.pth`` line naming its site-packages: a plain path entry, so the ``.pth``
files inside it -- among them the editable install of this checkout -- are not processed, and the
only gpu_fabric that venv can import is the wheel's. Every command runs with no PYTHONPATH, from a
project folder outside the checkout.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

from support.stack_configs import PROJECT_DIR

import gpu_fabric
from gpu_fabric.program.project import STACK_PROGRAM_TEXT


def _run(command: list[str], cwd: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PYTHONHOME")}
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    try:
        import setuptools  # noqa: F401
        import wheel as _wheel  # noqa: F401
    except ImportError:
        pytest.skip("the dev extra's setuptools and wheel are needed to build offline")
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(PROJECT_DIR / name, source / name)
    shutil.copytree(PROJECT_DIR / "components", source / "components",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    out = tmp_path_factory.mktemp("dist")
    build = _run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--no-build-isolation",
                  "--no-index", "-q", "-w", str(out)], cwd=source)
    assert build.returncode == 0, build.stdout + build.stderr
    (built,) = out.glob("gpu_fabric-*.whl")
    return built


@pytest.fixture(scope="module")
def fresh_venv(wheel, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("venv") / "fresh"
    venv.EnvBuilder(with_pip=False).create(folder)
    python = folder / "bin" / "python"
    install = _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index",
                    "-q", str(wheel)], cwd=folder)
    assert install.returncode == 0, install.stdout + install.stderr
    purelib = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                        cwd=folder).stdout.strip())
    (purelib / "_gpu_fabric_test_dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return folder


@pytest.fixture(scope="module")
def platform_project(tmp_path_factory) -> Path:
    """Another team's repository: its own project name, one stack, the 3-line program."""
    root = tmp_path_factory.mktemp("platform-repo")
    (root / "Pulumi.yaml").write_text("name: platform\nruntime: python\nmain: stacks/\nstackConfigDir: stacks\n")
    (root / "stacks").mkdir()
    (root / "stacks" / "__main__.py").write_text(STACK_PROGRAM_TEXT)
    shutil.copy(PROJECT_DIR / "stacks" / "Pulumi.aws-efa.yaml", root / "stacks" / "Pulumi.prod.yaml")
    return root


def test_one_version_string():
    tomllib = pytest.importorskip("tomllib")
    pyproject = tomllib.loads((PROJECT_DIR / "pyproject.toml").read_text())
    assert "version" not in pyproject["project"] and pyproject["project"]["dynamic"] == ["version"]
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "gpu_fabric.__version__"}
    # No requirements file pins gpu-fabric from an index (none has it): tests/project/test_versions.py.
    release_tag = f"v{gpu_fabric.__version__}"
    assert f"/provider@{release_tag}" in (PROJECT_DIR / "provider" / "PulumiPlugin.yaml").read_text()
    assert f"/provider/kubernetes@{release_tag}" in (PROJECT_DIR / "README.md").read_text()
    assert f"## {gpu_fabric.__version__}" in (PROJECT_DIR / "CHANGELOG.md").read_text()


@pytest.mark.slow
def test_wheel_carries_the_version_script_and_data(wheel):
    assert wheel.name.startswith(f"gpu_fabric-{gpu_fabric.__version__}-")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = archive.read(f"gpu_fabric-{gpu_fabric.__version__}.dist-info/METADATA").decode()
        entry_points = archive.read(f"gpu_fabric-{gpu_fabric.__version__}.dist-info/entry_points.txt").decode()
    assert f"\nVersion: {gpu_fabric.__version__}\n" in metadata
    assert "gpu-fabric = gpu_fabric.cli:console_main" in entry_points
    data = PROJECT_DIR / "components" / "gpu_fabric" / "data"
    shipped = {f"gpu_fabric/data/{p.relative_to(data).as_posix()}" for p in data.rglob("*") if p.is_file()}
    assert shipped and shipped <= names
    assert "gpu_fabric/py.typed" in names


@pytest.mark.slow
def test_installed_wheel_renders_another_project_with_its_name(fresh_venv, platform_project):
    script = fresh_venv / "bin" / "gpu-fabric"
    where = _run([str(fresh_venv / "bin" / "python"), "-c", "import gpu_fabric; print(gpu_fabric.__file__)"],
                 cwd=platform_project)
    assert where.returncode == 0 and Path(where.stdout.strip()).is_relative_to(fresh_venv), where.stdout + where.stderr
    version = _run([str(script), "--version"], cwd=platform_project)
    assert version.returncode == 0 and version.stdout.startswith(f"gpu-fabric {gpu_fabric.__version__}\n")

    # The README's first command's render and check, from the project's folder.
    render = _run([str(script), "render"], cwd=platform_project)
    assert render.returncode == 0, render.stdout + render.stderr
    resources = json.loads((platform_project / "out" / "prod" / "resources.json").read_text())
    assert resources and all(r["urn"].startswith("urn:pulumi:prod::platform::") for r in resources)
    check = _run([str(script), "check", "--quiet"], cwd=platform_project)
    assert check.returncode == 0 and "no policy violations" in check.stdout, check.stdout + check.stderr

    # Bundled data: the instance table (with its origin) and the operator's CRDs (lint).
    info = _run([str(script), "efa-info", "--offline", "p5.48xlarge"], cwd=platform_project)
    assert info.returncode == 0 and "The table was generated " in info.stdout, info.stdout + info.stderr
    manifests = sorted((platform_project / "out" / "prod" / "k8s").rglob("*.yaml"))
    lint = _run([str(script), "lint", "--quiet", *map(str, manifests)], cwd=platform_project)
    assert manifests and lint.returncode == 0, lint.stdout + lint.stderr
    schema = _run([str(script), "schema"], cwd=platform_project)
    assert schema.returncode == 0 and json.loads(schema.stdout)["$schema"].endswith("2020-12/schema")
