"""Driving the real toolchain from tests: the control plane, a Kubernetes client, the Pulumi CLI."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Optional

import yaml

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "scripts"
PASSPHRASE = "gpu-fabric-e2e"
"""The throwaway passphrase of the tests' file backend (never a real secret)."""

COMMAND_TIMEOUT = 900


def engine_bin_dir() -> Optional[Path]:
    """The toolchain folder ``scripts/engine-tools --print-dir`` names, or ``None`` when it is not built."""
    explicit = os.environ.get("GPU_FABRIC_ENGINE_BIN")
    if explicit:
        return Path(explicit) if Path(explicit).is_dir() else None
    done = subprocess.run([str(SCRIPTS / "engine-tools"), "--print-dir"], capture_output=True, text=True)
    if done.returncode != 0 or not done.stdout.strip():
        return None
    return Path(done.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------------------------------ cluster


@dataclass
class ControlPlane:
    """A control plane started by ``scripts/control-plane`` (or an existing cluster's kubeconfig)."""

    kubeconfig: Path
    folder: Optional[Path] = None
    _client: Any = field(default=None, repr=False)

    @classmethod
    def start(cls, folder: Path, engine_bin: Path, operator: Optional[str] = None,
              kueue: bool = False, scheduler: bool = False, crds: bool = True) -> "ControlPlane":
        argv = [sys.executable, str(SCRIPTS / "control-plane"), "start", str(folder)]
        if operator:
            argv += ["--operator", operator]
        if kueue:
            argv.append("--kueue")
        if scheduler:
            argv.append("--scheduler")
        if not crds:
            argv.append("--no-crds")
        env = {**os.environ, "GPU_FABRIC_ENGINE_BIN": str(engine_bin)}
        done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
        if done.returncode != 0:
            logs = "".join(f"\n--- {log.name}\n{log.read_text()[-3000:]}"
                           for log in sorted((folder / "logs").glob("*.log"))) if (folder / "logs").is_dir() else ""
            subprocess.run([sys.executable, str(SCRIPTS / "control-plane"), "stop", str(folder)])
            raise RuntimeError(f"control-plane start failed ({done.returncode}): {done.stderr}{logs}")
        return cls(kubeconfig=Path(done.stdout.strip().splitlines()[-1]), folder=folder)

    def kubelet(self, node: str, *options: str, engine_bin: Optional[Path] = None) -> dict:
        """``scripts/control-plane kubelet DIR --node NODE OPTIONS...`` (start, ``--restart`` or ``--stop``)."""
        assert self.folder is not None, "a kubelet joins only a control plane these tests started"
        env = dict(os.environ)
        if engine_bin is not None:
            env["GPU_FABRIC_ENGINE_BIN"] = str(engine_bin)
        done = subprocess.run([sys.executable, str(SCRIPTS / "control-plane"), "kubelet", str(self.folder),
                               "--node", node, *options], capture_output=True, text=True, env=env, timeout=180)
        if done.returncode != 0:
            log = self.folder / "logs" / f"kubelet-{node}.log"
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-40:]) if log.is_file() else ""
            raise RuntimeError(f"control-plane kubelet {node} {' '.join(options)} failed ({done.returncode}): "
                               f"{done.stderr}\n--- tail of {log}\n{tail}")
        return json.loads(done.stdout.strip().splitlines()[-1])

    @classmethod
    def existing(cls, kubeconfig: Path) -> "ControlPlane":
        return cls(kubeconfig=kubeconfig)

    def stop(self) -> None:
        if self.folder is not None:
            subprocess.run([sys.executable, str(SCRIPTS / "control-plane"), "stop", str(self.folder)],
                           check=True, timeout=120)

    # ---- the official Python client (it follows any kubeconfig: client certificates, exec plugins)

    @property
    def api(self) -> Any:
        if self._client is None:
            from kubernetes import config

            self._client = config.new_client_from_config(config_file=str(self.kubeconfig))
        return self._client

    @property
    def dynamic(self) -> Any:
        from kubernetes.dynamic import DynamicClient

        return DynamicClient(self.api)

    def resource(self, api_version: str, kind: str) -> Any:
        return self.dynamic.resources.get(api_version=api_version, kind=kind)

    def ensure_namespace(self, name: str) -> None:
        from kubernetes.dynamic.exceptions import ConflictError

        try:
            self.resource("v1", "Namespace").create(body={"apiVersion": "v1", "kind": "Namespace",
                                                          "metadata": {"name": name}})
        except ConflictError:
            pass

    def get(self, obj: dict) -> Optional[dict]:
        """The server's copy of ``obj`` (by apiVersion, kind, namespace, name), ``None`` if absent."""
        from kubernetes.dynamic.exceptions import NotFoundError

        metadata = obj["metadata"]
        try:
            found = self.resource(obj["apiVersion"], obj["kind"]).get(
                name=metadata["name"], namespace=metadata.get("namespace"))
        except NotFoundError:
            return None
        return found.to_dict()

    def dry_run_create(self, obj: dict) -> dict:
        """What the server would store for ``obj`` (server-side dry run; nothing is persisted)."""
        resource = self.resource(obj["apiVersion"], obj["kind"])
        namespace = obj["metadata"].get("namespace") if resource.namespaced else None
        return resource.create(body=obj, namespace=namespace, query_params=[("dryRun", "All")]).to_dict()


