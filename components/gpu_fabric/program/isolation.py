"""What a stack program run offline may not do to the command running it: end the process early, or
write on the command's standard output.

``gpu-fabric render``, ``check``, ``diff`` and ``verify`` run the team's program inside their own
process. A program that calls ``sys.exit()`` or ``os._exit()`` part-way has registered only part of
its resources, often none; a check of that part would pass vacuously, and ``os._exit`` would end the
command itself with the program's exit code and no word. A ``print()`` in the program would land in
the middle of ``diff --json`` or ``--markdown``. So while the program runs:

* ``os._exit`` raises :class:`ProgramExited` instead of ending the process (``sys.exit`` already
  raises ``SystemExit``); the render turns either into one line naming the program file;
* standard output -- Python's ``sys.stdout`` and file descriptor 1, which processes the program
  starts inherit -- goes to standard error.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Iterator

process_exit = os._exit
"""The real ``os._exit``, for code that must end its own process while a program's exit is refused."""


class ProgramExited(BaseException):
    """``os._exit(code)`` called by a stack program, raised in its place.

    A ``BaseException``, as ``SystemExit`` is, so that a program's ``except Exception`` does not
    swallow it and carry on as if it had not asked to stop.
    """

    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


@contextlib.contextmanager
def exits_refused() -> Iterator[None]:
    """While the block runs, ``os._exit(code)`` raises :class:`ProgramExited` instead of ending the process."""

    def refuse(code: int) -> None:
        raise ProgramExited(code)

    saved = os._exit
    os._exit = refuse  # type: ignore[assignment]
    try:
        yield
    finally:
        os._exit = saved


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """While the block runs, whatever is written on standard output goes to standard error.

    Both levels: ``sys.stdout`` (``print``) and file descriptor 1, so that a process the program
    starts, which inherits the descriptor, writes on standard error too. A closed descriptor is left
    as it is (nothing can be written there anyway).
    """
    for stream in (sys.stdout, sys.stderr):
        _flush(stream)
    saved = _point_fd_1_at_stderr()
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            _flush(stream)
        if saved is not None:
            os.dup2(saved, 1)
            os.close(saved)


def _point_fd_1_at_stderr() -> int | None:
    """Point descriptor 1 at descriptor 2; return a (non-inheritable) copy of the old descriptor 1."""
    try:
        saved = os.dup(1)
    except OSError:
        return None
    try:
        os.dup2(2, 1)
    except OSError:
        os.close(saved)
        return None
    return saved


def _flush(stream: object) -> None:
    flush = getattr(stream, "flush", None)
    if flush is not None:
        with contextlib.suppress(OSError, ValueError):
            flush()
