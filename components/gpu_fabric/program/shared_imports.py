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
"""

from __future__ import annotations

import importlib
import sys
from typing import Any, Callable, TypeVar

from gpu_fabric.program.completion import grpc_without_fork_handlers

T = TypeVar("T")

SHARED_PACKAGES = frozenset({"gpu_fabric", "pulumi", "pulumi_aws", "pulumi_kubernetes"})
"""Top-level packages whose modules a render imported are imported again in the parent, for the next render."""

_seen: set[str] = set()


def before_the_fork() -> None:
    """Import what every render needs, and what earlier renders of this process imported, here."""
    grpc_without_fork_handlers()  # before Pulumi imports gRPC: see there
    import pulumi.runtime.mocks  # noqa: F401
    import pulumi.runtime.stack  # noqa: F401

    import gpu_fabric.program.mocks  # noqa: F401
    import gpu_fabric.program.stack  # noqa: F401
    import gpu_fabric.program.urn  # noqa: F401

    for name in sorted(_seen):  # sorted: a package before its modules
        try:
            _import_as_the_render_did(name)
        except Exception:  # noqa: BLE001 - left to the child, which imports it where the render needs it
            _seen.discard(name)


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


def noting_imports(function: Callable[[], T]) -> Callable[[], tuple[T, list[str]]]:
    """``function`` returning also the modules of :data:`SHARED_PACKAGES` it imported (run in the child)."""

    def noted() -> tuple[T, list[str]]:
        known = set(sys.modules)
        value = function()
        return value, sorted(name for name in set(sys.modules) - known if name.split(".")[0] in SHARED_PACKAGES)

    return noted


def seen(names: Any) -> None:
    """Remember what a render's child imported, for :func:`before_the_fork` of the next render."""
    _seen.update(name for name in names if isinstance(name, str) and name.split(".")[0] in SHARED_PACKAGES)
