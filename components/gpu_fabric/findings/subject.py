"""The object a verdict is about: ``Kind namespace/name`` (``Kind name`` for cluster-scoped objects)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from gpu_fabric.findings.printable import one_line


@dataclass(frozen=True)
class ObjectRef:
    """A Kubernetes object (or any named object of a stack) by kind, namespace and name."""

    kind: str
    name: str
    namespace: Optional[str] = None
    """``None`` for cluster-scoped objects (and objects outside Kubernetes)."""

    def __str__(self) -> str:
        # Kind, namespace and name come from the input or a server: one line, whatever they hold.
        qualified = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return one_line(f"{self.kind} {qualified}")
