"""A render is complete only when the process that ran the program says so.

``gpu-fabric render``, ``check``, ``diff`` and ``verify`` run a team's stack program. A program can end
the process that runs it in more ways than any patch of ``os._exit`` catches: ``posix._exit``, libc's
``_exit`` through ctypes, ``os.execv``, an ``atexit`` handler, a thread that waits for the body to
return, a signal handler that calls ``sys.exit`` later. Run in the command's own process, each of those
ended the command itself -- often with exit 0 and no word, after a check of part of the program.

So the program runs in a forked child of the command (:func:`run_to_completion`). The child runs the
render and writes one framed report on a pipe: the pickled result (or the error it raised), then a
completion record naming the child's pid and the report's length. Only then does it leave, through the
real ``os._exit(0)``: no ``atexit`` handler of the program runs, no signal handler or alarm of the
program ever exists in the command's process. The parent waits on the pipe and on the child's exit (a
pidfd where Linux has one), not on end of file: a grandchild the program forked holds the pipe open as
long as it lives. A report without its completion record, or none at all, is a refusal naming how the
child ended (its exit code, the signal that killed it, the program an ``exec`` replaced it with).

Fork, not spawn: the child starts with everything the command imported (a spawned interpreter would
import the SDKs again, about a second per render); pages are shared copy-on-write. Where ``os.fork``
does not exist (Windows), the render runs in the command's process as it did before: ``sys.exit`` is
still refused, an ``os._exit`` or ``exec`` of the program ends the command there.

What the guarantee does not cover: a program is code running with the command's rights, and one that
sets out to forge the report (write the pipe itself) can. It protects against programs that end
early, not against hostile ones.
"""

from __future__ import annotations

import os
import pickle
import selectors
import signal
import struct
import sys
from typing import Any, Callable, Generic, Optional, TypeVar

T = TypeVar("T")

_HEADER = struct.Struct(">cQ")  # record kind, payload length
_COMPLETION = struct.Struct(">QQ")  # the reporting child's pid, the report's length
REPORT, COMPLETE, NOTE = b"R", b"C", b"N"


class ProgramEnded(Exception):
    """The child ended without a complete report; ``how`` says how ("exit code 0", "killed by SIGKILL")."""

    def __init__(self, how: str):
        super().__init__(how)
        self.how = how


_GRPC_FORK_SUPPORT = "GRPC_ENABLE_FORK_SUPPORT"


def grpc_without_fork_handlers() -> None:
    """Import gRPC, unless something has already, with its fork handlers off; the environment stays as it was.

    gRPC's core reads ``GRPC_ENABLE_FORK_SUPPORT`` once, as ``grpc`` is imported, and by default registers
    ``pthread_atfork`` handlers: at a fork they stop its EventEngine threads, then start them again in both
    processes. When another thread is inside gRPC at that moment -- a server's polling thread always is, and
    ``check --preview`` serves the pack in the command's process -- the core logs "Other threads are currently
    calling into gRPC, skipping fork() handlers", yet the EventEngine's threads still start in the child, over
    state copied in the middle of a call. Measured (grpcio 1.85, a server running, the child doing nothing but
    ``os._exit``): 2 children of 1,000 forks died of SIGSEGV, and ``check --preview`` refused a stack so about
    once in 25 runs. The render's child never uses gRPC (Pulumi's mock monitor is called in-process), so it needs
    none of that machinery: with the handlers off, gRPC's threads are absent from the child as every other
    thread is, and 1,000 forks with a server running gave no crash.

    Called by the commands that render before they import anything (``gpu_fabric.cli``) and by
    :func:`gpu_fabric.program.render.render_stack`. A process that imported gRPC earlier keeps its handlers; a
    render forked there while a gRPC server runs may be refused naming SIGSEGV -- never passed.
    """
    if "grpc" in sys.modules:
        return
    saved = os.environ.get(_GRPC_FORK_SUPPORT)
    os.environ[_GRPC_FORK_SUPPORT] = "false"
    try:
        import grpc  # noqa: F401
    except ImportError:  # pragma: no cover - Pulumi's SDK requires grpcio
        pass
    finally:
        if saved is None:
            del os.environ[_GRPC_FORK_SUPPORT]
        else:
            os.environ[_GRPC_FORK_SUPPORT] = saved


def run_to_completion(function: Callable[[], T]) -> T:
    """``function()`` run in a forked child: what it returned, or what it raised raised here.

    :class:`ProgramEnded` when the child ended before its report was complete.
    """
    if not hasattr(os, "fork"):
        return function()
    with start_in_child(function) as started:
        return started.result()


