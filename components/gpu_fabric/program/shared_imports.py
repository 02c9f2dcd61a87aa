"""What renders import, imported once in the command's process, so that each render's child starts with it.

Every render runs in a child forked from the command (:mod:`gpu_fabric.program.completion`): the child
starts with the parent's modules, and what it imports itself dies with it. ``check`` of every stack forks
once per stack; measured before this module, each child imported Pulumi's AWS SDK again (480 modules) and
``pulumi_kubernetes``'s kinds (60), and ``check`` of the four example stacks took 2.8 s of CPU against 1.4 s
when the renders ran in the command's own process, importing once.

So the parent imports, before each fork, what every render needs (Pulumi's mock runtime, gpu-fabric's stack
program module and the components and SDKs it imports) and what earlier renders of this process were seen
to import from gpu-fabric and the Pulumi SDKs it registers with. The first render pays its imports in its
child, as a single-stack command always has; the next ones start with them. Only modules of those packages
are imported here -- the command's own dependencies, never a module of the team's project.

Likewise the configuration models an earlier render built (:class:`gpu_fabric.config.base.SpecModel` builds its
validator on first use, pydantic's ``defer_build``): built in a child, they died with it, and every next render
built them again -- 100 ms of a warm 140 ms render of seed-rdma. They are built here once, before the next fork.
And the SDK's per-class type hints: Pulumi reads each input, output and resource class's property annotations
once per process (``functools.cache`` on ``_types_from_py_properties``, pulumi/sdk/python/lib/pulumi/_types.py,
behind its ``input_type_types``, ``output_type_types`` and ``resource_types``) -- a third of what remained of a
child's render. The child notes the classes it read, and the parent reads them before the next fork.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from typing import Any, Callable, Iterator, Mapping, NamedTuple, TypeVar

from gpu_fabric.program.completion import grpc_without_fork_handlers

T = TypeVar("T")

SHARED_PACKAGES = frozenset({"gpu_fabric", "pulumi", "pulumi_aws", "pulumi_kubernetes"})
"""Top-level packages whose modules a render imported are imported again in the parent, for the next render."""

_seen: set[str] = set()
_seen_models: set[str] = set()
_seen_sdk_types: set[str] = set()


class Loaded(NamedTuple):
    """What one render's child loaded that the next render's child can start with."""

    modules: list[str]
    """Modules of :data:`SHARED_PACKAGES` the render imported."""
    models: list[str]
    """Configuration models (``module:qualname``) whose validators the render built."""
    sdk_types: list[str]
    """The SDKs' classes (``module:qualname``) whose type hints Pulumi read for the render."""


_SDK_TYPE_HINTS = "_types_from_py_properties"
"""Pulumi's per-class cache of property types (pulumi/_types.py); a Pulumi without it is simply not warmed."""


KUBERNETES_MODULES = (
    "pulumi_kubernetes.core.v1", "pulumi_kubernetes.meta.v1",
    "pulumi_kubernetes.apiextensions.CustomResource", "pulumi_kubernetes.apiextensions.CustomResourcePatch",
)
"""The Kubernetes SDK's modules every gpu-fabric stack registers with (namespaces, device plugins, operator objects)."""


def expect(config: Mapping[str, Any], *, bundled_catalog: bool = True) -> None:
    """Before the first render of a stack: what its configuration shows the render will import.

    The first render's child would import them, and the parent after it for the next: ``check`` of the four example
    stacks imported Pulumi's AWS SDK twice. A stack with a pool on AWS nodes gets the AWS components
    (:data:`gpu_fabric.resources.fabric.AWS_POOL_MODULES`); a stack without one never imports them. Such a stack's
    offline render (``bundled_catalog``) reads its instance facts from the bundled EC2 table, read here once for
    every render of the process (:func:`gpu_fabric.aws.catalog.table.load_bundled_items`: 16 ms of each AWS render's
    child when each child read it again).
    """
    _seen.update(KUBERNETES_MODULES)
    pools = config.get("gpu-fabric:pools")
    if isinstance(pools, list) and any(isinstance(pool, dict) and "aws" in pool for pool in pools):
        from gpu_fabric.resources.fabric import AWS_POOL_MODULES

        _seen.update(AWS_POOL_MODULES)
        if bundled_catalog:
            from gpu_fabric.aws.catalog.table import load_bundled_items

            load_bundled_items()


def before_the_fork() -> None:
    """Import what every render needs, and what earlier renders of this process imported, here."""
    grpc_without_fork_handlers()  # before Pulumi imports gRPC: see there
    import pulumi.runtime.mocks  # noqa: F401
    import pulumi.runtime.stack  # noqa: F401

    import gpu_fabric.gpustack.privilege_rules  # noqa: F401 - every render's operator objects are judged with it
    import gpu_fabric.program.mocks  # noqa: F401
    import gpu_fabric.program.stack  # noqa: F401
    import gpu_fabric.program.urn  # noqa: F401

    for name in sorted(_seen):  # sorted: a package before its modules
        try:
            _import_as_the_render_did(name)
        except Exception:  # noqa: BLE001 - left to the child, which imports it where the render needs it
            _seen.discard(name)
    if _seen_models:
        _build_models(_seen_models)
    if _seen_sdk_types:
        _read_sdk_types(_seen_sdk_types)


