"""An offline render answers the SDK's monitor calls in the event loop's thread, and renders the same as through
a thread pool (:mod:`gpu_fabric.program.inline_calls`)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import runpy
import threading

import pulumi
import pytest

from gpu_fabric.program import inline_calls
from gpu_fabric.program.mocks import OfflineMocks
from gpu_fabric.program.render import render_stack
from support.stack_configs import PROJECT_DIR

PROGRAM = str(PROJECT_DIR / "stacks" / "__main__.py")


def _program() -> None:
    runpy.run_path(PROGRAM, run_name="__main__")


def test_a_call_runs_at_submission_in_the_callers_thread_and_starts_no_thread():
    executor = inline_calls.InlineExecutor()
    before = threading.active_count()
    future = executor.submit(lambda a, b=0: (threading.get_ident(), a + b), 1, b=2)
    assert future.done() and future.result() == (threading.get_ident(), 3)
    assert threading.active_count() == before


def test_what_a_call_raises_is_held_by_its_future_as_a_pools_worker_holds_it():
    def refuse() -> None:
        raise SystemExit(3)  # a program's exit inside a mocked call: the render reports it, the executor keeps it

    future = inline_calls.InlineExecutor().submit(refuse)
    assert future.done() and isinstance(future.exception(), SystemExit)


@pytest.mark.parametrize("preview", [False, True])
def test_the_monitors_calls_run_in_the_renders_own_thread_with_no_loop_running(monkeypatch, preview):
    threads: set[int] = set()
    running: list[object] = []
    new_resource = OfflineMocks.new_resource

    def noting(self, args):
        threads.add(threading.get_ident())
        running.append(asyncio._get_running_loop())
        return new_resource(self, args)

    monkeypatch.setattr(OfflineMocks, "new_resource", noting)
    result = render_stack("aws-efa", PROJECT_DIR, program=_program, preview=preview)
    assert result.resources
    assert threads == {threading.get_ident()}
    # As on a pool's worker: the mock monitor's _sync_await never pumps the program's loop from inside a call.
    assert running and set(running) == {None}


def test_a_program_registering_thousands_of_resources_renders_them_all():
    # With the program's loop running during a call, each registration's serialization pumped that loop, which
    # started the next registration inside it: 2,000 pending registrations ended in RecursionError.
    def program() -> None:
        for index in range(3000):
            pulumi.CustomResource("test:index:Thing", f"thing-{index}", {"index": index})

    result = render_stack("x", PROJECT_DIR, config={}, program=program)
    assert len(result.resources) == 3000
    assert {r.name for r in result.resources} == {f"thing-{index}" for index in range(3000)}


def test_a_call_leaves_the_threads_loops_as_they_were_and_its_own_closes_with_the_loop():
    policy = asyncio.get_event_loop_policy()
    previous = policy.get_event_loop()  # restored after: other tests' fixtures take the thread's loop
    current = asyncio.new_event_loop()
    policy.set_event_loop(current)  # the thread's current loop, not the one running the call
    executor = inline_calls.InlineExecutor()
    loop = asyncio.new_event_loop()
    loop.set_default_executor(executor)

    async def call() -> tuple[bool, object]:
        running = await loop.run_in_executor(None, lambda: asyncio.get_event_loop().is_running())
        return running, asyncio._get_running_loop()

    try:
        running_in_call, running_after = loop.run_until_complete(call())
        assert running_in_call is False  # the call's current loop: the executor's, not running
        assert running_after is loop
        assert policy.get_event_loop() is current
        calls_loop = executor._calls_loop
        assert calls_loop is not None and not calls_loop.is_closed()
        loop.close()
        assert calls_loop.is_closed()
    finally:
        policy.set_event_loop(previous)
        current.close()


@pytest.mark.parametrize("stack", ["aws-efa", "seed-rdma"])
@pytest.mark.parametrize("preview", [False, True])
def test_a_render_is_the_same_as_with_the_sdks_thread_pool(monkeypatch, stack, preview):
    inline = render_stack(stack, PROJECT_DIR, program=_program, preview=preview)
    monkeypatch.setattr(inline_calls, "InlineExecutor", concurrent.futures.ThreadPoolExecutor)
    pooled = render_stack(stack, PROJECT_DIR, program=_program, preview=preview)
    assert inline.resources == pooled.resources
