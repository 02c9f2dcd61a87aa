"""The garbage collector is paused while a command or a render runs, and given back exactly as it was."""

from __future__ import annotations

import gc

import pulumi
import pytest

from gpu_fabric.interpreter.collector import collector_paused
from gpu_fabric.program.render import render_stack
from support.bad_input import run_cli
from support.stack_configs import PROJECT_DIR


@pytest.fixture
def collector_state():
    enabled = gc.isenabled()
    yield
    (gc.enable if enabled else gc.disable)()


def test_a_pause_stops_the_collector_and_the_outermost_end_restores_it(collector_state) -> None:
    gc.enable()
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled(), "the inner pause ended, the outer one still holds"
    assert gc.isenabled()


def test_a_pause_restores_a_collector_that_was_off(collector_state) -> None:
    gc.disable()
    with collector_paused():
        pass
    assert not gc.isenabled(), "a caller that had turned the collector off keeps it off"


def test_a_pause_ends_on_an_error_too(collector_state) -> None:
    gc.enable()
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_the_stack_program_runs_with_the_collector_paused_and_gets_it_back(collector_state) -> None:
    gc.enable()
    seen: list[bool] = []

    def program() -> None:
        seen.append(gc.isenabled())
        pulumi.ComponentResource("test:index:Probe", "probe")

    result = render_stack("seed-rdma", PROJECT_DIR, config={}, program=program)
    assert [r.name for r in result.resources] == ["probe"]
    assert seen == [False], "the collector ran while the program registered"
    assert gc.isenabled()


def test_a_command_in_process_gives_the_collector_back(collector_state) -> None:
    gc.enable()
    assert run_cli("check", "--stack", "seed-rdma", cwd=PROJECT_DIR).code == 0
    assert gc.isenabled()
    gc.disable()
    run_cli("--version")
    assert not gc.isenabled()


def test_a_command_runs_with_the_collector_paused(collector_state, monkeypatch) -> None:
    import argparse

    import gpu_fabric.cli as cli

    seen: list[bool] = []

    def parser() -> argparse.ArgumentParser:
        made = argparse.ArgumentParser(prog="gpu-fabric")
        made.set_defaults(func=lambda args: seen.append(gc.isenabled()) or 0)
        return made

    monkeypatch.setattr(cli, "build_parser", parser)
    gc.enable()
    assert cli.main([]) == 0
    assert seen == [False], "the command ran with the collector on"
    assert gc.isenabled()


def test_the_console_entry_point_freezes_the_heap_only_after_the_command_returned(collector_state, monkeypatch) -> None:
    import gpu_fabric.cli as cli
    from gpu_fabric.interpreter import collector

    events: list[str] = []
    monkeypatch.setattr(cli, "main", lambda: events.append("command") or 3)
    monkeypatch.setattr(collector.gc, "freeze", lambda: events.append(f"freeze, collector {gc.isenabled()}"))
    assert cli.console_main() == 3, "the command's exit code is the process's"
    # frozen while the collector is still paused: its first pass after the pause would walk the whole heap
    assert events == ["command", "freeze, collector False"]


def test_main_in_process_leaves_the_heap_unfrozen() -> None:
    frozen = gc.get_freeze_count()
    assert run_cli("schema").code == 0  # a command that returns (``--version`` leaves through SystemExit)
    assert gc.get_freeze_count() == frozen


def test_the_console_script_exits_with_everything_written(tmp_path) -> None:
    # The process's own entry point freezes its heap before the interpreter exits; what the command
    # printed and wrote is complete, and the exit code is the command's.
    import subprocess
    import sys

    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "gpu_fabric.cli", "render", "--stack", "seed-rdma", "--out", str(out)],
                          cwd=PROJECT_DIR, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip().endswith(f"wrote {out}/k8s/ and {out}/resources.json")
    in_process = tmp_path / "in-process"
    assert run_cli("render", "--stack", "seed-rdma", "--out", str(in_process), cwd=PROJECT_DIR).code == 0
    written = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert written and written == sorted(p.relative_to(in_process).as_posix() for p in in_process.rglob("*") if p.is_file())
    assert all((out / name).read_bytes() == (in_process / name).read_bytes() for name in written)
