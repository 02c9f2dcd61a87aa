"""``pulumi package add`` of gpu-fabric's components under the real engine, with automatic plugin acquisition off.

A Pulumi YAML program adds the package the way Pulumi users add one
(docs/components.md#pulumi-package-add-without-the-aws-provider-plugin), from a checkout and from a git URL at
the tag ``v<version>``, then previews, ups and destroys against a throwaway control plane. The only provider
plugin anywhere is the Kubernetes one ``scripts/engine-tools`` builds, put in the plugin cache with
``pulumi plugin install ... --file`` (no download).

The package added is ``provider/kubernetes/`` (gpu-fabric's Kubernetes components). ``provider/`` needs the
AWS provider plugin at ``package add``, which cannot be had here: the last test shows exactly where.

The git URL: Pulumi clones packages over https only (``file://`` is refused), so the tag is made in a scratch
clone, as tests/project/test_release.py does, and served by ``git http-backend`` over TLS on a loopback
address (``e2e.git_https``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest
import yaml

import gpu_fabric
from e2e.engine import ROOT, PulumiWorkspace, output_of
from e2e.git_https import GitHttpsServer
from e2e.test_component_provider import _seed_pool

VERSION = gpu_fabric.__version__
TAG = f"v{VERSION}"
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.invalid", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
# What an offline `package add` must never print: a download attempt of any provider plugin.
DOWNLOADING = ("Downloading provider aws", "Downloading provider kubernetes", "error downloading provider")


def _git(*args: str, cwd: Path) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, **GIT_ENV}, timeout=300)
    assert done.returncode == 0, output_of(done)
    return done.stdout


@pytest.fixture(scope="module")
def tagged_clone(tmp_path_factory) -> Path:
    """A clone of this checkout's HEAD with the annotated tag v<version>, as the release makes it."""
    clone = tmp_path_factory.mktemp("release") / "gpu-fabric"
    _git("clone", "--quiet", "--no-hardlinks", str(ROOT), str(clone), cwd=clone.parent)
    _git("tag", "--annotate", TAG, "--message", f"gpu-fabric {VERSION}", cwd=clone)
    return clone


