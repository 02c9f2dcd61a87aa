"""Where the command line writes: stdout and stderr through the one escaper, and write failures as one line.

Every character a command prints passes :func:`gpu_fabric.findings.printable.escape_output`, so a
string from the input or a server (an object name holding ``::error file=...::``, an instance type
holding terminal escapes, a stack name holding a newline) cannot act on the terminal or the CI log
that shows it, whichever ``print`` put it there. A stream that cannot be written (a full disk, a
closed descriptor) raises :class:`OutputError`, which the entry point reports in one line.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Any, Iterator, Optional, TextIO

from gpu_fabric.findings.printable import escape_output


class OutputError(Exception):
    """Standard output or error could not be written; the message says which and why."""


class EscapingStream:
    """A text stream that escapes what it is given and writes it to ``inner`` (``None``: a closed descriptor)."""

    def __init__(self, inner: Optional[TextIO], label: str):
        self._inner = inner
        self._label = label
        self._head: Optional[str] = ""

    def write(self, text: str) -> int:
        """Escape ``text`` and write it; raises :class:`OutputError` when the stream cannot take it."""
        escaped, self._head = escape_output(text, self._head)
        self._call("write", escaped)
        return len(text)

    def flush(self) -> None:
        """Flush the stream underneath; raises :class:`OutputError` when it cannot be written."""
        if self._inner is not None:
            self._call("flush")

    def _call(self, method: str, *args: Any) -> None:
        if self._inner is None:
            raise OutputError(f"cannot write {self._label}: it is closed")
        try:
            getattr(self._inner, method)(*args)
        except BrokenPipeError:
            raise
        except (OSError, ValueError) as error:  # ValueError: "I/O operation on closed file"
            reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
            raise OutputError(f"cannot write {self._label}: {reason}") from None

    def __getattr__(self, name: str) -> Any:
        # fileno, isatty, encoding, buffer...: the stream underneath answers.
        if self._inner is None:
            raise AttributeError(name)
        return getattr(self._inner, name)


@contextmanager
def escaped_streams() -> Iterator[None]:
    """``sys.stdout`` and ``sys.stderr`` escaped while the block runs; the streams as they were afterwards."""
    saved = sys.stdout, sys.stderr
    sys.stdout = EscapingStream(saved[0], "standard output")  # type: ignore[assignment]
    sys.stderr = EscapingStream(saved[1], "standard error")  # type: ignore[assignment]
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