# -------------------------------------------------------------------------------------- manifests


def rendered_objects(folder: Path) -> list[dict]:
    """Every Kubernetes object ``gpu-fabric render`` wrote under ``folder/k8s``, in file order."""
    objects = []
    for path in sorted((folder / "k8s").rglob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            if isinstance(document, dict) and document.get("kind"):
                objects.append(document)
    return objects


def render_example_stack(tmp: Path, base: str, name: str, edit: Callable[[dict], None]) -> Path:
    """``gpu-fabric render`` of ``stacks/Pulumi.<base>.yaml`` with its ``config`` changed by ``edit``, as stack
    ``name`` of a scratch project under ``tmp``; the output folder (``k8s/``, ``resources.json``)."""
    project = tmp / f"project-{name}"
    (project / "stacks").mkdir(parents=True)
    shutil.copy(ROOT / "Pulumi.yaml", project / "Pulumi.yaml")
    shutil.copy(ROOT / "stacks" / "__main__.py", project / "stacks" / "__main__.py")
    stack = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{base}.yaml").read_text())
    edit(stack["config"])
    (project / "stacks" / f"Pulumi.{name}.yaml").write_text(yaml.safe_dump(stack, sort_keys=False))
    out = tmp / f"out-{name}"
    done = gpu_fabric("render", "--project", str(project), "--stack", name, "--out", str(out), "-q")
    assert done.returncode == 0, output_of(done)
    return out


def missing_fields(written: Any, stored: Any, path: str = "") -> Iterator[str]:
    """Paths of values in ``written`` that ``stored`` lacks or holds differently (pruned or rewritten)."""
    if isinstance(written, dict):
        if not isinstance(stored, dict):
            yield f"{path or '.'}: written an object, stored {stored!r}"
            return
        for key, value in written.items():
            if key not in stored:
                yield f"{path}.{key}: pruned"
            else:
                yield from missing_fields(value, stored[key], f"{path}.{key}")
    elif isinstance(written, list):
        if not isinstance(stored, list) or len(stored) != len(written):
            yield f"{path}: written {len(written)} items, stored {stored!r}"
            return
        for i, (mine, theirs) in enumerate(zip(written, stored)):
            yield from missing_fields(mine, theirs, f"{path}[{i}]")
    elif written != stored and str(written) != str(stored):
        yield f"{path}: written {written!r}, stored {stored!r}"


def gpu_fabric(*args: str, cwd: Path = ROOT, env: Optional[dict] = None,
               timeout: float = 600) -> subprocess.CompletedProcess:
    """The console script, as a user runs it."""
    script = Path(sys.executable).parent / "gpu-fabric"
    return subprocess.run([str(script), *args], cwd=cwd, capture_output=True, text=True,
                          env=env or os.environ.copy(), timeout=timeout)


# ---------------------------------------------------------------------------------------- pulumi


@dataclass
class PulumiWorkspace:
    """A Pulumi project folder plus the environment that keeps the CLI offline and self-contained."""

    project: Path
    env: dict

    @classmethod
    def copy_of(cls, source: Path, project: Path, engine_bin: Path, kubeconfig: Path, scratch: Path,
                folders: Iterable[str] = ("stacks", "policy")) -> "PulumiWorkspace":
        project.mkdir(parents=True)
        for name in folders:
            shutil.copytree(source / name, project / name, ignore=shutil.ignore_patterns("__pycache__"))
        pulumi_yaml = yaml.safe_load((source / "Pulumi.yaml").read_text())
        # The checkout's Pulumi.yaml names a virtualenv folder relative to the project; the copy runs
        # the interpreter these tests run under instead (PULUMI_PYTHON_CMD, read by the language host).
        pulumi_yaml["runtime"] = "python"
        pulumi_yaml["plugins"] = project_plugins(engine_bin)
        (project / "Pulumi.yaml").write_text(yaml.safe_dump(pulumi_yaml, sort_keys=False))
        return cls(project=project, env=pulumi_env(engine_bin, kubeconfig, scratch))

    @classmethod
    def program(cls, project: Path, engine_bin: Path, kubeconfig: Path, scratch: Path, name: str,
                runtime: str, files: dict[str, str], extra: Optional[dict] = None) -> "PulumiWorkspace":
        """A small project of its own (a team's program) with ``files`` beside its Pulumi.yaml."""
        project.mkdir(parents=True)
        settings = {"name": name, "runtime": runtime, **(extra or {})}
        plugins = project_plugins(engine_bin)
        plugins["providers"] += (settings.pop("plugins", None) or {}).get("providers", [])
        (project / "Pulumi.yaml").write_text(yaml.safe_dump({**settings, "plugins": plugins}, sort_keys=False))
        for relative, text in files.items():
            (project / relative).parent.mkdir(parents=True, exist_ok=True)
            (project / relative).write_text(text)
        return cls(project=project, env=pulumi_env(engine_bin, kubeconfig, scratch))

    def pulumi(self, *args: str, timeout: float = COMMAND_TIMEOUT) -> subprocess.CompletedProcess:
        done = subprocess.run([str(Path(self.env["GPU_FABRIC_ENGINE_BIN"]) / "pulumi"), *args,
                               "--non-interactive", "--color", "never"],
                              cwd=self.project, env=self.env, capture_output=True, text=True, timeout=timeout)
        return done

    def stack_init(self, stack: str) -> None:
        done = self.pulumi("stack", "init", stack)
        assert done.returncode == 0, done.stdout + done.stderr


def project_plugins(engine_bin: Path) -> dict:
    """A project's ``plugins:`` naming the Kubernetes provider ``scripts/engine-tools`` built: the engine
    consults project plugins before $PATH and its plugin cache (sdk/go/common/workspace/plugins.go,
    ``getPluginInfoAndPath``), so it neither downloads one nor warns about an ambient binary."""
    version = _pinned_kubernetes_sdk()
    return {"providers": [{"name": "kubernetes", "version": version, "path": str(engine_bin)}]}


def _pinned_kubernetes_sdk() -> str:
    from importlib.metadata import version

    return version("pulumi-kubernetes")


def pulumi_env(engine_bin: Path, kubeconfig: Path, scratch: Path) -> dict:
    """The environment of every ``pulumi`` call: file state, passphrase secrets, plugins only from
    ``engine_bin`` (no automatic acquisition), no update check, the tests' own interpreter."""
    state = scratch / "pulumi-state"
    state.mkdir(parents=True, exist_ok=True)
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("PULUMI_", "AWS_", "KUBE"))}
    env.update({
        "PATH": f"{engine_bin}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        "GPU_FABRIC_ENGINE_BIN": str(engine_bin),
        "PULUMI_HOME": str(scratch / "pulumi-home"),
        "PULUMI_BACKEND_URL": f"file://{state}",
        "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE,
        "PULUMI_SKIP_UPDATE_CHECK": "true",
        "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
        "PULUMI_DIY_BACKEND_NO_LEGACY_WARNING": "true",
        "PULUMI_PYTHON_CMD": sys.executable,
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "KUBECONFIG": str(kubeconfig),
    })
    return env


