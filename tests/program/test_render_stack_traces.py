"""An offline render registers without the SDK's per-resource stack traces, through a private hook
of the Python SDK that these tests pin against the installed version."""

from __future__ import annotations

import inspect

import pulumi
from pulumi.runtime import resource as runtime_resource
from pulumi.runtime.proto import source_pb2

from gpu_fabric.program.render import render_stack, without_stack_traces
from support.stack_configs import PROJECT_DIR


def test_the_sdk_captures_traces_where_the_render_replaces_the_hook():
    # pulumi/runtime/resource.py: register_resource and read_resource look the hook up in the module
    # at each call (so replacing the module attribute takes effect), it takes no argument and returns
    # a StackTrace. An SDK that moves the capture elsewhere fails here instead of silently paying again.
    assert callable(runtime_resource._get_stack_trace)
    assert inspect.signature(runtime_resource._get_stack_trace).parameters == {}
    for caller in (runtime_resource.register_resource, runtime_resource.read_resource):
        assert "_get_stack_trace()" in inspect.getsource(caller), caller.__name__
    assert isinstance(source_pb2.StackTrace(), type(runtime_resource._get_stack_trace()))


def test_a_render_calls_no_stack_trace_capture_and_restores_the_hook(monkeypatch):
    calls: list[int] = []
    original = runtime_resource._get_stack_trace

    def counting() -> source_pb2.StackTrace:
        calls.append(1)
        return original()

    monkeypatch.setattr(runtime_resource, "_get_stack_trace", counting)
    result = render_stack("seed-rdma", PROJECT_DIR)
    assert result.resources and calls == []
    assert runtime_resource._get_stack_trace is counting  # restored after the render

    # Outside a render (a real `pulumi up` of the stack program) the SDK keeps capturing.
    def program() -> None:
        pulumi.CustomResource("test:index:Thing", "thing", {})

    with without_stack_traces():
        assert runtime_resource._get_stack_trace is not counting
    assert runtime_resource._get_stack_trace is counting
    render_stack("seed-rdma", PROJECT_DIR, config={}, program=program)
    assert calls == []


def test_without_stack_traces_restores_the_hook_after_an_error():
    original = runtime_resource._get_stack_trace
    try:
        with without_stack_traces():
            assert runtime_resource._get_stack_trace() == source_pb2.StackTrace()
            raise KeyError("boom")
    except KeyError:
        pass
    assert runtime_resource._get_stack_trace is original
