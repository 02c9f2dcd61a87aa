"""The second process of ``gpu-fabric diff``: it answers or raises, never writes on the caller's stdout,
and never outlives the command -- however the command ends."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import gpu_fabric
from gpu_fabric.diff.worker import Worker

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


def test_the_answer_comes_back_and_the_process_ends():
    with Worker(os.getpid) as worker:
        child = worker.result()
    assert child != os.getpid() and gone(child)


def test_after_answering_the_worker_leaves_its_heap_out_of_its_exit(tmp_path):
    # The caller waits for the worker to end; its interpreter's exit-time collection would walk the whole
    # render first. An exit handler in the worker records what the collector has frozen by then.
    record = tmp_path / "frozen-at-exit"
    program = (f"import atexit, gc, pathlib\n"  # exec's names are locals: the handler takes them as arguments
               f"atexit.register(lambda path=pathlib.Path({str(record)!r}), frozen=gc.get_freeze_count: "
               f"path.write_text(str(frozen())))")
    with Worker(exec, program) as worker:
        assert worker.result() is None
        worker._process.join(timeout=60)  # its own way out, before leaving the block ends it
    assert int(record.read_text()) > 0


def test_what_the_function_raises_is_raised_in_the_caller():
    with Worker(int, "not a number") as worker:
        with pytest.raises(ValueError, match="not a number"):
            worker.result()


def test_leaving_the_block_early_ends_a_busy_worker():
    started = time.monotonic()
    with Worker(time.sleep, 600) as worker:
        pid = worker._process.pid
    assert gone(pid, within=1.0) and time.monotonic() - started < 30


def _script(body: str) -> subprocess.CompletedProcess:
    program = "import os, sys, time\nfrom gpu_fabric.diff.worker import Worker\n" + textwrap.dedent(body)
    # capture_output reads both pipes to their end: it returns only once no process holds them.
    return subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120, env=ENV)


def test_a_worker_dies_with_its_parent_and_holds_none_of_its_pipes():
    run = _script("""
        worker = Worker(time.sleep, 600)
        sys.stderr.write(f"{worker._process.pid}\\n")
        sys.stderr.flush()
        os._exit(0)  # no cleanup at all: the worker must notice on its own
    """)
    assert run.returncode == 0 and run.stdout == ""
    assert gone(int(run.stderr.split()[0]))


def test_a_worker_writes_on_stderr_never_on_the_callers_stdout():
    run = _script("""
        with Worker(os.system, "echo from a child of the worker") as worker:
            worker.result()
        with Worker(print, "printed by the worker") as worker:
            worker.result()
        print("the caller's own output")
    """)
    assert run.returncode == 0, run.stderr
    assert run.stdout == "the caller's own output\n"
    assert "from a child of the worker" in run.stderr and "printed by the worker" in run.stderr
