"""ResourceClaimTemplates that pair GPUs with the EFA devices on their PCIe root (``resource.k8s.io/v1``, pure).

A pod of a ``deviceAllocation: dra`` pool claims its GPUs and EFA interfaces through one of these templates
(``spec.resourceClaims[].resourceClaimTemplateName``). Each template asks, per PCIe root the claim spans, for the
root's GPUs (DeviceClass ``gpu.nvidia.com``, created by NVIDIA's DRA driver chart) and its EFA devices (DeviceClass
``efa.networking.k8s.aws``, created by AWS's ``aws-dranet`` chart), and constrains the pair with
``matchAttribute: resource.kubernetes.io/pcieRoot``: every device of both requests must share the root. That is the
aligned shape of DRANET's EFA example (kubernetes-sigs/dranet ``examples/aws_eks_examples/gpu-efa``, measured 11.35
against 6.04 GB/s unaligned); one request pair per root, because a constraint over requests that span several
roots is never satisfiable ("all of the devices must satisfy the constraint", DeviceConstraint in k8s.io/api
``resource/v1/types.go``).

Field names are those of k8s.io/api ``resource/v1/types.go`` (Kubernetes 1.34): ``ResourceClaimTemplateSpec.spec``
-> ``ResourceClaimSpec.devices`` -> ``DeviceClaim.requests[]`` (``name``, ``exactly``: ``ExactDeviceRequest``
``deviceClassName``, ``allocationMode``, ``count``) and ``constraints[]`` (``requests``, ``matchAttribute``).
No DeviceClass is rendered: both classes come with their drivers' charts (research: aws/eks-charts
``stable/aws-dranet`` ``deviceClass.create``; NVIDIA's chart creates ``gpu.nvidia.com``).
"""

from __future__ import annotations

from typing import Any, Iterable

from gpu_fabric.config.pool import claim_template_name_of
from gpu_fabric.kube.dra_claims import EFA_DEVICE_CLASS, GPU_DEVICE_CLASS, PCIE_ROOT_ATTRIBUTE, RESOURCE_API_VERSION

DRA_DEVICE_CLASSES = (EFA_DEVICE_CLASS, GPU_DEVICE_CLASS)
"""The DeviceClasses the stack's templates claim (both created by their drivers' charts)."""
ALLOCATION_RESULTS_MAX = 32
"""At most 32 devices per claim: ``AllocationResultsMaxSize`` in k8s.io/api ``resource/v1/types.go``."""
REQUESTS_MAX = 32
"""At most 32 requests (and 32 constraints) per claim: ``DeviceRequestsMaxSize``/``DeviceConstraintsMaxSize``."""
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"


def claim_template_name(pool: str, gpus: int) -> str:
    """``<pool>-<gpus>gpu``: what a pod names in ``resourceClaims[].resourceClaimTemplateName``."""
    return claim_template_name_of(pool, gpus)


def root_groups(gpus: int, gpus_per_root: int, efa_per_root: int) -> list[tuple[int, int]]:
    """``(GPUs, EFA)`` per PCIe root a claim of ``gpus`` GPUs takes: full roots first, then the remainder with all of
    its root's EFA devices."""
    groups = []
    remaining = gpus
    while remaining > 0:
        taken = min(gpus_per_root, remaining)
        groups.append((taken, efa_per_root))
        remaining -= taken
    return groups


def claim_devices(gpus: int, gpus_per_root: int, efa_per_root: int) -> int:
    """How many devices a claim of ``gpus`` GPUs allocates (GPUs and EFA)."""
    return sum(g + e for g, e in root_groups(gpus, gpus_per_root, efa_per_root))


def _exactly(device_class: str, count: int) -> dict[str, Any]:
    # allocationMode written as the API server stores its default, so a preview after the apply shows no change.
    return {"deviceClassName": device_class, "allocationMode": "ExactCount", "count": count}


def claim_template(pool: str, namespace: str, gpus: int, gpus_per_root: int, efa_per_root: int) -> dict[str, Any]:
    """The ResourceClaimTemplate of ``gpus`` GPUs on ``pool``, in ``namespace``, each with its root's EFA devices."""
    requests: list[dict[str, Any]] = []
    constraints: list[dict[str, Any]] = []
    for i, (gpu_count, efa_count) in enumerate(root_groups(gpus, gpus_per_root, efa_per_root)):
        gpu, efa = f"gpu-{i}", f"efa-{i}"
        requests += [{"name": gpu, "exactly": _exactly(GPU_DEVICE_CLASS, gpu_count)},
                     {"name": efa, "exactly": _exactly(EFA_DEVICE_CLASS, efa_count)}]
        constraints.append({"requests": [gpu, efa], "matchAttribute": PCIE_ROOT_ATTRIBUTE})
    return {
        "apiVersion": RESOURCE_API_VERSION,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": claim_template_name(pool, gpus), "namespace": namespace,
                     "labels": {MANAGED_BY_LABEL: "gpu-fabric"}},
        "spec": {"spec": {"devices": {"requests": requests, "constraints": constraints}}},
    }


def claim_templates(pool: str, namespaces: Iterable[str], gpu_counts: Iterable[int], gpus_per_root: int,
                    efa_per_root: int) -> list[dict[str, Any]]:
    """One template per GPU count, in every tenant namespace (a pod's claim template lives in its namespace)."""
    return [claim_template(pool, namespace, gpus, gpus_per_root, efa_per_root)
            for namespace in sorted(set(namespaces)) for gpus in sorted(set(gpu_counts))]

