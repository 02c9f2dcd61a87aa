"""An offline render's monitor calls run in the event loop's own thread, not in a thread pool.

Pulumi's Python SDK sends every call to the engine's resource monitor -- each ``RegisterResource``,
``RegisterResourceOutputs``, ``Invoke``, ``SupportsFeature`` -- through ``loop.run_in_executor(None, ...)``
(pulumi/pulumi sdk/python/lib/pulumi/runtime/resource.py, invoke.py, settings.py, stack.py): against the
engine each is a blocking gRPC request, which must not hold the loop. Under an offline render the monitor
is Pulumi's mock monitor in this process (``pulumi.runtime.mocks.MockMonitor``, answered by
:class:`gpu_fabric.program.mocks.OfflineMocks`): each call is a few dictionary operations and a
serialization that never block. Handing those to a pool cost more than the calls: the loop's default
executor starts up to ``min(32, cores + 4)`` threads per render (each render has its own loop,
:func:`gpu_fabric.program.render._own_event_loop`), and every call crosses threads twice under the GIL.
Measured (2-core machine, warm process, CPU, pool then inline): a seed-rdma render in the command's process
95 ms and 47 ms; a render's forked child 145 ms and 90 ms; aws-efa's child 227 ms and 126 ms; the 2,219-resource
fleet (benchmarks/render_fleet.py's, in-process) 4.7 s and 3.3 to 3.9 s.

A call runs as it ran on a pool's worker thread, where no event loop was running: the mock monitor's
``RegisterResource`` serializes the new state with ``_sync_await`` on "this thread's" loop
(pulumi/runtime/mocks.py, sync_await.py), which on a thread whose loop is running pumps that loop
re-entrantly -- the program's loop, in the middle of one of its callbacks: other registrations then start inside
this one, each nesting the next, and the 2,000-resource fleet ended in ``RecursionError``. So while a call
runs, the render's loop is not the running one and a loop of the executor's own is the thread's current loop,
as a worker thread's own loop was: ``_sync_await`` runs to completion there, touching nothing of the program's.

What a render registers does not depend on the calls' order: the mocks give each resource an id made of its
type and name (:func:`gpu_fabric.program.mocks.offline_id`) and the render lists resources sorted by URN, so the
manifests are byte-identical either way (tests/program/test_inline_calls.py).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import warnings
from typing import Any, Callable, Optional


class InlineExecutor(concurrent.futures.ThreadPoolExecutor):
    """An executor that runs each submitted call at once, in the submitting thread, as a worker thread would.

    A :class:`~concurrent.futures.ThreadPoolExecutor` by type only: asyncio's ``set_default_executor``
    accepts no other class (CPython Lib/asyncio/base_events.py). It starts no thread. The returned future is
    already done, holding the call's result or what it raised, as a pool's worker would have left it. While a
    call runs, no event loop is running in the thread and the executor's own loop is its current one (made at
    the first call, closed by :meth:`shutdown`, which the render's loop calls as it closes).
    """

    def __init__(self) -> None:
        super().__init__(max_workers=1)
        self._calls_loop: Optional[asyncio.AbstractEventLoop] = None

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        try:
            with self._as_a_worker_thread():
                result = fn(*args, **kwargs)
        except BaseException as error:  # noqa: BLE001 - what a pool's worker stores on the future, so do we
            future.set_exception(error)
        else:
            future.set_result(result)
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        if self._calls_loop is not None and not self._calls_loop.is_running():
            self._calls_loop.close()
            self._calls_loop = None
        super().shutdown(wait=wait, cancel_futures=cancel_futures)

    def _as_a_worker_thread(self) -> "_WorkerThreadLoops":
        if self._calls_loop is None:
            self._calls_loop = asyncio.new_event_loop()
        return _WorkerThreadLoops(self._calls_loop)


class _WorkerThreadLoops:
    """For the block: no loop running in this thread and ``loop`` its current one; both restored after.

    Outside a running loop there is nothing a call could re-enter: the thread is left as it is.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self._loop = loop
        self._running: Optional[asyncio.AbstractEventLoop] = None
        self._current: Optional[asyncio.AbstractEventLoop] = None

    def __enter__(self) -> None:
        # asyncio's own accessors of the thread's running loop (asyncio.events exports them; every loop's
        # run_forever sets and clears it so): while one is set, get_event_loop answers it and a nested
        # run_until_complete refuses to start.
        self._running = asyncio._get_running_loop()
        if self._running is None:
            return
        policy = asyncio.get_event_loop_policy()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # no current loop: Python 3.12 warns, then makes one
            try:
                self._current = policy.get_event_loop()  # the thread's current loop, which need not be the running one
            except RuntimeError:
                self._current = None
        asyncio._set_running_loop(None)
        policy.set_event_loop(self._loop)

    def __exit__(self, *exc: object) -> None:
        if self._running is not None:
            asyncio.get_event_loop_policy().set_event_loop(self._current)
            asyncio._set_running_loop(self._running)
