"""``render --out`` never deletes or overwrites what it did not write, and never writes outside DIR."""

import json

import pytest

from support.bad_input import run_cli
from gpu_fabric.cli.render_output import LEDGER, OutputError, safe_relative_path, write_output


def render(out):
    return run_cli("render", "--stack", "seed-rdma", "--out", str(out))


def test_rerender_replaces_its_own_files_and_keeps_foreign_ones(tmp_path):
    out = tmp_path / "out"
    assert render(out).code == 0
    (out / "notes.txt").write_text("mine")
    (out / "k8s" / "mine.yaml").write_text("kind: Mine\n")
    stale = out / "k8s" / "team-a" / "modeldeployment-old.yaml"
    stale.write_text("old")
    ledger = json.loads((out / LEDGER).read_text())
    (out / LEDGER).write_text(json.dumps([*ledger, "k8s/team-a/modeldeployment-old.yaml"]))
    again = render(out)
    assert again.code == 0, again.describe()
    assert (out / "notes.txt").read_text() == "mine" and (out / "k8s" / "mine.yaml").exists()
    assert not stale.exists(), "a file the previous render wrote and this one does not is removed"


def test_a_foreign_file_in_the_way_is_refused_and_nothing_is_written(tmp_path):
    out = tmp_path / "out"
    (out / "k8s" / "team-a").mkdir(parents=True)
    foreign = out / "resources.json"
    foreign.write_text("my own data")
    outcome = render(out)
    assert outcome.code == 2 and "resources.json exists and was not written by gpu-fabric render" in outcome.err
    assert "Traceback" not in outcome.err
    assert foreign.read_text() == "my own data" and not list((out / "k8s" / "team-a").iterdir())


def test_a_render_from_before_the_ledger_is_taken_over_when_identical(tmp_path):
    out = tmp_path / "out"
    assert render(out).code == 0
    (out / LEDGER).unlink()
    assert render(out).code == 0 and (out / LEDGER).is_file()


def test_symlinks_are_not_written_through(tmp_path):
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    elsewhere.mkdir()
    out.mkdir()
    (out / "k8s").symlink_to(elsewhere, target_is_directory=True)
    outcome = render(out)
    assert outcome.code == 2 and "in the way" in outcome.err and not list(elsewhere.iterdir())


@pytest.mark.parametrize("path", ["../escape.yaml", "/etc/passwd", "k8s/../../x.yaml", "k8s/a b.yaml", "k8s/.hidden/x", ""])
def test_paths_that_could_leave_the_folder_are_refused(path):
    with pytest.raises(OutputError):
        safe_relative_path(path)


def test_a_tampered_ledger_cannot_delete_outside_the_folder(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    out = tmp_path / "out"
    out.mkdir()
    (out / LEDGER).write_text(json.dumps(["../victim.txt", "/etc/hostname"]))
    write_output(out, {"resources.json": "[]\n"})
    assert victim.read_text() == "keep"


AMBIENT = {"PULUMI_K8S_ENABLE_SERVER_SIDE_APPLY": "false", "PULUMI_K8S_DELETE_UNREACHABLE": "true",
           "KUBECONFIG": "/nonexistent/kubeconfig", "AWS_REGION": "eu-west-3", "AWS_DEFAULT_REGION": "ap-south-1"}


@pytest.mark.parametrize("target", [None, {"context": "prod"}])
def test_render_is_hermetic(target, tmp_path, monkeypatch):
    from support.bad_input import dump, project_with, stack_document

    document = stack_document("aws-efa")
    if target is not None:
        document["config"]["gpu-fabric:kubernetes"] = target
        for pool in document["config"]["gpu-fabric:pools"]:
            pool["aws"]["clusterName"] = "llm-serving"
    project = project_with(tmp_path / "project", dump(document))
    first = run_cli("render", "--project", str(project), "--stack", "x", "--out", str(tmp_path / "a"))
    for key, value in AMBIENT.items():
        monkeypatch.setenv(key, value)
    second = run_cli("render", "--project", str(project), "--stack", "x", "--out", str(tmp_path / "b"))
    assert first.code == second.code == 0, first.describe() + second.describe()
    assert (tmp_path / "a" / "resources.json").read_bytes() == (tmp_path / "b" / "resources.json").read_bytes()
    import os
    assert os.environ["KUBECONFIG"] == "/nonexistent/kubeconfig", "the environment is restored after the render"


def test_no_traceback_when_the_reader_goes_away(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    script = Path(sys.executable).with_name("gpu-fabric")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "gpu_fabric.cli"]
    from support.stack_configs import PROJECT_DIR

    # `gpu-fabric check | head -1`: stdout closes after the first line.
    run = subprocess.run(" ".join([*command, "check", "--project", str(PROJECT_DIR)]) + " | head -1",
                         shell=True, capture_output=True, text=True, timeout=300)
    assert run.stdout.startswith("stack ") and "Traceback" not in run.stderr and "Exception" not in run.stderr, run.stderr


def test_a_render_made_before_the_ledger_is_replaced_but_foreign_files_stay(tmp_path):
    out = tmp_path / "out"
    assert render(out).code == 0
    (out / LEDGER).unlink()
    old = out / "k8s" / "team-a" / "modeldeployment-retired.yaml"
    old.write_text("kind: ModelDeployment\n")
    (out / "resources.json").write_text(json.dumps([{"urn": "u", "type": "t", "inputs": {}}]))  # changed since
    (out / "README.txt").write_text("mine")
    assert render(out).code == 0
    assert not old.exists() and (out / "README.txt").read_text() == "mine"


@pytest.mark.parametrize("stack", ["../x", "a/b", "..", "x y"])
def test_stack_names_pulumi_refuses_are_refused(stack):
    for command in ("render", "check"):
        outcome = run_cli(command, "--stack", stack)
        assert outcome.code == 2 and "is not a stack name" in outcome.err, outcome.describe()


# -- nothing a planted link, FIFO or folder can redirect ------------------------------------------------


def test_a_fifo_or_folder_where_a_file_belongs_is_refused_without_waiting(tmp_path):
    import os

    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / "resources.json")
    outcome = render(out)
    assert outcome.code == 2 and "resources.json exists and was not written by gpu-fabric render (it is a FIFO)" in outcome.err
    (out / "resources.json").unlink()
    (out / "resources.json").mkdir()
    outcome = render(out)
    assert outcome.code == 2 and "(it is a folder)" in outcome.err, outcome.describe()


