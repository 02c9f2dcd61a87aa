"""The stack's transfer paths as the operator's admission decides them, decided once per analyzer call.

``kv-cache-transport-fabric``, ``gpustack-transfer-path-consistency`` and the DRA pools' member check each read
:func:`gpu_fabric.gpustack.admission_pipeline.analyze` over the stack's GPUStack objects, under the operator the
stack's components name and the manufacturers its pools state. Within one analyzer call (or one run of
``gpu-fabric check``) they are handed the same resources, so the analysis is made for the first and handed to the
others (:meth:`gpu_fabric.policies.analyzer_calls.CallScope.judged_once`); they only read it.
"""

from __future__ import annotations

from typing import Optional, Sequence

from gpu_fabric.gpustack.admission_pipeline import TransferReport, analyze
from gpu_fabric.plan.resource_view import (
    DEFAULT_NAMESPACE,
    Resource,
    gpustack_objects,
    manufacturers_of_pools,
    miscased_gpustack_objects,
    stack_operator,
)
from gpu_fabric.policies.analyzer_calls import judged_once


def stack_transfer_report(resources: Sequence[Resource], *, with_miscased: bool = False) -> Optional[TransferReport]:
    """The analysis of the stack's GPUStack objects (``with_miscased``: also the objects whose group or kind is
    miscased, which the API server would take as another kind); ``None`` where the stack names no operator
    gpu-fabric knows (the transfer-path policy reports that)."""
    miscased = miscased_gpustack_objects(list(resources)) if with_miscased else []
    # Without miscased objects both ask for the same analysis, and share it.
    what = "transfer-report-with-miscased" if miscased else "transfer-report"
    return judged_once(what, resources, lambda judged: _analysis(list(judged), miscased))


def _analysis(resources: list[Resource], miscased: list[Resource]) -> Optional[TransferReport]:
    profile, _ = stack_operator(resources)
    if profile is None:
        return None
    objects = [*gpustack_objects(resources), *miscased]
    return analyze([dict(r.props) for r in objects], manufacturers=manufacturers_of_pools(resources),
                   default_namespace=DEFAULT_NAMESPACE, operator=profile)
