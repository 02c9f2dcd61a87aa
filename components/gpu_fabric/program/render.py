"""Run the stack program under Pulumi's own mock runtime and collect every registered resource.

No engine, no providers, no cloud: ``pulumi.runtime.set_mocks`` stands in for the engine, a
recording monitor keeps each registration (type, name, parent, inputs), and the mocks answer the
few data-source calls a stack makes with offline values. ``gpu-fabric render`` writes the result;
``gpu-fabric check`` feeds it to the policy pack.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import os
import re
import runpy
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

from gpu_fabric.config.base import ConfigError
from gpu_fabric.config.secrets import hide_secure
from gpu_fabric.config.stack_file import StackFileError
from gpu_fabric.interpreter.collector import collector_paused
from gpu_fabric.program.errors import (
    StackNotFoundError,
    StackProgramError,
    program_ended,
    program_exit,
    program_failure,
    registration_failure,
)
from gpu_fabric.program.completion import ProgramEnded, run_to_completion
from gpu_fabric.program.isolation import stdout_to_stderr
from gpu_fabric.program.project import DEFAULT_PROJECT_NAME, ProjectError, read_project
from gpu_fabric.program.rendered import RenderedResource, RenderResult, plain_value
from gpu_fabric.program.shared_imports import before_the_fork, expect, noting_imports, seen

PROJECT_NAME = DEFAULT_PROJECT_NAME
"""The project name of a folder without ``Pulumi.yaml`` (this repository's own); see :mod:`gpu_fabric.program.project`."""
CONFIG_NAMESPACE = "gpu-fabric"
"""The configuration namespace the stack program reads (``gpu-fabric:*``), whatever the project is named."""


# Pulumi's rule for stack names: alphanumerics, hyphens, underscores and periods (pulumi stack init).
_STACK_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")


def stack_config_path(project_dir: Path, stack: str) -> Path:
    """``Pulumi.<stack>.yaml`` in the project's ``stackConfigDir``; ``StackNotFoundError`` for a name
    Pulumi refuses (a ``/`` or ``..`` would otherwise reach files outside that folder and write
    outside ``out/``)."""
    if not _STACK_NAME.match(stack) or set(stack) == {"."}:
        raise StackNotFoundError(f"{stack!r} is not a stack name (letters, digits, '-', '_', '.')")
    return read_project(project_dir).stacks_folder / f"Pulumi.{stack}.yaml"


def example_stacks(project_dir: Path | str = ".") -> list[str]:
    """Names of every ``Pulumi.<stack>.yaml`` in the project's ``stackConfigDir``, sorted."""
    folder = read_project(project_dir).stacks_folder
    return sorted(path.name[len("Pulumi."):-len(".yaml")] for path in folder.glob("Pulumi.*.yaml"))


def load_stack_config(project_dir: Path, stack: str) -> dict[str, Any]:
    """The ``config:`` block of the stack's ``Pulumi.<stack>.yaml``, keyed ``namespace:key``.

    Read strictly (:func:`gpu_fabric.config.stack_file.read_stack_file`): a file the engine could not turn
    into JSON configuration raises ``StackFileError`` naming the file and the problem.
    """
    path = stack_config_path(project_dir, stack)
    if not path.is_file():  # absent, or a FIFO, folder or link loop: the project says which
        raise StackNotFoundError(read_project(project_dir).stack_file_refusal(stack, path))
    from gpu_fabric.config.stack_file import read_stack_file

    return read_stack_file(path, CONFIG_NAMESPACE)


def _engine_encoding(value: Any) -> str:
    # The engine hands a program every config value as a string, structured ones JSON-encoded.
    return value if isinstance(value, str) else json.dumps(value)


def _alias_urns(request: Any, stack: str, project: str) -> tuple[str, ...]:
    """The URNs of a registration's aliases: given ones as they are, specs completed from the resource."""
    from gpu_fabric.program.urn import engine_urn

    urns = list(request.aliasURNs)
    for alias in request.aliases:
        if alias.urn:
            urns.append(alias.urn)
            continue
        spec = alias.spec
        parent = "" if spec.noParent else (spec.parentUrn or request.parent)
        urns.append(engine_urn(spec.stack or stack, spec.project or project, spec.type or request.type,
                               spec.name or request.name, parent))
    return tuple(sorted(set(urns)))


def _references_as_analyzers_see_them(value: Any) -> Any:
    """Resource references (a component's outputs often are resources) as the engine marshals them for
    an analyzer, which keeps no references: the resource's id when it has one, else its URN (pulumi/pulumi
    sdk/go/common/resource/plugin/rpc.go ``MarshalPropertyValue`` with ``KeepResources`` false)."""
    from pulumi.runtime import rpc

    if isinstance(value, dict):
        if value.get(rpc._special_sig_key) == rpc._special_resource_sig:
            return value.get("id") or value.get("urn", "")
        return {key: _references_as_analyzers_see_them(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_references_as_analyzers_see_them(item) for item in value]
    return value


def _computed(inputs: dict[str, Any], id_: Optional[str], state: dict[str, Any]) -> dict[str, Any]:
    """The id and the outputs that are not echoed inputs: what only the provider knows."""
    computed = {key: plain_value(value) for key, value in (state or {}).items() if key not in inputs}
    if id_:
        computed["id"] = id_
    return computed


def render_stack(
    stack: str,
    project_dir: Path | str = ".",
    *,
    config: Optional[dict[str, Any]] = None,
    program: Optional[Callable[[], None]] = None,
    preview: bool = False,
    ask_ec2: bool = False,
) -> RenderResult:
    """Run the stack program under mocks; return what it registered.

    ``config`` replaces the stack file's values (benchmarks and tests); ``program`` replaces the
    project's program (``main:`` of its ``Pulumi.yaml``, default its ``__main__.py``). URNs carry the
    project's name (``name:`` of its ``Pulumi.yaml``, :mod:`gpu_fabric.program.project`); a project
    without its program raises :class:`ProjectError` before anything runs. Each call runs in a fresh
    context on its own event loop, so repeated renders in one process do not see each other's
    resources, configuration or unfinished work. ``preview`` runs the program as the engine does at
    ``pulumi preview`` of a new stack: ids and provider-computed outputs (auto-names, versions) of
    resources not yet created are unknown, and so is every input made from them.

    The project's program runs in a forked child of this process (:mod:`gpu_fabric.program.completion`): the
    render is complete only when that child reports it so, after the program's body returned and Pulumi's
    registrations settled. A program that stops early -- ``sys.exit`` (in its body or an ``apply`` callback),
    ``os._exit``, ``exec``, a signal -- or that registers no resource raises :class:`StackProgramError` naming
    it: a render of part of a program, or of none, would be checked vacuously. A ``program`` function (a
    caller's harness) runs in this process. What the program writes on stdout goes to stderr
    (:mod:`gpu_fabric.program.isolation`). The cyclic garbage collector is paused while it runs
    (:mod:`gpu_fabric.interpreter.collector`).

    ``ask_ec2`` (benchmarks/ec2_calls.py) takes instance facts as ``pulumi up`` does -- EC2 with the
    stack's ``aws:`` settings and the shell's AWS environment -- instead of the bundled table; the
    render is then no longer hermetic.
    """
    project = read_project(project_dir)
    run: Callable[[], Any]
    if program is not None:
        run = program
        where = f"the stack program {getattr(program, '__qualname__', None) or program!r}"
    else:
        path = str(project.require_program())
        where = f"the stack program {path}"

        def run() -> Any:
            from gpu_fabric.program.stack import ConfigurationRefused, StackFileRefused

            try:
                return runpy.run_path(path, run_name="__main__")
            except (ConfigurationRefused, StackFileRefused) as refused:
                raise refused.error from None  # the stack program's refusal, at its configuration paths
            except (ConfigError, StackFileError):
                raise  # gpu-fabric's own refusals, reported at their configuration paths
            except Exception as error:  # noqa: BLE001 - the team's program: one line, not a traceback
                raise program_failure(path, error) from error
    values = config if config is not None else load_stack_config(project.folder, stack)

    def render() -> RenderResult:
        return _render_here(stack, values, run, where, preview=preview, project=project.name, ask_ec2=ask_ec2,
                            harness=program is not None)

    if program is not None:
        # A caller's harness (tests, benchmarks) is the caller's own code: it runs in the caller's process,
        # where what it records stays visible.
        return render()
    expect(values, bundled_catalog=not ask_ec2)
    before_the_fork()
    try:
        with collector_paused():  # the report is unpickled here: a heap that only grows, as the render's was
            result, loaded = run_to_completion(noting_imports(render))
    except ProgramEnded as ended:
        raise program_ended(where, ended.how) from None
    except (ConfigError, StackFileError, StackProgramError):
        raise
    except Exception as error:  # noqa: BLE001 - what the child raised and no refusal took (its report unreadable)
        raise registration_failure(path, error) from None
    if not result.resources:
        # The project's program (what every command runs) must register something; a ``program``
        # function is a caller's harness, which may test that nothing gets registered.
        raise StackProgramError(
            f"{where} registered no resources: there is nothing to render or check; a gpu-fabric stack program "
            f"calls build_stack() (or creates its own resources) and runs to its end")
    seen(loaded)
    return result


def _render_here(stack: str, values: dict[str, Any], run: Callable[[], Any], where: str, *, preview: bool,
                 project: str, ask_ec2: bool, harness: bool) -> RenderResult:
    """The render in this process: the program under mocks, its stdout on stderr, its exits refused."""
    environment: contextlib.AbstractContextManager[None] = contextlib.nullcontext() if ask_ec2 else hermetic_environment()
    try:
        with collector_paused(), environment, stdout_to_stderr():
            with _own_event_loop():
                return contextvars.Context().run(_render_in_fresh_context, stack, values, run, preview, project,
                                                 not ask_ec2)
    except SystemExit as exited:
        # Caught here, not around the program's call alone: an exit inside an ``apply`` callback
        # leaves through Pulumi's event loop, after the program function has returned.
        raise program_exit(where, exited) from None
    except (ConfigError, StackFileError, StackProgramError):
        raise
    except Exception as error:
        if harness:
            raise  # a caller's harness: its errors are its own to read
        raise registration_failure(where.removeprefix("the stack program "), error) from error


@contextlib.contextmanager
def _own_event_loop() -> Iterator[None]:
    """One asyncio event loop for one render, closed after it, the thread's previous loop restored.

    A render that ends abruptly -- an exit inside an ``apply`` callback leaves asyncio's loop from
    inside a task (``SystemExit`` is re-raised out of ``Task.__step``) -- leaves Pulumi's
    ``run_pulumi_func`` and the program's outputs pending on its loop; on a loop shared by every
    render, the next render in the process would resume them and fail with the old exit.
    """
    import asyncio
    import warnings

    policy = asyncio.get_event_loop_policy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # no current loop: Python 3.12 warns, then makes one
        try:
            previous: Optional[asyncio.AbstractEventLoop] = policy.get_event_loop()
        except RuntimeError:
            previous = None
    from gpu_fabric.program.inline_calls import InlineExecutor

    loop = asyncio.new_event_loop()
    loop.set_exception_handler(_unretrieved_exits_ignored)
    loop.set_default_executor(InlineExecutor())  # the mock monitor's calls: no thread pool (see there)
    policy.set_event_loop(loop)
    try:
        yield
    finally:
        pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
        for task in pending:
            task.cancel()
        for _ in range(10):  # a cancelled task may raise an exit of its own; a few rounds settle them
            try:
                if pending:
                    loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
                break
            except SystemExit:
                pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
        loop.close()
        # The render is over and its first error, if any, was raised to the caller. Its futures are collected
        # later (the collector was paused during the render), and one that held an error would then print
        # "Future exception was never retrieved" into whatever the process is doing by that time.
        loop.set_exception_handler(_render_over)
        policy.set_event_loop(previous)


def _render_over(loop: Any, context: dict[str, Any]) -> None:
    """A finished render's loop reports nothing (see :func:`_own_event_loop`)."""


def _unretrieved_exits_ignored(loop: Any, context: dict[str, Any]) -> None:
    """The render's loop reports what asyncio reports, except a program's exit that it never retrieved.

    Such an exit left the loop as an exception of its own (it is the render's error, reported once);
    the task that held it would report it again on stderr when it is collected ("Task exception was
    never retrieved"). That report is dropped: it is noise, and formatting its traceback at garbage
    collection (Python 3.11 parses source lines with ``ast`` for the carets) was seen to leave the
    ``ast`` module's recursion bookkeeping off, so that a later ``ast.parse`` in the process failed
    with "AST constructor recursion depth mismatch" (CPython gh-106905 is that bookkeeping's bug).
    """
    if isinstance(context.get("exception"), SystemExit):
        return
    loop.default_exception_handler(context)


# Provider SDKs fill unset inputs from these (pulumi-kubernetes: KUBECONFIG, PULUMI_K8S_*; pulumi-aws:
# AWS_REGION for aws.config.region), so a render would change with the shell it runs in. And
# pulumi.runtime.config.get_config falls back to PULUMI_CONFIG_<KEY> and the PULUMI_CONFIG bag for a
# key the stack file lacks -- while the secret keys come from set_all_config alone, so a value from
# PULUMI_CONFIG listed in PULUMI_CONFIG_SECRET_KEYS would be read as plain text and written out.
# An offline run reads the stack file only: PULUMI_CONFIG* is hidden like the providers' variables.
_AMBIENT_PREFIXES = ("PULUMI_K8S_", "KUBECONFIG", "KUBERNETES_", "AWS_", "PULUMI_CONFIG")


@contextlib.contextmanager
def hermetic_environment() -> Iterator[None]:
    """Hide the environment variables that providers read for defaults while a render runs.

    What a render produces depends on the stack's configuration alone: the same stack file gives
    a byte-identical ``resources.json`` in any shell.
    """
    hidden = {key: value for key, value in os.environ.items() if key.startswith(_AMBIENT_PREFIXES)}
    for key in hidden:
        del os.environ[key]
    try:
        yield
    finally:
        os.environ.update(hidden)


@contextlib.contextmanager
def without_stack_traces() -> Iterator[None]:
    """Registrations made meanwhile carry no stack trace (an offline render has no engine to read them).

    The Python SDK captures one for every resource it registers (pulumi/pulumi
    sdk/python/lib/pulumi/runtime/resource.py, ``register_resource`` and ``read_resource`` call
    ``_get_stack_trace``: ``traceback.extract_stack`` and a protobuf frame per Python frame) and sends
    it in ``RegisterResourceRequest.stackTrace``/``sourcePosition``, which the engine uses for
    diagnostics. The mock monitor drops both, and gpu-fabric's component nesting makes the stacks deep:
    capturing them took about 15% of the CPU time of a 2,000-resource render (benchmarks/render_fleet.py). The hook is private to the SDK, so it is
    replaced only when it is there, for the render alone, and restored after;
    tests/program/test_render_stack_traces.py pins it against the installed SDK.
    """
    from pulumi.runtime import resource as runtime_resource
    from pulumi.runtime.proto import source_pb2

    original = getattr(runtime_resource, "_get_stack_trace", None)
    if original is None:  # another SDK: its registrations keep their traces
        yield
        return
    # An empty trace is what the SDK itself sends when it finds no user frame.
    setattr(runtime_resource, "_get_stack_trace", source_pb2.StackTrace)
    try:
        yield
    finally:
        setattr(runtime_resource, "_get_stack_trace", original)


def _render_in_fresh_context(stack: str, values: dict[str, Any], program: Callable[[], Any],
                             preview: bool = False, project: str = PROJECT_NAME,
                             offline_catalog: bool = True) -> RenderResult:
    import pulumi
    from pulumi.runtime import mocks as pulumi_mocks
    from pulumi.runtime.config import set_all_config
    from pulumi.runtime.settings import SETTINGS
    from pulumi.runtime.stack import run_pulumi_func
    from pulumi.runtime.sync_await import _sync_await

    from gpu_fabric.program.mocks import OfflineMocks

    from gpu_fabric.program.urn import engine_urn

    registrations: dict[str, tuple[str, Any]] = {}
    component_outputs: dict[str, Any] = {}
    recorded: list[tuple[str, str, dict[str, Any], bool]] = []
    mocks = OfflineMocks(recorded, preview=preview)

    class RecordingMonitor(pulumi_mocks.MockMonitor):
        def make_urn(self, parent: str, type_: str, name: str) -> str:
            # The mock monitor prefixes only the parent's own type; the engine prefixes its whole chain.
            return engine_urn(pulumi.get_stack(), pulumi.get_project(), type_, name, parent)

        def RegisterResource(self, request):  # noqa: N802 - gRPC method name
            response = super().RegisterResource(request)
            registered = self.resources.get(response.urn)
            registrations[f"{request.type}::{request.name}"] = (response.urn, request)
            if registered is not None:
                registrations[f"{request.type}::{request.name}::state"] = (registered.id, registered.state)
            return response

        def RegisterResourceOutputs(self, request):  # noqa: N802 - gRPC method name
            # A component's outputs replace what it registered with, in the engine's state and so in
            # what AnalyzeStack sends (pulumi/pulumi pkg/resource/deploy/step_generator.go).
            # The wire form as it is (unknown sentinels and secret wrappers included): deserializing
            # would resolve resource references on this thread's event loop, not the program's.
            from google.protobuf import json_format

            component_outputs[request.urn] = _references_as_analyzers_see_them(json_format.MessageToDict(request.outputs))
            return super().RegisterResourceOutputs(request)

    from gpu_fabric.aws.catalog.bundled import BundledInstanceCatalog
    from gpu_fabric.aws.catalog.selection import use_catalog

    if offline_catalog:
        use_catalog(BundledInstanceCatalog())  # offline: instance facts from the bundled table, never EC2
    decoded = {key: hide_secure(value) for key, value in values.items()}
    set_all_config({key: _engine_encoding(value) for key, (value, _) in decoded.items()},
                   [key for key, (_, secure) in decoded.items() if secure])
    with without_stack_traces():  # set_mocks registers the root stack resource
        pulumi.runtime.set_mocks(mocks, project=project, stack=stack, preview=preview, monitor=RecordingMonitor(mocks))
        # What an earlier render that ended abruptly left behind is not this render's to wait for: Pulumi's
        # own mock test runner starts each run so (pulumi/pulumi sdk/python/lib/pulumi/runtime/mocks.py, ``test``).
        SETTINGS.rpc_manager.clear()
        SETTINGS.outputs.clear()
        _sync_await(run_pulumi_func(program))

    resources = []
    for type_, name, inputs, custom in recorded:
        urn, request = registrations[f"{type_}::{name}"]
        dependencies = {key: tuple(sorted(value.urns)) for key, value in request.propertyDependencies.items() if value.urns}
        resources.append(RenderedResource(
            type_, name, request.parent, custom, plain_value(inputs), urn, dict(sorted(dependencies.items())),
            replace_on_changes=tuple(request.replaceOnChanges),
            ignore_changes=tuple(request.ignoreChanges),
            depends_on=tuple(sorted(set(request.dependencies))),
            retain_on_delete=bool(request.retainOnDelete),
            computed=_computed(inputs, *registrations.get(f"{type_}::{name}::state", (None, {}))),
            provider=request.provider.rsplit("::", 1)[0] if request.provider else "",  # a reference is "<urn>::<id>"
            aliases=_alias_urns(request, stack, project),
            registered_outputs=None if custom or urn not in component_outputs else plain_value(component_outputs[urn]),
        ))
    resources.sort(key=lambda r: r.urn)
    return RenderResult(stack, resources)