def _built_models() -> set[str]:
    """``module:qualname`` of every configuration model class whose validator is built in this process."""
    base = sys.modules.get("gpu_fabric.config.base")
    if base is None:
        return set()
    built: set[str] = set()
    pending = list(base.SpecModel.__subclasses__())
    while pending:
        model = pending.pop()
        pending.extend(model.__subclasses__())
        if model.__dict__.get("__pydantic_complete__", False):
            built.add(f"{model.__module__}:{model.__qualname__}")
    return built


def _build_models(names: set[str]) -> None:
    """Build the validators of the named configuration models (their modules are imported by now)."""
    from gpu_fabric.config.base import SpecModel

    for name in sorted(names):
        try:
            model = _named_class(name)
            if not issubclass(model, SpecModel):  # the child's report names only these; anything else is not read
                raise TypeError(name)
            model.model_rebuild()
        except Exception:  # noqa: BLE001 - left to the child, which builds it where the render validates with it
            names.discard(name)


def _read_sdk_types(names: set[str]) -> None:
    """Have Pulumi read, and cache, the type hints of the named SDK classes (their modules are imported by now)."""
    from pulumi import _types

    read = getattr(_types, _SDK_TYPE_HINTS, None)
    if read is None:
        names.clear()
        return
    for name in sorted(names):
        try:
            read(_named_class(name))
        except Exception:  # noqa: BLE001 - left to the child, which reads it where the render registers with it
            names.discard(name)


def _named_class(name: str) -> type:
    """The class ``module:qualname`` names, in a module already imported; ``TypeError`` for anything else."""
    module_name, _, qualname = name.partition(":")
    found: Any = sys.modules[module_name]
    for part in qualname.split("."):
        found = getattr(found, part)
    if not isinstance(found, type):
        raise TypeError(f"{name} is not a class")
    return found


@contextlib.contextmanager
def _noting_sdk_types(noted: set[type]) -> Iterator[None]:
    """Note every class Pulumi reads the type hints of while the block runs (in the child, which never returns)."""
    from pulumi import _types

    read = getattr(_types, _SDK_TYPE_HINTS, None)
    if read is None:
        yield
        return

    def noting(cls: type) -> Any:
        noted.add(cls)
        return read(cls)

    setattr(_types, _SDK_TYPE_HINTS, noting)  # looked up as a module global by the functions that call it
    try:
        yield
    finally:
        setattr(_types, _SDK_TYPE_HINTS, read)


def _class_names(classes: set[type]) -> list[str]:
    """``module:qualname`` of the classes of :data:`SHARED_PACKAGES` defined at a module's top level or in a class."""
    return sorted(f"{cls.__module__}:{cls.__qualname__}" for cls in classes
                  if cls.__module__.split(".")[0] in SHARED_PACKAGES and "<locals>" not in cls.__qualname__)


def _import_as_the_render_did(name: str) -> None:
    """Import ``name`` unless its package's own ``__init__`` does.

    The SDKs load their packages lazily (``importlib.util.LazyLoader``) and bind each kind's class over the
    same-named module (``pulumi_kubernetes.core.v1.Pod``: ``from .Pod import *``). Imported by name into a
    package not yet loaded, the module would be loaded a second time and bound over the class. So the
    package is loaded first, as the render's attribute access loaded it, and the name imported only if the
    package did not. (Not by ``__name__``, ``__path__`` and the like: Pulumi's lazy modules answer those
    without loading -- and the import system reads only ``__path__``.)
    """
    package = name.rpartition(".")[0]
    if package:
        getattr(importlib.import_module(package), "__all__", None)
    if name not in sys.modules:
        importlib.import_module(name)
    getattr(sys.modules[name], "__all__", None)  # a lazy module loads on its first attribute, as the render's did


def noting_imports(function: Callable[[], T]) -> Callable[[], tuple[T, Loaded]]:
    """``function`` returning also what it :class:`Loaded` (run in the child)."""

    def noted() -> tuple[T, Loaded]:
        known, built = set(sys.modules), _built_models()
        sdk_types: set[type] = set()
        with _noting_sdk_types(sdk_types):
            value = function()
        modules = sorted(name for name in set(sys.modules) - known if name.split(".")[0] in SHARED_PACKAGES)
        return value, Loaded(modules, sorted(_built_models() - built), _class_names(sdk_types))

    return noted


def seen(loaded: Any) -> None:
    """Remember what a render's child loaded, for :func:`before_the_fork` of the next render.

    Read from the child's report: only names of gpu-fabric's and the SDKs' modules are kept."""
    if not isinstance(loaded, Loaded):
        return

    def in_packages(names: Any, packages: frozenset[str]) -> list[str]:
        return [name for name in names if isinstance(name, str) and name.split(":")[0].split(".")[0] in packages]

    _seen.update(in_packages(loaded.modules, SHARED_PACKAGES))
    _seen_models.update(in_packages(loaded.models, frozenset({"gpu_fabric"})))
    _seen_sdk_types.update(in_packages(loaded.sdk_types, SHARED_PACKAGES))