@pytest.fixture(scope="module")
def git_server(tmp_path_factory):
    server = GitHttpsServer(tmp_path_factory.mktemp("git-https")).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def kubernetes_python(tmp_path_factory) -> Path:
    """The interpreter of an environment holding what ``provider/kubernetes/requirements.txt`` asks for and
    neither pulumi-aws nor gpu-fabric (the plugin imports the components of its own folder's revision).

    The test's own site-packages is seen through a folder of links to everything in it but those two (no
    package index is asked); ``pip install -r`` then proves the requirements are met without them."""
    folder = tmp_path_factory.mktemp("kubernetes-python") / "venv"
    venv.EnvBuilder(with_pip=False).create(folder)
    python = folder / "bin" / "python"
    purelib = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                                  capture_output=True, text=True, check=True).stdout.strip())
    links = folder / "dependencies"
    links.mkdir()
    for entry in Path(sysconfig.get_path("purelib")).iterdir():
        name = entry.name.lower()
        if name.startswith(("pulumi_aws", "gpu_fabric", "__editable__", "_gpu_fabric")) or entry.suffix == ".pth":
            continue
        (links / entry.name).symlink_to(entry)
    (purelib / "_dependencies.pth").write_text(f"{links}\n")
    done = subprocess.run([str(python), "-m", "pip", "install", "--no-index", "--disable-pip-version-check", "-q",
                           "-r", str(ROOT / "provider" / "kubernetes" / "requirements.txt")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, output_of(done)
    absent = subprocess.run([str(python), "-c", "import importlib.util as u; "
                             "print(u.find_spec('pulumi_aws'), u.find_spec('gpu_fabric'))"],
                            capture_output=True, text=True, cwd=folder)
    assert absent.stdout.split() == ["None", "None"], output_of(absent)
    return python


def _workspace(engine_bin: Path, kubeconfig: Path, tmp_path: Path, python: Path, **env: str) -> PulumiWorkspace:
    """An empty YAML project (a platform team's repository) whose Python plugins run with ``python``, with the
    engine-tools Kubernetes plugin installed into its plugin cache from the file (``--file``: no download)."""
    workspace = PulumiWorkspace.program(tmp_path / "platform", engine_bin, kubeconfig, tmp_path, "platform",
                                        "yaml", {})
    workspace.env.update({"PULUMI_PYTHON_CMD": str(python), **env})
    version = yaml.safe_load((workspace.project / "Pulumi.yaml").read_text())["plugins"]["providers"][0]["version"]
    installed = workspace.pulumi("plugin", "install", "resource", "kubernetes", version,
                                 "--file", str(engine_bin / "pulumi-resource-kubernetes"))
    assert installed.returncode == 0, output_of(installed)
    return workspace


def _add_then_preview_up_destroy(workspace: PulumiWorkspace, cluster, source: str, recorded: str) -> None:
    added = workspace.pulumi("package", "add", source)
    assert added.returncode == 0, output_of(added)
    assert not [line for line in DOWNLOADING if line in added.stdout + added.stderr], output_of(added)
    project = yaml.safe_load((workspace.project / "Pulumi.yaml").read_text())
    assert project["packages"] == {"gpu-fabric": recorded}, project
    (sdk,) = (workspace.project / "sdks").glob(f"*/gpu-fabric-{VERSION}.yaml")
    assert yaml.safe_load(sdk.read_text())["name"] == "gpu-fabric"

    # The program as a team writes it once the package is added: Pulumi.yaml's `packages:` (written by
    # `package add`) is the only thing that names gpu-fabric; no `plugins.providers` entry for it.
    project.update({
        "resources": {"a10g-queues": {"type": "gpu-fabric:index:KueuePool",
                                      "properties": {"pool": _seed_pool(), "namespaces": ["team-a"],
                                                     "queueOwner": "standalone"}}},
        "outputs": {"localQueues": "${a10g-queues.localQueueNames}"},
    })
    assert [p["name"] for p in project["plugins"]["providers"]] == ["kubernetes"], project
    (workspace.project / "Pulumi.yaml").write_text(yaml.safe_dump(project, sort_keys=False))
    cluster.ensure_namespace("team-a")
    workspace.stack_init("dev")

    preview = workspace.pulumi("preview", "--stack", "dev")
    assert preview.returncode == 0, output_of(preview)
    assert "gpu-fabric:index:KueuePool" in preview.stdout, output_of(preview)
    up = workspace.pulumi("up", "--stack", "dev", "--yes", "--skip-preview")
    assert up.returncode == 0, output_of(up)
    outputs = workspace.pulumi("stack", "output", "--stack", "dev", "--json")
    assert outputs.returncode == 0, output_of(outputs)
    names = json.loads(outputs.stdout)["localQueues"]  # {namespace: LocalQueue name}
    queues = cluster.resource("kueue.x-k8s.io/v1beta2", "LocalQueue").get(namespace="team-a").to_dict()["items"]
    assert list(names) == ["team-a"] and names["team-a"].startswith("gpustack-fnv64-"), names
    assert [q["metadata"]["name"] for q in queues] == [names["team-a"]], queues
    destroy = workspace.pulumi("destroy", "--stack", "dev", "--yes")
    assert destroy.returncode == 0, output_of(destroy)
    left = cluster.resource("kueue.x-k8s.io/v1beta2", "LocalQueue").get(namespace="team-a").to_dict()["items"]
    assert left == [], left


def test_package_add_from_a_checkout_previews_ups_and_destroys(engine_bin, cluster, kubernetes_python, tmp_path):
    workspace = _workspace(engine_bin, cluster.kubeconfig, tmp_path, kubernetes_python)
    checkout = str(ROOT / "provider" / "kubernetes")
    _add_then_preview_up_destroy(workspace, cluster, checkout, checkout)


def test_package_add_from_a_git_url_at_the_tag_previews_ups_and_destroys(
        engine_bin, cluster, kubernetes_python, tagged_clone, git_server, tmp_path):
    url = git_server.publish(tagged_clone, "platform", "gpu-fabric")
    workspace = _workspace(engine_bin, cluster.kubeconfig, tmp_path, kubernetes_python,
                           SSL_CERT_FILE=str(git_server.certificate))
    # Pulumi records a git source without its scheme.
    recorded = f"{url.removeprefix('https://')}/provider/kubernetes@{TAG}"
    _add_then_preview_up_destroy(workspace, cluster, f"{url}/provider/kubernetes@{TAG}", recorded)
    # The package came from the tag's tree, cloned into the plugin cache: the clone is at the tag's commit.
    (cached,) = [folder for folder in (Path(workspace.env["PULUMI_HOME"]) / "plugins").iterdir()
                 if folder.is_dir() and folder.name.endswith(f"_platform_gpu-fabric.git_provider_kubernetes-{TAG}")]
    tagged = _git("rev-parse", f"{TAG}^{{commit}}", cwd=tagged_clone).strip()
    assert _git("rev-parse", "HEAD", cwd=cached).strip() == tagged
    assert any("git-upload-pack" in line for line in git_server.requests), git_server.requests


def test_package_add_of_every_component_stops_at_the_aws_provider_plugin(engine_bin, tmp_path):
    """``provider/`` (every component, the AWS ones too) in the test's own environment, which holds
    pulumi-aws as gpu-fabric's dependency: ``package add`` asks the plugin's language host for its packages
    (GetRequiredPackages) and downloads every provider plugin missing from the plugin cache, acquisition off
    or not (pulumi v3.274.1 packageinstallation.go, gatherPackageDependenciesStep). Kubernetes is in the cache;
    AWS is not, and cannot be had here. Downloads go to an unreachable proxy so the test fails the same way
    with or without network; no SDK is generated and Pulumi.yaml is left as it was."""
    plane = tmp_path / "no-cluster.kubeconfig"
    workspace = _workspace(engine_bin, plane, tmp_path, Path(sys.executable),
                           HTTPS_PROXY="http://127.0.0.1:9", HTTP_PROXY="http://127.0.0.1:9", NO_PROXY="")
    before = (workspace.project / "Pulumi.yaml").read_text()
    added = workspace.pulumi("package", "add", str(ROOT / "provider"))
    output = added.stdout + added.stderr
    assert added.returncode != 0, output_of(added)
    assert "pulumi-resource-aws-v7" in output and "failed to download plugin: aws-7" in output, output_of(added)
    assert "pulumi-resource-kubernetes" not in output, output_of(added)
    assert (workspace.project / "Pulumi.yaml").read_text() == before
    assert not (workspace.project / "sdks").exists()
