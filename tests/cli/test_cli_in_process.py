"""The in-process command line the tests use (``support.bad_input.run_cli``) ends as the console script's
process does: the same exit code, stdout and stderr, and nothing left behind in this process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import gpu_fabric.cli
from support.bad_input import run_cli
from support.stack_configs import PROJECT_DIR


def _console_script(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    script = Path(sys.executable).with_name("gpu-fabric")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "gpu_fabric.cli"]
    env = {**os.environ, "COLUMNS": "100"}  # argparse wraps help to the terminal's width
    return subprocess.run([*command, *args], cwd=cwd, capture_output=True, text=True, timeout=300, env=env)


@pytest.mark.parametrize("args", [
    ("--version",),
    ("render", "--help"),
    ("render", "--no-such-option"),          # argparse's usage error: exit 2
    ("render", "--stack", "no-such-stack"),  # gpu-fabric's own: exit 2, one line
    ("lint", "absent.yaml"),
], ids=lambda args: " ".join(args))
def test_in_process_matches_the_console_script(args, tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    process = _console_script(*args, cwd=PROJECT_DIR)
    outcome = run_cli(*args, cwd=PROJECT_DIR)
    assert (outcome.code, outcome.out, outcome.err) == (process.returncode, process.stdout, process.stderr)


def test_exit_codes_follow_pythons_rules_for_system_exit(monkeypatch):
    def exits(code):
        def main(argv):
            print("said", file=sys.stdout)
            raise SystemExit(code)
        return main

    monkeypatch.setattr(gpu_fabric.cli, "main", exits(None))
    assert run_cli().code == 0
    monkeypatch.setattr(gpu_fabric.cli, "main", exits(3))
    assert run_cli().code == 3
    monkeypatch.setattr(gpu_fabric.cli, "main", exits("gpu-fabric: gave up"))
    outcome = run_cli()
    assert (outcome.code, outcome.out, outcome.err) == (1, "said\n", "gpu-fabric: gave up\n")


def test_an_escaping_exception_is_a_crash_with_its_traceback(monkeypatch):
    def main(argv):
        raise ValueError("boom")

    monkeypatch.setattr(gpu_fabric.cli, "main", main)
    outcome = run_cli("render")
    assert outcome.code is None and outcome.crashed and "ValueError: boom" in outcome.err


def test_in_process_runs_leave_the_directory_environment_and_streams_as_they_were(tmp_path):
    before = (os.getcwd(), dict(os.environ), sys.stdout, sys.stderr)
    first = run_cli("render", "--stack", "seed-rdma", "--out", str(tmp_path / "a"), cwd=PROJECT_DIR)
    second = run_cli("render", "--stack", "seed-rdma", "--out", str(tmp_path / "b"), cwd=PROJECT_DIR)
    missing = run_cli("render", "--stack", "seed-rdma", "--out", str(tmp_path / "c"), cwd=tmp_path)  # no project here
    assert (os.getcwd(), dict(os.environ), sys.stdout, sys.stderr) == before
    assert first.code == second.code == 0, first.describe() + second.describe()
    assert first.out.replace(str(tmp_path / "a"), "OUT") == second.out.replace(str(tmp_path / "b"), "OUT")
    assert (tmp_path / "a" / "resources.json").read_bytes() == (tmp_path / "b" / "resources.json").read_bytes()
    assert missing.code == 2 and "no stack program" in missing.err, missing.describe()  # cwd was tmp_path
