"""One function run in a second process that never outlives the command and never writes on its stdout.

``gpu-fabric diff`` renders the base in a second process while it renders the head (two CPU-bound
renders at once). A ``ProcessPoolExecutor`` worker outlives its parent when the parent ends without
shutting the pool down (its call queue's pipe stays open in the worker), and it inherits the
parent's standard output, so ``gpu-fabric diff ... | cat`` -- and any caller reading the output to
its end, such as ``subprocess.run(..., capture_output=True)`` -- waits forever. Here:

* the child starts with descriptor 1 pointing at the parent's standard error (as does
  multiprocessing's resource tracker, started along with it), so it never holds the parent's stdout;
* the parent terminates the child on every way out of the ``with`` block (a result, an error,
  an interrupt), and waits for it;
* a thread in the child reads a pipe only the parent writes to; when the parent is gone however it
  ended (a signal, ``os._exit``), the read ends and the child exits;
* the child ignores SIGINT: Ctrl-C reaches the whole process group, and the parent, which owns the
  command, unwinds and ends the child itself -- a KeyboardInterrupt in the child would only print its
  traceback on the shared standard error.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import sys
import threading
from multiprocessing.connection import Connection
from typing import Any, Callable, Iterator

from gpu_fabric.interpreter.collector import no_collection_at_exit
from gpu_fabric.program.isolation import stdout_to_stderr

JOIN_SECONDS = 5.0
"""How long the parent waits for a child that has answered (or been terminated) to exit."""


class WorkerDied(Exception):
    """The child ended without an answer (killed, out of memory)."""


class Worker:
    """``function(*args)`` in a spawned process; :meth:`result` returns or raises what it did.

    Use as a context manager: leaving the block ends the child whatever happened.
    """

    def __init__(self, function: Callable[..., Any], *args: Any):
        # spawn, not fork: the parent may already run Pulumi's threads and event loop.
        context = multiprocessing.get_context("spawn")
        self._answers, answer_end = context.Pipe(duplex=False)
        lifeline_end, self._lifeline = context.Pipe(duplex=False)
        self._process = context.Process(target=_serve, args=(function, args, answer_end, lifeline_end), daemon=True)
        self._answered = False
        # The child (and the resource tracker it may start) inherit fd 1 as stderr, and SIGINT ignored.
        with stdout_to_stderr(), _sigint_ignored():
            self._process.start()
        answer_end.close()
        lifeline_end.close()

    def __enter__(self) -> "Worker":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def result(self) -> Any:
        """What the function returned; what it raised is raised here; :class:`WorkerDied` without an answer."""
        try:
            kind, value = self._answers.recv()
        except (EOFError, OSError):
            raise WorkerDied(f"the worker process ended without an answer (exit code {self._process.exitcode})") from None
        self._answered = True
        if kind == "raised":
            raise value
        return value

    def close(self) -> None:
        """End the child (it has answered, or its answer is no longer wanted) and wait for it."""
        self._lifeline.close()
        self._answers.close()
        process = self._process
        # A child that has answered is on its way out: let it finish; one that has not is stopped now
        # (closing the lifeline above already tells it to exit).
        process.join(timeout=JOIN_SECONDS if self._answered else 0.1)
        if process.is_alive():
            process.terminate()
            process.join(timeout=JOIN_SECONDS)
        if process.is_alive():
            process.kill()
            process.join()
        process.close()


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    """SIGINT ignored while a child starts: an ignored signal stays ignored across ``exec``, and Python
    installs its KeyboardInterrupt handler only where SIGINT is not ignored (signal(2), the signal module)."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may change handlers
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        if previous is not None:  # None: a handler set outside Python, which cannot be put back
            signal.signal(signal.SIGINT, previous)


def _serve(function: Callable[..., Any], args: tuple[Any, ...], answers: Connection, lifeline: Connection) -> None:
    os.dup2(2, 1)  # this process writes nothing on the parent's stdout, whatever it runs
    sys.stdout = sys.stderr
    threading.Thread(target=_exit_with_parent, args=(lifeline,), daemon=True).start()
    try:
        answer: tuple[str, Any] = ("returned", function(*args))
    except BaseException as error:  # noqa: BLE001 - everything goes back to the parent, which decides
        answer = ("raised", error)
    try:
        answers.send(answer)
    except Exception as error:  # noqa: BLE001 - an answer that does not pickle: say so instead
        answers.send(("raised", WorkerDied(f"the worker's answer could not be sent back: {type(error).__name__}: {error}")))
    # The parent waits for this process to end; its interpreter's exit would walk the render's heap first.
    no_collection_at_exit()


def _exit_with_parent(lifeline: Connection) -> None:
    try:
        lifeline.recv_bytes()  # the parent never writes: this returns when its end closes
    except (EOFError, OSError):
        pass
    os._exit(1)
