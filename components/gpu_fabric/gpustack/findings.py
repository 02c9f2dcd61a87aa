"""A finding: one decision against one field of one ``worker.gpustack.ai`` object.

The schema validator (:mod:`gpu_fabric.gpustack.schema`) and the admission analysis
(:mod:`gpu_fabric.gpustack.admission_pipeline`) both report findings; the CLI, the policy pack and ``load_config``
turn them into lines, violations and configuration paths.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Finding:
    """One admission decision against one field of one object."""

    kind: str
    name: str
    path: str
    message: str
    namespace: str | None = None
    severity: str = "error"

    @property
    def object_ref(self) -> str:
        """``Kind namespace/name`` (or ``Kind name`` for cluster-scoped objects)."""
        qualified = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.kind} {qualified}"

    def __str__(self) -> str:
        return f"{self.object_ref}: {self.path}: {self.message}"
