"""The CI workflows in examples/ci/ and .github/workflows/: structure, and their script run offline.

Everything but the posting step runs here: the changed-stack selection, ``gpu-fabric check`` and
``gpu-fabric diff`` per stack (offline workflow), and ``pulumi preview --json`` rendered by
gpu-fabric (credentials workflow) with a stand-in ``pulumi`` that prints a preview digest.
"""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gpu_fabric.diff.markdown import GITHUB_COMMENT_LIMIT, marker
import gpu_fabric
from support.bad_input import run_cli
from support.stack_configs import PROJECT_DIR

CI = PROJECT_DIR / "examples" / "ci"
SCRIPT = CI / "gpu_fabric_pr.py"
OFFLINE = CI / "gpu-fabric-diff.yml"
PREVIEW = CI / "gpu-fabric-preview.yml"
UP = CI / "gpu-fabric-up.yml"
PULUMI_ACTION = "pulumi/actions@v7"
"""pulumi/actions' current major (v7.0.0, 2026-05-01), with the ``policyPacks``/``policyPackConfigs`` inputs."""
OWN = PROJECT_DIR / ".github" / "workflows" / "gpu-fabric-diff.yml"
PACKAGE = PROJECT_DIR / ".github" / "workflows" / "package.yml"
PREVIEW_FIXTURE = PROJECT_DIR / "tests" / "fixtures" / "preview" / "aws-efa-capacity-change.json"
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.invalid", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}


def workflow(path: Path) -> dict:
    document = yaml.safe_load(path.read_text())
    document["on"] = document.pop(True, document.get("on"))  # YAML 1.1 reads the key `on` as true
    return document


def steps(document: dict) -> list[dict]:
    (job,) = document["jobs"].values()
    return job["steps"]


def posting_script(document: dict) -> str:
    return next(s for s in steps(document) if s.get("uses", "").startswith("actions/github-script@"))["with"]["script"]