def output_of(done: subprocess.CompletedProcess) -> str:
    return f"exit {done.returncode}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"



# ------------------------------------------------------------------------------------------ kueue


def kueue_log_tail(plane: ControlPlane, lines: int = 60) -> str:
    """The end of Kueue's log in a control plane started with ``kueue=True`` (for failure messages)."""
    log = plane.folder / "logs" / "kueue.log" if plane.folder is not None else None
    if log is None or not log.is_file():
        return "(no Kueue log: not a control plane started by scripts/control-plane --kueue)"
    return f"--- tail of {log}\n" + "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


def control_plane_state(plane: ControlPlane) -> dict:
    """What ``scripts/control-plane start`` recorded in ``DIR/processes.json`` (pids, ports, Kueue's)."""
    if plane.folder is None:
        return {}
    return json.loads((plane.folder / "processes.json").read_text())


def wait_for(what: str, probe, timeout: float = 60.0, interval: float = 0.5, explain=None) -> Any:
    """Poll ``probe()`` until it returns something truthy (returned); on timeout fail with ``what`` and
    ``explain()`` (e.g. the last object seen and a log tail)."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() >= deadline:
            detail = explain() if explain is not None else ""
            raise AssertionError(f"{what}: not after {timeout:.0f}s\n{detail}")
        time.sleep(interval)