def test_a_symlinked_output_folder_or_ledger_is_not_followed(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "out").symlink_to(elsewhere, target_is_directory=True)
    outcome = render(tmp_path / "out")
    assert outcome.code == 2 and "is not a folder" in outcome.err and not list(elsewhere.iterdir())
    victim = tmp_path / "victim.yaml"
    victim.write_text("keep")
    listing = tmp_path / "listing.json"
    listing.write_text(json.dumps(["victim.yaml"]))
    out = tmp_path / "real"
    out.mkdir()
    (out / LEDGER).symlink_to(listing)
    with pytest.raises(OutputError, match="is a symbolic link, not the ledger gpu-fabric render writes"):
        write_output(out, {"resources.json": "[]\n"})
    assert victim.read_text() == "keep" and listing.read_text() == json.dumps(["victim.yaml"])
    assert sorted(p.name for p in out.iterdir()) == [LEDGER], "nothing written"


def test_a_link_planted_after_the_checks_is_not_written_through(tmp_path, monkeypatch):
    from gpu_fabric.cli import render_output

    outside = tmp_path / "outside.yaml"
    outside.write_text("keep")
    out = tmp_path / "out"
    checks = render_output._problems

    def plant_then_check(folder, files, previous):
        found = checks(folder, files, previous)
        (out / "k8s").mkdir(exist_ok=True)
        (out / "k8s" / "a.yaml").symlink_to(outside)  # the race: a link appears between check and write
        return found

    monkeypatch.setattr(render_output, "_problems", plant_then_check)
    with pytest.raises(OutputError, match="a.yaml is a symbolic link; refusing to write through or over it"):
        write_output(out, {"k8s/a.yaml": "kind: Mine\n"})
    assert outside.read_text() == "keep"


def _failing_after(monkeypatch, writes: int) -> None:
    """Folder.write fails (a full disk) after ``writes`` successful writes of files other than the ledger."""
    from gpu_fabric.config.safe_files import Folder

    write = Folder.write
    done = []

    def failing(self, name, data, mode=0o644, *, durable=True):
        if name != LEDGER:
            if len(done) >= writes:
                raise OSError(28, "No space left on device")
            done.append(name)
        return write(self, name, data, mode, durable=durable)

    monkeypatch.setattr(Folder, "write", failing)


def test_a_write_that_fails_part_way_leaves_every_file_it_touched_in_the_ledger(tmp_path, monkeypatch):
    out = tmp_path / "out"
    old = {"k8s/old.yaml": "kind: Old\n", "resources.json": "[1]\n"}
    write_output(out, old)
    new = {"k8s/a.yaml": "kind: A\n", "k8s/b.yaml": "kind: B\n", "resources.json": "[2]\n"}
    with monkeypatch.context() as patched:
        _failing_after(patched, 1)
        with pytest.raises(OSError):
            write_output(out, new)
    assert (out / "k8s" / "a.yaml").read_text() == "kind: A\n"  # written before the failure
    assert set(json.loads((out / LEDGER).read_text())) == set(old) | set(new)
    # The next render with other files takes over what the failed one left: nothing is refused as foreign.
    newer = {"k8s/b.yaml": "kind: B2\n", "resources.json": "[3]\n"}
    write_output(out, newer)
    assert json.loads((out / LEDGER).read_text()) == sorted(newer)
    assert not (out / "k8s" / "a.yaml").exists() and not (out / "k8s" / "old.yaml").exists()
    assert (out / "k8s" / "b.yaml").read_text() == "kind: B2\n"


def test_only_the_ledger_is_synced_to_disk_however_many_files_a_render_writes(tmp_path, monkeypatch):
    import os

    synced = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(fd) or real(fd))
    write_output(tmp_path / "out", {f"k8s/object-{i}.yaml": f"kind: K{i}\n" for i in range(50)})
    assert len(synced) == 2  # the ledger, before the files (every file it may leave) and after them


def test_a_render_of_files_the_ledger_already_lists_syncs_the_ledger_once(tmp_path, monkeypatch):
    import os

    files = {f"k8s/object-{i}.yaml": f"kind: K{i}\n" for i in range(5)}
    write_output(tmp_path / "out", files)
    synced = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(fd) or real(fd))
    write_output(tmp_path / "out", {**files, "k8s/object-0.yaml": "kind: Changed\n"})
    assert len(synced) == 1  # the ledger on disk already lists every file the writes may leave
    assert (tmp_path / "out" / "k8s" / "object-0.yaml").read_text() == "kind: Changed\n"
