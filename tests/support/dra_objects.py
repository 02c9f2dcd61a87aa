"""DRA objects for tests, written from the upstream examples (research: breadth-late-2026 §1.2, §1.9).

The aligned template is dranet's AWS EFA example (``examples/aws_eks_examples/gpu-efa/``): one GPU and
one EFA under a ``resource.kubernetes.io/pcieRoot`` constraint; ResourceSlices are what NVIDIA's GPU
driver and DRANET publish (``resource.kubernetes.io/pcieRoot`` as a string attribute).
"""

from __future__ import annotations

import copy
from typing import Any, Optional

PCIE_ROOT = "resource.kubernetes.io/pcieRoot"
GPU_CLASS = "gpu.nvidia.com"
EFA_CLASS = "efa.networking.k8s.aws"


def request(name: str, device_class: str, count: Optional[int] = 1, **exactly: Any) -> dict[str, Any]:
    """``devices.requests[]`` entry asking ``exactly`` ``count`` devices of ``device_class``."""
    body: dict[str, Any] = {"deviceClassName": device_class, **exactly}
    if count is not None:
        body["count"] = count
    return {"name": name, "exactly": body}


def claim_spec(requests: list[dict[str, Any]], constraints: Optional[list[dict[str, Any]]] = None) -> dict[str, Any]:
    """A ``ResourceClaimSpec``."""
    devices: dict[str, Any] = {"requests": requests}
    if constraints is not None:
        devices["constraints"] = constraints
    return {"devices": devices}


def aligned_spec(gpus: int = 1, efas: int = 1, attribute: str = PCIE_ROOT) -> dict[str, Any]:
    """One GPU request and one EFA request under one ``matchAttribute`` constraint."""
    return claim_spec([request("gpu", GPU_CLASS, gpus), request("efa", EFA_CLASS, efas)],
                      [{"requests": ["gpu", "efa"], "matchAttribute": attribute}])


def claim_template(name: str, spec: dict[str, Any], namespace: str = "team-a") -> dict[str, Any]:
    """A ``resource.k8s.io/v1`` ResourceClaimTemplate."""
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": namespace}, "spec": {"spec": copy.deepcopy(spec)}}


def device_class(name: str, expression: str) -> dict[str, Any]:
    """A DeviceClass selecting devices by one CEL expression."""
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": expression}}]}}


def pod(name: str = "trainer", templates: tuple[str, ...] = ("gpu-efa",), namespace: str = "team-a",
        host_network: bool = False, limits: Optional[dict[str, Any]] = None) -> dict[str, Any]:
    """A Pod using one claim per template name; ``limits`` on its container."""
    spec: dict[str, Any] = {
        "resourceClaims": [{"name": f"claim-{i}", "resourceClaimTemplateName": t} for i, t in enumerate(templates)],
        "containers": [{"name": "main", "image": "trainer:1",
                        "resources": {"claims": [{"name": f"claim-{i}"} for i in range(len(templates))],
                                      **({"limits": dict(limits)} if limits else {})}}],
    }
    if host_network:
        spec["hostNetwork"] = True
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def job(name: str = "train", **pod_args: Any) -> dict[str, Any]:
    """A batch/v1 Job whose pod template is :func:`pod`'s spec."""
    template = pod(**pod_args)
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": template["metadata"]["namespace"]},
            "spec": {"template": {"spec": template["spec"]}}}
