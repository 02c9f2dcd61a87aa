"""``gpu-fabric render`` and ``gpu-fabric lint`` as users run them: their command lines, exit codes and output.

The console script itself is started where the process is what is tested (two renders in two
processes writing byte-identical files; a refusal without a traceback); elsewhere the same command
line runs in this process (``support.bad_input.run_cli``), which gives the exit code, stdout and
stderr the process would, for a fraction of the start-up.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from support.bad_input import run_cli
from support.kueue_schema import SCHEMA_DIR, validate_kueue_object
from support.stack_configs import PROJECT_DIR

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "seed"


def console_script(*args, cwd=PROJECT_DIR) -> subprocess.CompletedProcess:
    """``gpu-fabric ARGS`` started as a process: the installed console script (else ``-m gpu_fabric.cli``)."""
    script = Path(sys.executable).with_name("gpu-fabric")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "gpu_fabric.cli"]
    return subprocess.run([*command, *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def gpu_fabric(*args, cwd=PROJECT_DIR) -> subprocess.CompletedProcess:
    """``gpu-fabric ARGS`` in this process, from ``cwd``, as the process would have ended (exit code, output)."""
    outcome = run_cli(*args, cwd=cwd)
    return subprocess.CompletedProcess(list(args), outcome.code, outcome.out, outcome.err)


def snapshot(folder: Path) -> dict:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_render_seed_is_byte_identical_and_conforms(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    run = console_script("render", "--stack", "seed-rdma", "--out", str(first))
    assert run.returncode == 0, run.stderr
    assert "LocalQueue" in run.stdout and "ModelDeployment" in run.stdout
    assert console_script("render", "--stack", "seed-rdma", "--out", str(second)).returncode == 0
    assert snapshot(first) == snapshot(second)

    queue = yaml.safe_load((first / "k8s" / "team-a" / "localqueue-gpustack-fnv64-c4680bb149644f1c.yaml").read_text())
    assert queue["spec"]["clusterQueue"] == "gpustack--nvidia-a10g-linux-amd64"
    resources = json.loads((first / "resources.json").read_text())
    assert {r["type"] for r in resources} >= {"gpu-fabric:index:GpuFabric", "kubernetes:worker.gpustack.ai/v1alpha1:ModelDeployment"}
    assert all({"type", "name", "parent", "inputs"} <= set(r) for r in resources)
    if SCHEMA_DIR.is_dir():
        for path in (first / "k8s").rglob("*.yaml"):
            manifest = yaml.safe_load(path.read_text())
            if manifest["apiVersion"].startswith("kueue.x-k8s.io/"):
                validate_kueue_object(manifest)


def test_rendered_seed_passes_lint(tmp_path):
    assert gpu_fabric("render", "--stack", "seed-rdma", "--out", str(tmp_path)).returncode == 0
    lint = gpu_fabric("lint", *map(str, sorted((tmp_path / "k8s").rglob("*.yaml"))))
    assert lint.returncode == 0, lint.stdout


def test_bad_configuration_exits_2_with_the_path_and_no_traceback(tmp_path):
    shutil.copytree(PROJECT_DIR / "stacks", tmp_path / "stacks")
    stack_file = tmp_path / "stacks" / "Pulumi.seed-rdma.yaml"
    stack_file.write_text(stack_file.read_text().replace("kind: Decode", "kind: Decoder"))
    run = console_script("render", "--project", str(tmp_path), "--stack", "seed-rdma", "--out", str(tmp_path / "out"))
    assert run.returncode == 2
    assert "modelDeployments[0].roles[1].kind" in run.stderr
    assert "Traceback" not in run.stderr + run.stdout


def test_unknown_stack_exits_2():
    run = gpu_fabric("render", "--stack", "no-such-stack")
    assert run.returncode == 2 and "no stack 'no-such-stack'" in run.stderr


def test_unknown_configuration_key_is_refused(tmp_path):
    shutil.copytree(PROJECT_DIR / "stacks", tmp_path / "stacks")
    stack_file = tmp_path / "stacks" / "Pulumi.seed-rdma.yaml"
    stack_file.write_text(stack_file.read_text().replace("  gpu-fabric:namespaces:", "  gpu-fabric:namespace: x\n  gpu-fabric:namespaces:"))
    run = gpu_fabric("render", "--project", str(tmp_path), "--stack", "seed-rdma", "--out", str(tmp_path / "out"))
    assert run.returncode == 2 and "namespace: unknown configuration key" in run.stderr


@pytest.mark.parametrize("operator, deployment", [
    (None, "qwen-pd-seed-verbatim.yaml"),  # the default (0.10.0) takes the walkthrough as written
    ("main@5cfac77b", "qwen-pd.yaml"),    # the pin takes the engine.version shape of its own walkthrough
])
def test_lint_passes_the_seed_and_prints_the_grants(operator, deployment):
    run = gpu_fabric("lint", *(("--operator", operator) if operator else ()),
                     str(FIXTURES / deployment), str(FIXTURES / "mooncake-dram.yaml"))
    assert run.returncode == 0, run.stdout
    assert f"GPUStack operator {operator or '0.10.0'} assumed" in run.stdout
    assert "role prefill (rdma, 2 interfaces): device.gpustack.ai/rdma: 2" in run.stdout
    assert "KVCacheBackend mooncake-dram members[0] (rdma): device.gpustack.ai/rdma: 2" in run.stdout
    assert "1 other objects passed over" in run.stdout and "0 errors, 0 warnings" in run.stdout


def test_lint_refuses_the_seed_without_router_and_kv_transfer():
    run = gpu_fabric("lint", str(FIXTURES / "qwen-pd-no-transfer.yaml"))
    # The operator's webhook or the CRD schema refuses these at apply: unusable input, exit 2 (docs/rules.md).
    assert run.returncode == 2
    assert ("ERROR ModelDeployment team-a/qwen-pd spec.roles[0].resources.interface: "
            "no effective RDMA or EFA transfer leg uses the requested interfaces") in run.stdout


def test_lint_resolves_references_across_files(tmp_path):
    deployment = yaml.safe_load((FIXTURES / "qwen-pd-no-transfer.yaml").read_text())
    deployment["spec"]["kvCache"] = {"poolRef": {"name": "shared"}}
    (tmp_path / "deployment.yaml").write_text(yaml.safe_dump(deployment))
    (tmp_path / "cache.yaml").write_text(yaml.safe_dump_all([
        {"apiVersion": "worker.gpustack.ai/v1", "kind": "KVCachePool", "metadata": {"name": "pool"},
         "spec": {"backends": ["mooncake-dram"], "quota": {"total": "1Ti"}}},
        {"apiVersion": "worker.gpustack.ai/v1", "kind": "KVCachePoolBinding",
         "metadata": {"name": "shared", "namespace": "team-a"},
         "spec": {"poolRef": {"name": "pool"}, "quota": {"ceiling": "8Gi"}, "domain": {"blockSize": 64, "dtype": "bfloat16"}}},
    ]))
    without_backend = gpu_fabric("lint", str(tmp_path / "deployment.yaml"), str(tmp_path / "cache.yaml"))
    assert without_backend.returncode == 2 and "cache backend must resolve before requesting interfaces" in without_backend.stdout
    with_backend = gpu_fabric("lint", str(tmp_path / "deployment.yaml"), str(tmp_path / "cache.yaml"),
                              str(FIXTURES / "mooncake-dram.yaml"))
    assert with_backend.returncode == 0, with_backend.stdout


def test_lint_missing_file_exits_2(tmp_path):
    run = gpu_fabric("lint", str(tmp_path / "absent.yaml"))
    assert run.returncode == 2 and "absent.yaml" in run.stderr


def test_readme_main_job_renders_and_checks_every_example_stack(tmp_path):
    shutil.copytree(PROJECT_DIR / "stacks", tmp_path / "stacks")
    stacks = sorted(p.name[len("Pulumi."):-len(".yaml")] for p in (tmp_path / "stacks").glob("Pulumi.*.yaml"))
    render = gpu_fabric("render", "--project", str(tmp_path))
    assert render.returncode == 0, render.stderr
    assert all((tmp_path / "out" / stack / "resources.json").is_file() for stack in stacks)
    check = gpu_fabric("check", "--project", str(tmp_path))
    assert check.returncode == 0, check.stdout
    assert [line.split(":")[0] for line in check.stdout.splitlines() if line.startswith("stack ")] == \
        [f"stack {stack}" for stack in stacks]


def test_lint_at_the_pin_refuses_the_seed_verbatim_engine_image_naming_file_object_and_replacement():
    run = gpu_fabric("lint", "--operator", "main@5cfac77b", str(FIXTURES / "qwen-pd-seed-verbatim.yaml"))
    # The operator's webhook or the CRD schema refuses these at apply: unusable input, exit 2 (docs/rules.md).
    assert run.returncode == 2
    line = next(line for line in run.stdout.splitlines() if line.startswith("ERROR"))
    assert line.startswith("ERROR ModelDeployment team-a/qwen-pd spec.engine.image: unknown field")
    assert "qwen-pd-seed-verbatim.yaml" in line and "spec.roles[].image" in line


def test_render_at_the_pin_refuses_engine_image_with_exit_2_naming_the_config_path(tmp_path):
    shutil.copytree(PROJECT_DIR / "stacks", tmp_path / "stacks")
    stack_file = tmp_path / "stacks" / "Pulumi.seed-rdma.yaml"
    text = stack_file.read_text()
    assert 'gpustackOperator: "0.10.0"' in text and "image: gpustack/runner:cuda13.0-vllm0.29.0" in text
    stack_file.write_text(text.replace('gpustackOperator: "0.10.0"', 'gpustackOperator: "main@5cfac77b"'))
    run = gpu_fabric("render", "--project", str(tmp_path), "--stack", "seed-rdma", "--out", str(tmp_path / "out"))
    assert run.returncode == 2
    assert "modelDeployments[0].engine.image: unknown field" in run.stderr and "spec.roles[].image" in run.stderr
    assert "Traceback" not in run.stderr + run.stdout
    assert not (tmp_path / "out").exists()


def test_version_names_every_mirrored_operator_line_with_its_source():
    from gpu_fabric.gpustack.operator_pin import OPERATOR_COMMIT, SCHEMA_COMMIT

    from gpu_fabric.aws.catalog.table import bundled_table_origin

    run = gpu_fabric("--version")
    assert run.returncode == 0
    assert OPERATOR_COMMIT[:12] in run.stdout and SCHEMA_COMMIT[:12] in run.stdout
    assert "default 0.10.0" in run.stdout
    for line, release in (("0.9", "0.9.2"), ("0.10", "0.10.0"), ("0.11", "0.11.2")):
        assert f"  {line} ({release}): docs-derived from the v{release} docs" in run.stdout
    # How old the bundled instance table is, and from where, so a reader can judge its facts.
    assert f"bundled EC2 table {bundled_table_origin().describe()}" in run.stdout
    assert bundled_table_origin().at != "unknown" and bundled_table_origin().region == "us-east-1"


def test_lint_names_the_file_for_objects_without_a_namespace(tmp_path):
    deployment = yaml.safe_load((FIXTURES / "qwen-pd-seed-verbatim.yaml").read_text())
    del deployment["metadata"]["namespace"]
    (tmp_path / "md.yaml").write_text(yaml.safe_dump(deployment))
    run = gpu_fabric("lint", "--operator", "main@5cfac77b", str(tmp_path / "md.yaml"))
    # The operator's webhook or the CRD schema refuses these at apply: unusable input, exit 2 (docs/rules.md).
    assert run.returncode == 2
    assert "ERROR ModelDeployment default/qwen-pd spec.engine.image: unknown field" in run.stdout
    assert f"({tmp_path / 'md.yaml'})" in run.stdout


# -- another team's project, rendered from its own folder.

def _platform_project(root: Path, *, program: bool = True, project_yaml: str | None = None) -> Path:
    (root / "stacks").mkdir(parents=True)
    shutil.copy(PROJECT_DIR / "stacks" / "Pulumi.seed-rdma.yaml", root / "stacks" / "Pulumi.seed-rdma.yaml")
    if program:
        shutil.copy(PROJECT_DIR / "stacks" / "__main__.py", root / "stacks" / "__main__.py")
    (root / "Pulumi.yaml").write_text(project_yaml or "name: platform\nruntime: python\nmain: stacks/\nstackConfigDir: stacks\n")
    return root


def test_urns_carry_the_rendered_projects_name(tmp_path):
    from gpu_fabric.program.urn import parse_urn

    project = _platform_project(tmp_path / "platform")
    outcome = run_cli("render", "--project", str(project), "--stack", "seed-rdma", "--out", str(tmp_path / "out"))
    assert outcome.code == 0, outcome.describe()
    resources = json.loads((tmp_path / "out" / "resources.json").read_text())
    assert resources and {parse_urn(r["urn"]).project for r in resources} == {"platform"}
    assert {parse_urn(r["parent"]).project for r in resources if r["parent"]} == {"platform"}


def test_main_may_name_the_projects_own_program_file(tmp_path):
    from gpu_fabric.program.render import render_stack

    project = _platform_project(tmp_path, program=False,
                                project_yaml="name: infra\nruntime: python\nmain: infra/fabric.py\nstackConfigDir: stacks\n")
    (project / "infra").mkdir()
    # Their own program, run instead of stacks/__main__.py; its URNs say their project.
    (project / "infra" / "fabric.py").write_text(
        "import pulumi\npulumi.ComponentResource('acme:index:Thing', 'thing')\n")
    result = render_stack("seed-rdma", project)
    assert [r.urn for r in result.resources] == ["urn:pulumi:seed-rdma::infra::acme:index:Thing::thing"]


def test_project_without_the_stack_program_gets_one_line_saying_what_to_add(tmp_path):

    project = _platform_project(tmp_path, program=False)
    outcome = run_cli("render", "--project", str(project), "--stack", "seed-rdma", "--out", str(tmp_path / "out"))
    assert outcome.code == 2 and not outcome.crashed, outcome.describe()
    assert outcome.err.count("\n") == 1
    assert "stacks/__main__.py" in outcome.err and "build_stack()" in outcome.err and "main:" in outcome.err
    assert not (tmp_path / "out").exists()


def test_unusable_project_file_is_named(tmp_path):

    project = _platform_project(tmp_path, project_yaml="runtime: python\n")
    outcome = run_cli("render", "--project", str(project), "--stack", "seed-rdma", "--out", str(tmp_path / "out"))
    assert outcome.code == 2 and not outcome.crashed, outcome.describe()
    assert "Pulumi.yaml" in outcome.err and "name:" in outcome.err


def test_unusable_project_file_is_named_when_every_stack_is_rendered(tmp_path):

    project = _platform_project(tmp_path, project_yaml="name: [not, a, name]\n")
    for command in ("render", "check"):
        outcome = run_cli(command, "--project", str(project))
        assert outcome.code == 2 and not outcome.crashed, outcome.describe()
        assert outcome.err.count("\n") == 1 and "Pulumi.yaml" in outcome.err and "name:" in outcome.err


@pytest.mark.parametrize("command", ["render", "check"])
def test_a_stack_program_that_raises_is_one_line_naming_its_file_and_line(tmp_path, command):
    # A team's own program: its exception is reported where it was raised, not as a traceback through Pulumi.

    (tmp_path / "stacks").mkdir()
    shutil.copy(PROJECT_DIR / "stacks" / "Pulumi.seed-rdma.yaml", tmp_path / "stacks")
    program = tmp_path / "stacks" / "__main__.py"
    program.write_text("import os\n\nraise RuntimeError('no VPC named\\n  prod')\n")
    extra = ["--out", str(tmp_path / "out")] if command == "render" else []
    outcome = run_cli(command, "--project", str(tmp_path), "--stack", "seed-rdma", *extra)
    assert outcome.code == 2 and "Traceback" not in outcome.err
    assert outcome.err == (f"gpu-fabric: stack seed-rdma: the stack program {program} raised RuntimeError "
                           f"at {program}:3: no VPC named prod\n")
    assert not (tmp_path / "out").exists()
