"""The release procedure, end to end, in a scratch clone: tag, then install from the tag and from the wheel.

Only the branch is published from this repository, so no tag ``v<version>`` exists to install from; this test
makes one the documented way (``python scripts/release.py``, docs/development.md#releasing) in a clone, then:

* ``pip install "gpu-fabric @ git+file://localhost/<clone>@v<version>"`` (the README's spelling; pip 23 needs
  the host part of a file URL) into a fresh virtualenv, and ``gpu-fabric --version`` from it;
* the wheel the script built, into another fresh virtualenv;
* the example workflows' install steps, run by bash as GitHub runs them, with the README's
  ``gpu-fabric @ git+...`` requirement in ``GPU_FABRIC_INSTALL`` and with the default (the project's own
  ``requirements.txt``).

No package index is asked: every install is ``--no-deps --no-index``, the build uses the dev extra's setuptools,
and the fresh virtualenvs see the test's own site-packages for the dependencies through a ``.pth`` path line
(a plain path to links to everything in it but gpu-fabric's own entries, so pip neither sees nor touches the
editable install of this checkout).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest
import yaml

import gpu_fabric
from support.stack_configs import PROJECT_DIR

VERSION = gpu_fabric.__version__
TAG = f"v{VERSION}"
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.invalid", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
OFFLINE_PIP = {"PIP_NO_DEPS": "1", "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1",
               # pip reads PIP_NO_BUILD_ISOLATION inverted (a false value turns isolation off: pip's docs,
               # "Configuration", and pypa/pip#5735), so "0" means --no-build-isolation.
               "PIP_NO_BUILD_ISOLATION": "0"}
pytestmark = pytest.mark.slow


def _env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME") and not k.startswith("PIP_")}
    return {**env, **GIT_ENV, **extra}


def _run(command: list[str], cwd: Path, env: dict | None = None, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=cwd, env=env or _env(), capture_output=True, text=True, timeout=timeout)


def _out(done: subprocess.CompletedProcess) -> str:
    return f"exit {done.returncode}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess:
    done = _run(["git", "-C", str(repo), *args], cwd=repo)
    assert done.returncode == 0, _out(done)
    return done


def fresh_venv(folder: Path) -> Path:
    """A virtualenv without gpu-fabric whose dependencies (and pip, setuptools) come from the test's environment.

    The test's site-packages is seen through a folder of links to everything in it but gpu-fabric's own
    entries (its dist-info and the editable install's hook): pip then finds pulumi-policy and the rest
    installed, as on a runner that installed them, and gpu-fabric not, so it installs it into this venv and
    never touches the test's environment.
    """
    venv.EnvBuilder(with_pip=False).create(folder)
    python = folder / "bin" / "python"
    purelib = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                        cwd=folder).stdout.strip())
    dependencies = folder / "test-dependencies"
    dependencies.mkdir()
    for entry in Path(sysconfig.get_path("purelib")).iterdir():
        if not entry.name.lower().startswith(("gpu_fabric", "__editable__", "_gpu_fabric")) and entry.suffix != ".pth":
            (dependencies / entry.name).symlink_to(entry)
    (purelib / "_gpu_fabric_test_dependencies.pth").write_text(f"{dependencies}\n")
    return folder


def installed_version(folder: Path) -> str:
    """``gpu-fabric --version`` of the console script in ``folder``, checked to import the package from there."""
    where = _run([str(folder / "bin" / "python"), "-c", "import gpu_fabric; print(gpu_fabric.__file__)"], cwd=folder)
    assert where.returncode == 0 and Path(where.stdout.strip()).is_relative_to(folder), _out(where)
    version = _run([str(folder / "bin" / "gpu-fabric"), "--version"], cwd=folder)
    assert version.returncode == 0, _out(version)
    return version.stdout.splitlines()[0]


@pytest.fixture(scope="module")
def released(tmp_path_factory) -> Path:
    """A clone of this checkout's HEAD released the documented way: CHANGELOG dated, scripts/release.py run."""
    clone = tmp_path_factory.mktemp("release") / "gpu-fabric"
    done = _run(["git", "clone", "--quiet", "--no-hardlinks", str(PROJECT_DIR), str(clone)], cwd=clone.parent)
    if done.returncode != 0:
        pytest.skip(f"this checkout cannot be cloned: {done.stderr.strip()}")
    script = [sys.executable, "scripts/release.py"]
    refused = _run([*script, "--check"], cwd=clone)
    changelog = clone / "CHANGELOG.md"
    text = changelog.read_text()
    if f"## {VERSION} (unreleased)" in text:
        # The first step of the procedure: an undated section is refused, then dated and committed.
        assert refused.returncode == 1 and f"date the section of {VERSION}" in refused.stderr, _out(refused)
        changelog.write_text(text.replace(f"## {VERSION} (unreleased)", f"## {VERSION} (2026-12-04)", 1))
        _git(clone, "commit", "--quiet", "-am", f"CHANGELOG: {VERSION}")
    made = _run(script, cwd=clone)
    assert made.returncode == 0, _out(made)
    assert f"tagged {TAG} (annotated)" in made.stdout
    assert _git(clone, "cat-file", "-t", TAG).stdout.strip() == "tag"  # annotated, not lightweight
    again = _run(script, cwd=clone)
    assert again.returncode == 1 and f"the tag {TAG} exists already" in again.stderr, _out(again)
    return clone


def test_the_release_refuses_uncommitted_changes_before_making_anything(tmp_path):
    clone = tmp_path / "gpu-fabric"
    done = _run(["git", "clone", "--quiet", "--no-hardlinks", str(PROJECT_DIR), str(clone)], cwd=tmp_path)
    if done.returncode != 0:
        pytest.skip(f"this checkout cannot be cloned: {done.stderr.strip()}")
    (clone / "README.md").write_text((clone / "README.md").read_text() + "\nedited\n")
    refused = _run([sys.executable, "scripts/release.py"], cwd=clone)
    assert refused.returncode == 1 and "commit or stash the changes" in refused.stderr, _out(refused)
    assert _run(["git", "-C", str(clone), "tag", "--list"], cwd=clone).stdout.strip() == ""
    assert not (clone / "dist").exists()


def test_install_from_the_tag_in_a_fresh_venv(released, tmp_path):
    folder = fresh_venv(tmp_path / "from-tag")
    requirement = f"gpu-fabric @ git+file://localhost{released}@{TAG}"
    done = _run([str(folder / "bin" / "python"), "-m", "pip", "install", "-q", requirement],
                cwd=tmp_path, env=_env(**OFFLINE_PIP))
    assert done.returncode == 0, _out(done)
    assert installed_version(folder) == f"gpu-fabric {VERSION}"


def test_install_from_the_wheel_in_a_fresh_venv(released, tmp_path):
    (wheel,) = (released / "dist").glob("gpu_fabric-*.whl")
    assert wheel.name == f"gpu_fabric-{VERSION}-py3-none-any.whl"
    folder = fresh_venv(tmp_path / "from-wheel")
    done = _run([str(folder / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)],
                cwd=tmp_path, env=_env(**OFFLINE_PIP))
    assert done.returncode == 0, _out(done)
    assert installed_version(folder) == f"gpu-fabric {VERSION}"


def _install_steps(workflow: Path) -> list[str]:
    """The ``run`` of every step named ``Install gpu-fabric...`` in any job of ``workflow``."""
    document = yaml.safe_load(workflow.read_text())
    runs = [step["run"] for job in document["jobs"].values() for step in job["steps"]
            if str(step.get("name", "")).startswith("Install gpu-fabric")]
    assert runs, f"{workflow}: no step named 'Install gpu-fabric...'"
    return runs


WORKFLOWS = sorted((PROJECT_DIR / "examples" / "ci").glob("*.yml"))


def _runs_covering_every_workflow() -> dict[str, tuple[str, ...]]:
    """Each workflow's install steps, as a fresh runner runs them, once: a workflow whose steps begin another's is
    run as the start of that one (gpu-fabric-diff.yml's one step is gpu-fabric-up.yml's first, word for word), and the
    id names every workflow a run covers."""
    steps = {workflow.name: tuple(_install_steps(workflow)) for workflow in WORKFLOWS}

    def covered_by(name: str, other: str) -> bool:
        mine, theirs = steps[name], steps[other]
        return other != name and theirs[:len(mine)] == mine and (len(theirs) > len(mine) or other < name)

    runs: dict[str, tuple[str, ...]] = {}
    for name in steps:
        if not any(covered_by(name, other) for other in steps):
            covered = [name, *sorted(other for other in steps if covered_by(other, name))]
            runs["+".join(covered)] = steps[name]
    assert sorted(n for label in runs for n in label.split("+")) == sorted(steps), runs
    return runs


INSTALL_RUNS = _runs_covering_every_workflow()


@pytest.mark.parametrize("default", [False, True], ids=["GPU_FABRIC_INSTALL", "requirements.txt"])
@pytest.mark.parametrize("workflows", INSTALL_RUNS)
def test_each_example_workflows_install_step_installs_the_tag(released, tmp_path, workflows, default):
    """The steps as GitHub runs them (``bash -e``), with `python` the runner's interpreter (here a fresh venv's)."""
    folder = fresh_venv(tmp_path / "runner")
    project = tmp_path / "platform"
    (project / "policy").mkdir(parents=True)
    requirement = f"gpu-fabric @ git+file://localhost{released}@{TAG}"
    (project / "requirements.txt").write_text(f"{requirement}\n")
    # The pack's requirements as this repository ships them (the pack's interpreter is the runner's).
    (project / "policy" / "requirements.txt").write_text((PROJECT_DIR / "policy" / "requirements.txt").read_text())
    env = _env(**OFFLINE_PIP, PATH=f"{folder / 'bin'}{os.pathsep}{os.environ['PATH']}", PULUMI_PROJECT=str(project),
               GPU_FABRIC_INSTALL="" if default else requirement)
    for run in INSTALL_RUNS[workflows]:
        done = _run(["bash", "-e", "-c", run], cwd=project, env=env)
        assert done.returncode == 0, _out(done)
    assert installed_version(folder) == f"gpu-fabric {VERSION}"


def test_workflows_quote_every_expansion_of_the_install_variable():
    """Unquoted, ``gpu-fabric @ git+...`` splits into three words and pip says ``Invalid requirement: '@'``."""
    for workflow in [*WORKFLOWS, *(PROJECT_DIR / ".github" / "workflows").glob("*.yml")]:
        text = workflow.read_text()
        unquoted = [line for line in text.splitlines()
                    if re.search(r"\$\{?GPU_FABRIC_INSTALL\b", line) and not re.search(r'"\$\{?GPU_FABRIC_INSTALL\}?"', line)]
        assert unquoted == [], f"{workflow.name}: {unquoted}"
