"""An offline render's monitor calls run in the event loop's own thread, not in a thread pool.

Pulumi's Python SDK sends every call to the engine's resource monitor -- each ``RegisterResource``,
``RegisterResourceOutputs``, ``Invoke``, ``SupportsFeature`` -- through ``loop.run_in_executor(None, ...)``
(pulumi/pulumi sdk/python/lib/pulumi/runtime/resource.py, invoke.py, settings.py, stack.py): against the
engine each is a blocking gRPC request, which must not hold the loop. Under an offline render the monitor
is Pulumi's mock monitor in this process (``pulumi.runtime.mocks.MockMonitor``, answered by
:class:`gpu_fabric.program.mocks.OfflineMocks`): each call is a few dictionary operations that never block
and never wait on the loop. Handing those to a pool cost more than the calls: the loop's default executor
starts up to ``min(32, cores + 4)`` threads per render (each render has its own loop,
:func:`gpu_fabric.program.render._own_event_loop`), and every call crosses threads twice under the GIL.
Measured (2-core machine, warm process, CPU): a seed-rdma render in the command's process 95 ms with the
pool, 62 ms inline; a render's forked child 145 ms and 119 ms; aws-efa's child 227 ms and 173 ms.

What a render registers does not depend on that order: the mocks give each resource an id made of its type
and name (:func:`gpu_fabric.program.mocks.offline_id`) and the render lists resources sorted by URN, so the
manifests are byte-identical either way (tests/program/test_inline_calls.py).
"""

from __future__ import annotations

import concurrent.futures
from typing import Any, Callable


class InlineExecutor(concurrent.futures.ThreadPoolExecutor):
    """An executor that runs each submitted call at once, in the submitting thread, and starts no thread.

    A :class:`~concurrent.futures.ThreadPoolExecutor` by type only: asyncio's ``set_default_executor``
    accepts no other class (CPython Lib/asyncio/base_events.py). The returned future is already done, holding
    the call's result or what it raised, as a pool's worker would have left it.
    """

    def __init__(self) -> None:
        super().__init__(max_workers=1)

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        try:
            result = fn(*args, **kwargs)
        except BaseException as error:  # noqa: BLE001 - what a pool's worker stores on the future, so do we
            future.set_exception(error)
        else:
            future.set_result(result)
        return future