@pytest.mark.parametrize("path", [OFFLINE, PREVIEW, UP, OWN, PACKAGE], ids=lambda p: p.name + ("(own)" if ".github" in str(p) else ""))
def test_workflow_files_match_githubs_schema(path):
    checker = Path(sys.executable).with_name("check-jsonschema")
    run = subprocess.run([str(checker), "--builtin-schema", "vendor.github-workflows", str(path)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr


def test_offline_workflow_needs_no_credentials_and_posts_or_edits_by_marker():
    document = workflow(OFFLINE)
    assert "pull_request" in document["on"]
    assert document["permissions"] == {"contents": "read", "pull-requests": "write"}
    text = OFFLINE.read_text()
    assert "secrets." not in text and "id-token" not in text
    checkout = next(s for s in steps(document) if s.get("uses", "").startswith("actions/checkout@"))
    assert checkout["with"]["fetch-depth"] == 0  # the base branch's history, for the merge base
    runs = " ".join(s.get("run", "") for s in steps(document))
    assert '"$GPU_FABRIC_PR_SCRIPT" offline' in runs and '--base "origin/$BASE_REF"' in runs
    post = next(s for s in steps(document) if s.get("uses", "").startswith("actions/github-script@"))
    assert "head.repo.full_name == github.repository" in post["if"]  # forks: summary + artifact only
    script = posting_script(document)
    assert "updateComment" in script and "createComment" in script and "paginate" in script
    assert marker("x").startswith("<!-- gpu-fabric-diff stack=") and "'<!-- gpu-fabric-diff stack='" in script


def test_credentials_workflow_previews_with_the_policy_pack_and_shares_the_posting_step():
    document = workflow(PREVIEW)
    assert document["permissions"]["id-token"] == "write"
    (job,) = document["jobs"].values()
    assert "head.repo.full_name == github.repository" in job["if"]
    assert "secrets.PULUMI_ACCESS_TOKEN" in job["env"]["PULUMI_ACCESS_TOKEN"]
    uses = [s.get("uses", "") for s in steps(document)]
    assert PULUMI_ACTION in uses
    assert any(u.startswith("aws-actions/configure-aws-credentials@") for u in uses)
    runs = " ".join(s.get("run", "") for s in steps(document))
    assert '"$GPU_FABRIC_PR_SCRIPT" preview' in runs and "--policy-pack" in runs
    assert posting_script(document) == posting_script(workflow(OFFLINE))


def test_the_project_uses_the_offline_workflow_on_itself():
    own, example = OWN.read_text().splitlines(), OFFLINE.read_text().splitlines()
    differing = [(a, b) for a, b in zip(example, own) if a != b]
    assert len(own) == len(example)
    assert differing == [('  GPU_FABRIC_INSTALL: ""', "  GPU_FABRIC_INSTALL: ."),
                         ("  GPU_FABRIC_PR_SCRIPT: .github/scripts/gpu_fabric_pr.py",
                          "  GPU_FABRIC_PR_SCRIPT: examples/ci/gpu_fabric_pr.py")]
    assert (PROJECT_DIR / "examples" / "ci" / "gpu_fabric_pr.py").is_file()


def test_up_workflow_applies_each_changed_stack_with_the_pack_through_the_actions_inputs():
    document = workflow(UP)
    assert document["on"] == {"push": {"branches": ["main"]}}
    assert document["permissions"] == {"contents": "read", "id-token": "write"}
    changed = next(s for s in document["jobs"]["stacks"]["steps"] if s.get("id") == "changed")
    assert '"$GPU_FABRIC_PR_SCRIPT" changed-stacks' in changed["run"] and "$GITHUB_OUTPUT" in changed["run"]
    up = document["jobs"]["up"]
    assert up["strategy"]["matrix"]["stack"] == "${{ fromJSON(needs.stacks.outputs.stacks) }}"
    action = next(s for s in up["steps"] if s.get("uses") == PULUMI_ACTION)
    assert action["with"]["command"] == "up" and action["with"]["stack-name"] == "${{ matrix.stack }}"
    assert action["with"]["policyPacks"].strip() == "${{ env.PULUMI_PROJECT }}/policy"


def test_no_example_pins_an_older_pulumi_action():
    for path in (OFFLINE, PREVIEW, UP):
        pinned = re.findall(r"pulumi/actions@(\S+)", path.read_text())
        assert all(f"pulumi/actions@{p}" == PULUMI_ACTION for p in pinned), (path.name, pinned)


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env={**os.environ, **GIT_ENV})


@pytest.fixture
def repo(tmp_path) -> Path:
    """A platform repository: main holds this project's stacks; the work branch changes them."""
    root = tmp_path / "platform"
    root.mkdir()
    shutil.copy(PROJECT_DIR / "Pulumi.yaml", root / "Pulumi.yaml")
    shutil.copytree(PROJECT_DIR / "stacks", root / "stacks", ignore=shutil.ignore_patterns("__pycache__"))
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    git(root, "checkout", "-q", "-b", "work")
    return root


def commit_stack_edit(repo: Path, stack: str, change) -> None:
    path = repo / "stacks" / f"Pulumi.{stack}.yaml"
    document = yaml.safe_load(path.read_text())
    change(document["config"])
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    git(repo, "commit", "-q", "-am", f"edit {stack}")


def run_script(*args: str, env: dict | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    tool = Path(sys.executable).with_name("gpu-fabric")
    environment = {**os.environ, "GPU_FABRIC": str(tool) if tool.exists() else f"{sys.executable} -m gpu_fabric.cli",
                   **(env or {})}
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=600,
                          env=environment, cwd=cwd)


def test_changed_stacks_are_the_edited_ones_or_all_when_the_program_changes(repo):
    stacks = sorted(p.name[len("Pulumi."):-len(".yaml")] for p in (repo / "stacks").glob("Pulumi.*.yaml"))
    assert run_script("changed-stacks", "--base", "main", "--project", str(repo)).stdout.split() == []
    commit_stack_edit(repo, "aws-efa", lambda c: c["gpu-fabric:namespaces"].append("team-ci"))
    assert run_script("changed-stacks", "--base", "main", "--project", str(repo)).stdout.split() == ["aws-efa"]
    (repo / "stacks" / "__main__.py").write_text((repo / "stacks" / "__main__.py").read_text() + "\n")
    git(repo, "commit", "-q", "-am", "program")
    assert run_script("changed-stacks", "--base", "main", "--project", str(repo)).stdout.split() == stacks
    bad = run_script("changed-stacks", "--base", "no-such-branch", "--project", str(repo))
    assert bad.returncode == 2 and "no-such-branch" in bad.stderr


def test_offline_writes_one_comment_per_changed_stack(repo, tmp_path):
    commit_stack_edit(repo, "aws-efa", lambda c: c["gpu-fabric:namespaces"].append("team-ci"))
    out, summary = tmp_path / "comments", tmp_path / "summary.md"
    run = run_script("offline", "--base", "main", "--project", str(repo), "--out", str(out),
                     env={"GITHUB_STEP_SUMMARY": str(summary)})
    check = run_cli("check", "--stack", "aws-efa", "--project", str(repo))
    assert run.returncode == (0 if check.code == 0 else 1), run.stdout + run.stderr
    assert sorted(p.name for p in out.glob("*.md")) == ["aws-efa.md"]
    body = (out / "aws-efa.md").read_text()
    assert body.splitlines()[0] == marker("aws-efa") and len(body) <= GITHUB_COMMENT_LIMIT
    assert "#### Create" in body and "team-ci" in body
    assert "#### gpu-fabric check:" in body
    assert summary.read_text().startswith(marker("aws-efa"))


def test_offline_reports_a_diff_that_cannot_run_in_the_comment(repo, tmp_path):
    commit_stack_edit(repo, "aws-efa", lambda c: c["gpu-fabric:pools"][0].update(acceleratorsPerNode="eight"))
    out = tmp_path / "comments"
    run = run_script("offline", "--base", "main", "--project", str(repo), "--out", str(out))
    assert run.returncode == 1
    body = (out / "aws-efa.md").read_text()
    assert body.splitlines()[0] == marker("aws-efa")
    assert "could not be computed" in body and "acceleratorsPerNode" in body


def test_offline_new_stack_is_all_creates_and_a_removed_one_all_deletes(repo, tmp_path):
    # The first PR of a new stack (and the PR removing one) keeps CI green: a stack missing on one side is all creates or all deletes.
    shutil.copy(repo / "stacks" / "Pulumi.aws-efa.yaml", repo / "stacks" / "Pulumi.brand-new.yaml")
    (repo / "stacks" / "Pulumi.seed-rdma.yaml").unlink()
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "new stack, removed stack")
    listed = run_script("changed-stacks", "--base", "main", "--project", str(repo))
    assert listed.stdout.split() == ["brand-new", "seed-rdma"]
    out = tmp_path / "comments"
    run = run_script("offline", "--base", "main", "--project", str(repo), "--out", str(out))
    check = run_cli("check", "--stack", "brand-new", "--project", str(repo))
    assert run.returncode == (0 if check.code == 0 else 1), run.stdout + run.stderr
    new, removed = (out / "brand-new.md").read_text(), (out / "seed-rdma.md").read_text()
    assert "could not be computed" not in new + removed
    assert "#### Create" in new and "#### Delete" not in new and "#### gpu-fabric check:" in new
    assert "#### Delete" in removed and "#### Create" not in removed
    assert "check: not run (the change removes this stack)" in removed