class Started(Generic[T]):
    """A function running in a forked child (:func:`start_in_child`); :meth:`result` waits for its answer.

    Use as a context manager: leaving the block without the answer ends the child (``SIGKILL``) and reaps it.
    """

    def __init__(self, pid: int, read_end: int):
        self.pid = pid
        self._read_end: Optional[int] = read_end

    def result(self) -> T:
        """What the function returned; what it raised is raised here; :class:`ProgramEnded` without a complete
        report. Called once."""
        if self._read_end is None:
            raise RuntimeError("the child's answer was already taken, or the child was ended")
        read_end, self._read_end = self._read_end, None
        status: Optional[int] = None
        try:
            received, status = _collect(read_end, self.pid)
        finally:
            os.close(read_end)
            if status is None:  # the parent is leaving early (an interrupt): the child goes with it
                _kill_and_reap(self.pid)
        kind, value = _verdict(received, self.pid, status)
        if kind == "raised":
            raise value
        return value

    def close(self) -> None:
        """End the child unless its answer was taken, and reap it."""
        if self._read_end is not None:
            os.close(self._read_end)
            self._read_end = None
            _kill_and_reap(self.pid)

    def __enter__(self) -> "Started[T]":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def start_in_child(function: Callable[[], T], *, ends_with_parent: bool = False) -> Started[T]:
    """Fork a child that runs ``function()`` and reports it (where ``os.fork`` exists); this process goes on.

    ``ends_with_parent``: the child writes nothing on this process's standard output (its descriptor 1 is this
    process's standard error from its start) and is killed as this process ends, however it ends (Linux's
    ``PR_SET_PDEATHSIG``; where that is missing, the caller's ``with`` block is the only end).
    """
    # The child must not write again what this process has buffered.
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        _flush(stream)
    parent = os.getpid()
    read_end, write_end = os.pipe()  # both close on exec: a program that execs leaves no writer behind
    # Ctrl-C reaches the whole process group and is the parent's (it ends the child itself, ``_kill_and_reap``).
    # SIGINT is held back across the fork so that the child ignores it from its first instruction: one that
    # landed before the child's own handler was set unwound the child through this command's frames, where it
    # reported "interrupted" as if it were the command. The parent takes a held SIGINT as the mask is restored.
    held = _sigint_held()
    try:
        pid = os.fork()
    except OSError:
        _sigint_released(held)
        os.close(read_end)
        os.close(write_end)
        raise
    if pid == 0:  # pragma: no cover - the child; measured through its report
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        _sigint_released(held)
        if ends_with_parent:
            _ends_with(parent)
        _child(function, read_end, write_end)
    _sigint_released(held)
    os.close(write_end)
    return Started(pid, read_end)


_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _ends_with(parent: int) -> None:  # pragma: no cover - the child
    """This child is killed when ``parent`` ends, and holds none of its standard output."""
    # Nothing may escape here: an exception would unwind the child through the parent's frames.
    try:
        os.dup2(2, 1)
    except OSError:
        pass
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except Exception:  # noqa: BLE001 - not Linux, no ctypes: the caller's ``with`` block ends the child
        return
    if os.getppid() != parent:  # the parent ended before the request took effect
        os._exit(1)


def _sigint_held() -> bool:
    """Block SIGINT in this thread; whether it was blocked here (only where the platform has signal masks)."""
    if not hasattr(signal, "pthread_sigmask"):
        return False
    return signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})


def _sigint_released(held: bool) -> None:
    if held:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _child(function: Callable[[], Any], read_end: int, write_end: int) -> None:  # pragma: no cover - the child
    """Run ``function``, report, and end this process without returning to the caller's stack."""
    me = os.getpid()
    status = 1
    try:
        _import_lock_released()
        os.close(read_end)
        sys.addaudithook(_exec_noted(write_end, me))
        try:
            answer: tuple[str, Any] = ("returned", function())
        except BaseException as error:  # noqa: BLE001 - the parent decides what it means
            answer = ("raised", error)
        if os.getpid() != me:
            # A grandchild the program forked came back through the render: the child reports, not it.
            status = 0
            return
        _program_signals_off()
        try:
            os.dup2(2, 1)  # what the program's threads still print, and its buffers, go to stderr as before
        except OSError:
            pass
        for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            _flush(stream)
        payload = _pickled(answer)
        _write(write_end, REPORT, payload)
        _write(write_end, COMPLETE, _COMPLETION.pack(me, len(payload)))
        status = 0
    finally:
        os._exit(status)


def _import_lock_released() -> None:
    """Give up the interpreter's import lock where this child inherited it held (it never returns to the frame
    that would release it: the child ends in ``_child``).

    A fork keeps the lock held in the child when the forking thread held it (CPython's
    ``_PyImport_ReInitLock``, Python/import.c: "Forked as a side effect of import"). A Ctrl-C landing just
    after importlib took the lock, in one of its weakref callbacks whose exceptions are printed and swallowed,
    leaves it held by the main thread for good: the child's worker threads -- the SDK registers from a thread
    pool, and imports there -- then wait on it forever, and so does the parent waiting on the child.
    """
    import _imp

    while _imp.lock_held():
        try:
            _imp.release_lock()
        except RuntimeError:  # held by a thread that no longer exists here: nothing this thread can release
            return


def _exec_noted(write_end: int, me: int) -> Callable[[str, tuple[Any, ...]], None]:
    """An audit hook that notes an ``os.exec*`` of the child before it happens, for the refusal to name."""

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event == "os.exec" and os.getpid() == me:
            try:
                _write(write_end, NOTE, os.fsdecode(args[0]).encode("utf-8", "replace"))
            except Exception:  # noqa: BLE001 - a note only; the refusal stands without it
                pass

    return hook


