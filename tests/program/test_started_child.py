"""A function started in a forked child (``start_in_child``, as ``gpu-fabric diff`` renders its base): it answers or
raises, and one that ends with its parent never writes on the caller's stdout and never outlives it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import gpu_fabric
from gpu_fabric.program.completion import ProgramEnded, start_in_child

ENV = {**os.environ, "PYTHONPATH": str(Path(gpu_fabric.__file__).resolve().parents[1])}


def gone(pid: int, within: float = 20.0) -> bool:
    """The process ``pid`` has ended (or is a zombie waiting for its reaper)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.1)
    return False


def test_the_answer_comes_back_and_the_child_is_reaped():
    with start_in_child(os.getpid) as started:
        child = started.result()
    assert child == started.pid != os.getpid()
    with pytest.raises(ChildProcessError):
        os.waitpid(child, os.WNOHANG)  # reaped already: no zombie left behind


def test_what_the_function_raises_is_raised_in_the_caller():
    with start_in_child(lambda: int("not a number")) as started:
        with pytest.raises(ValueError, match="not a number"):
            started.result()


def test_a_child_that_ends_without_its_report_is_named_so():
    with start_in_child(lambda: os._exit(3)) as started:
        with pytest.raises(ProgramEnded, match="exit code 3"):
            started.result()


def test_leaving_the_block_early_ends_a_busy_child():
    begun = time.monotonic()
    with start_in_child(lambda: time.sleep(600)) as started:
        pid = started.pid
    assert gone(pid, within=1.0) and time.monotonic() - begun < 30


def _script(body: str) -> subprocess.CompletedProcess:
    program = "import os, sys, time\nfrom gpu_fabric.program.completion import start_in_child\n" + textwrap.dedent(body)
    # capture_output reads both pipes to their end: it returns only once no process holds them.
    return subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120, env=ENV)


def test_a_child_that_ends_with_its_parent_dies_with_it_and_holds_none_of_its_pipes():
    run = _script("""
        started = start_in_child(lambda: time.sleep(600), ends_with_parent=True)
        sys.stderr.write(f"{started.pid}\\n")
        sys.stderr.flush()
        time.sleep(0.5)  # the child has asked to die with its parent by now
        os._exit(0)  # no cleanup at all: the child must not outlive this process
    """)
    assert run.returncode == 0 and run.stdout == ""
    assert gone(int(run.stderr.split()[0]))


def test_a_child_that_ends_with_its_parent_writes_on_stderr_never_on_the_callers_stdout():
    run = _script("""
        with start_in_child(lambda: os.system("echo from a child of the child"), ends_with_parent=True) as started:
            started.result()
        with start_in_child(lambda: print("printed by the child"), ends_with_parent=True) as started:
            started.result()
        print("the caller's own output")
    """)
    assert run.returncode == 0, run.stderr
    assert run.stdout == "the caller's own output\n"
    assert "from a child of the child" in run.stderr and "printed by the child" in run.stderr