def fake_pulumi(tmp_path: Path, exit_code: int) -> str:
    script = tmp_path / "fake_pulumi.py"
    script.write_text(
        "import sys, pathlib\n"
        f"assert '--json' in sys.argv and '--policy-pack' in sys.argv\n"
        "import os\n"
        f"pathlib.Path({str(tmp_path / 'skip_checkpoints')!r}).write_text(os.environ.get('PULUMI_SKIP_CHECKPOINTS', '(unset)'))\n"
        f"sys.stdout.write(pathlib.Path({str(PREVIEW_FIXTURE)!r}).read_text())\n"
        f"sys.stderr.write('policy violations: 1 mandatory\\n')\n"
        f"sys.exit({exit_code})\n")
    return f"{sys.executable} {script}"


@pytest.mark.parametrize("exit_code", [0, 255])
def test_preview_renders_pulumis_json_into_the_same_comment(repo, tmp_path, exit_code):
    commit_stack_edit(repo, "aws-efa", lambda c: c["gpu-fabric:namespaces"].append("team-ci"))
    out = tmp_path / "comments"
    run = run_script("preview", "--base", "main", "--project", str(repo), "--out", str(out),
                     env={"PULUMI": fake_pulumi(tmp_path, exit_code)})
    assert run.returncode == (0 if exit_code == 0 else 1), run.stderr
    body = (out / "aws-efa.md").read_text()
    assert body.splitlines()[0] == marker("aws-efa")
    assert "From `pulumi preview --json`" in body and "replaced because `capacityType` changed" in body
    assert ("pulumi preview: **failed**" in body) is (exit_code != 0)
    assert json.loads((out / "aws-efa.preview.json").read_text())["changeSummary"]["replace"] == 1


