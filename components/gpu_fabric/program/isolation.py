"""What a stack program run offline may not do to the command running it: write on the command's standard
output.

``gpu-fabric render``, ``check``, ``diff`` and ``verify`` run the team's program in a child of their own
process (:mod:`gpu_fabric.program.completion`, which also decides when that run is complete: a program
that ends its process early is refused there). The child shares the command's standard output; a
``print()`` in the program would land in the middle of ``diff --json`` or ``--markdown``. So while the
program runs, standard output -- Python's ``sys.stdout`` and file descriptor 1, which processes the
program starts inherit -- goes to standard error.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Iterator


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