def _program_signals_off() -> None:
    """The program's alarms and signal handlers end with its render: none can interrupt the report."""
    for timer in (signal.ITIMER_REAL, signal.ITIMER_VIRTUAL, signal.ITIMER_PROF):
        signal.setitimer(timer, 0)
    for number in signal.valid_signals():
        try:
            if callable(signal.getsignal(number)):
                signal.signal(number, signal.SIG_DFL)
        except (OSError, ValueError, RuntimeError):
            continue  # SIGKILL, SIGSTOP and the like: no handler to remove


def _pickled(answer: tuple[str, Any]) -> bytes:
    """The answer as the parent unpickles it; an error travels as its class, args and attributes."""
    kind, value = answer
    if kind == "raised":
        value = (type(value), value.args, dict(getattr(value, "__dict__", {})))
    try:
        return pickle.dumps((kind, value), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as error:  # noqa: BLE001 - an answer that does not pickle is said instead
        text = f"the render's answer could not be sent back: {type(error).__name__}: {error}"
        return pickle.dumps(("raised", (RuntimeError, (text,), {})), protocol=pickle.HIGHEST_PROTOCOL)


def _rebuilt(cls: type, args: tuple[Any, ...], attributes: dict[str, Any]) -> BaseException:
    # Without __init__: errors whose constructor takes other arguments than their args (ConfigError takes
    # problems, StackFileError a path and problems) come back as they were raised.
    error = cls.__new__(cls, *args)
    error.args = args
    error.__dict__.update(attributes)
    return error


def _write(fd: int, kind: bytes, payload: bytes) -> None:
    view = memoryview(_HEADER.pack(kind, len(payload)) + payload)
    while view:
        view = view[os.write(fd, view):]


def _collect(read_end: int, pid: int) -> tuple[bytes, int]:
    """Everything the child wrote, and its wait status, once it has ended (reaped)."""
    os.set_blocking(read_end, False)
    received = bytearray()
    pidfd = _pidfd(pid)
    selector = selectors.DefaultSelector()
    try:
        selector.register(read_end, selectors.EVENT_READ)
        if pidfd is not None:
            selector.register(pidfd, selectors.EVENT_READ)
        while True:
            # Without a pidfd, the child's end is polled: a grandchild may keep the pipe open long after.
            ready = {key.fd for key, _ in selector.select(None if pidfd is not None else 0.05)}
            if read_end in ready and not _drain(read_end, received):
                selector.unregister(read_end)  # end of file: every writer is gone; wait for the child alone
                if pidfd is None:
                    _, status = os.waitpid(pid, 0)
                    return bytes(received), status
            if pidfd is None or pidfd in ready:
                ended, status = os.waitpid(pid, 0 if pidfd is not None else os.WNOHANG)
                if ended:
                    _drain(read_end, received)  # what the child wrote before it ended is in the pipe now
                    return bytes(received), status
    finally:
        selector.close()
        if pidfd is not None:
            os.close(pidfd)


def _pidfd(pid: int) -> Optional[int]:
    try:
        return os.pidfd_open(pid)  # type: ignore[attr-defined]  # Linux 5.3 and later
    except (AttributeError, OSError):
        return None


def _drain(fd: int, into: bytearray) -> bool:
    """Read what the pipe holds now; ``False`` at end of file."""
    while True:
        try:
            chunk = os.read(fd, 1 << 20)
        except BlockingIOError:
            return True
        if not chunk:
            return False
        into += chunk


def _kill_and_reap(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


def _verdict(received: bytes, pid: int, status: int) -> tuple[str, Any]:
    """The child's answer when its report is complete; :class:`ProgramEnded` naming how it ended otherwise."""
    records: list[tuple[bytes, bytes]] = []
    offset = 0
    while offset + _HEADER.size <= len(received):
        kind, length = _HEADER.unpack_from(received, offset)
        start = offset + _HEADER.size
        if start + length > len(received):
            break  # cut off: the child ended while it wrote
        records.append((kind, received[start:start + length]))
        offset = start + length
    for (kind, payload), (next_kind, completion) in zip(records, records[1:]):
        if kind == REPORT and next_kind == COMPLETE and completion == _COMPLETION.pack(pid, len(payload)):
            answer, value = pickle.loads(payload)
            return (answer, _rebuilt(*value)) if answer == "raised" else (answer, value)
    execed = [payload.decode("utf-8", "replace") for kind, payload in records if kind == NOTE]
    raise ProgramEnded(_how(status, execed[-1] if execed else None))


def _how(status: int, execed: Optional[str]) -> str:
    """How a child that never completed its report ended, in words."""
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        ended = f"killed by {name}"
    else:
        ended = f"exit code {os.waitstatus_to_exitcode(status)}"
    return f"replaced by exec of {execed}, which ended with {ended}" if execed else ended


def _flush(stream: object) -> None:
    flush = getattr(stream, "flush", None)
    if flush is not None:
        try:
            flush()
        except (OSError, ValueError):
            pass