@pytest.mark.parametrize("jobs_own, engine_sees", [(None, "true"), ("false", "false")])
def test_preview_skips_the_engines_per_step_checkpoints_unless_the_job_says_otherwise(repo, tmp_path, monkeypatch,
                                                                                      jobs_own, engine_sees):
    # A preview persists nothing, yet the engine serializes the whole deployment after every step unless
    # PULUMI_SKIP_CHECKPOINTS is set (gpu_fabric_pr.preview_environment): 150 s against 49 s for a fleet.
    monkeypatch.delenv("PULUMI_SKIP_CHECKPOINTS", raising=False)
    env = {"PULUMI": fake_pulumi(tmp_path, 0)}
    if jobs_own is not None:
        env["PULUMI_SKIP_CHECKPOINTS"] = jobs_own
    run = run_script("preview", "--stack", "aws-efa", "--project", str(repo), "--out", str(tmp_path / "comments"),
                     env=env)
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "skip_checkpoints").read_text() == engine_sees


def test_package_workflow_builds_the_wheel_and_runs_the_readmes_render_and_check_from_it():
    # CI uses the wheel as another repository would, outside the checkout, so a packaging mistake fails CI.
    document = workflow(PACKAGE)
    assert document["permissions"] == {"contents": "read"} and "pull_request" in document["on"]
    runs = [s.get("run", "") for s in steps(document)]
    build = next(i for i, run in enumerate(runs) if "pip wheel . --no-deps" in run)
    install = next(i for i, run in enumerate(runs) if "venv" in run and "dist/gpu_fabric-*.whl" in run)
    use = next(i for i, run in enumerate(runs) if "gpu-fabric\" render" in run)
    assert build < install < use
    readme_first = (PROJECT_DIR / "README.md").read_text().split("```sh\n", 1)[1].split("\n", 1)[0]
    assert "gpu-fabric render && .venv/bin/gpu-fabric check" in readme_first  # the README's first command
    assert 'gpu-fabric" render && "$RUNNER_TEMP/fresh/bin/gpu-fabric" check' in runs[use]
    assert 'cd "$RUNNER_TEMP/project"' in runs[use] and "-e ." not in " ".join(runs)


def test_a_stack_file_in_a_subfolder_is_refused_not_no_stack_changed(repo, tmp_path):
    # Pulumi reads <stackConfigDir>/Pulumi.<stack>.yaml only: a file below it is no stack, and "nothing to comment"
    # would hide that the change changes nothing it meant to.
    (repo / "stacks" / "team").mkdir()
    shutil.copy(repo / "stacks" / "Pulumi.aws-efa.yaml", repo / "stacks" / "team" / "Pulumi.team-efa.yaml")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a stack file in a subfolder")
    for command in (["changed-stacks"], ["offline", "--out", str(tmp_path / "comments")]):
        run = run_script(*command, "--base", "main", "--project", str(repo))
        assert run.returncode == 2 and "no stack changed" not in run.stdout, run.stdout + run.stderr
        assert len(run.stderr.strip().splitlines()) == 1 and "Traceback" not in run.stderr
        assert "stacks/team/Pulumi.team-efa.yaml is a stack file in a subfolder" in run.stderr
        assert "only from stacks/" in run.stderr


def test_a_stack_file_of_a_nested_project_is_left_to_that_project(repo):
    nested = repo / "stacks" / "team"
    nested.mkdir()
    (nested / "Pulumi.yaml").write_text("name: team\nruntime: python\n")
    shutil.copy(repo / "stacks" / "Pulumi.aws-efa.yaml", nested / "Pulumi.team-efa.yaml")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a project of its own")
    run = run_script("changed-stacks", "--base", "main", "--project", str(repo))
    assert run.returncode == 0 and run.stdout.split() == [], run.stderr
