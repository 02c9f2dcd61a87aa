"""On a ``deviceAllocation: dra`` pool, DRA drivers alone hand out the GPUs and EFA devices (pure).

* ``dra-pool-device-plugin``: no device plugin advertising ``vpc.amazonaws.com/efa`` (AWS's EFA plugin) or
  ``nvidia.com/gpu`` (NVIDIA's plugin) runs on the pool's nodes. A plugin and a DRA driver serving the same devices
  hand each out twice: "Do not install the EFA DRA driver on nodes where the EFA device plugin is running ...
  silent oversubscription" (EKS user guide, "Manage EFA devices"); NVIDIA's DRA driver "cannot run alongside the
  standard GPU device plugin" (kubernetes-sigs/dra-driver-nvidia-gpu ``site/content/docs/reference/helm-values.md``,
  ``gpuResourcesEnabledOverride``). The rule is per device type, not per node: NVIDIA's plugin for GPUs beside
  DRANET for EFA is another, valid, design (EKS GB200 guide), but not the one a ``dra`` pool declares.
* ``dra-pool-plugin-keys``: nothing the stack runs on the pool requests those keys. On a ``dra`` pool no plugin
  advertises them. A pod asking for ``vpc.amazonaws.com/efa`` there stays Pending ("Insufficient
  vpc.amazonaws.com/efa"). A pod asking for ``nvidia.com/gpu`` is *scheduled* when the GPU DeviceClass sets
  ``extendedResourceName: nvidia.com/gpu``, as NVIDIA's DRA driver chart writes it on ``resource.k8s.io/v1``:
  the scheduler gives it an implicit claim holding GPUs and no EFA device (DRAExtendedResource, KEP-5004, GA in
  1.37; seen under the real kube-scheduler v1.37.2 in tests/e2e/test_scheduler_dra.py), so its KV cache moves
  without GPUDirect RDMA -- the silent fallback the stack exists to prevent; without that field it stays Pending
  ("Insufficient nvidia.com/gpu"). Either way the pod does not get its GPU beside its NIC. GPUStack's
  ModelDeployment and Mooncake members can only request the keys (the operator has no DRA support: its CRD
  carries no ``resourceClaims``), so they belong on ``plugin`` pools. ``gpu-fabric verify`` fails such an
  implicit claim on a live cluster (:mod:`gpu_fabric.verify.dra`).

:func:`device_plugin_findings` is called by ``load_config`` (the stack's own EFA plugin and ``providedBy``), by
``gpu-fabric lint --stack`` (manifests beside the stack's plugin) and by the ``dra-pools`` policy.
"""

from __future__ import annotations

from typing import Any, Collection, Mapping, Sequence

from gpu_fabric.config import constants
from gpu_fabric.config.constants import DEVICE_ALLOCATION_DRA, DEVICE_ALLOCATION_LABEL
from gpu_fabric.findings import Finding, ObjectRef, Rule
from gpu_fabric.kube.advertisers import EFA_PLUGIN, is_nvidia_plugin, nic_advertisers
from gpu_fabric.kube.coverage import advertised_resources, daemonset_schedules_on
from gpu_fabric.kube.pool_view import PoolView
from gpu_fabric.kube.workloads import object_ref

DRA_POLICY = "dra-pools"
"""The mandatory policy that reports every rule over ``deviceAllocation: dra`` pools."""
PLUGIN_KEYS = (constants.EFA_RESOURCE, constants.NVIDIA_GPU_RESOURCE)
"""The device-plugin keys a ``dra`` pool's devices would be advertised under."""

DRA_POOL_DEVICE_PLUGIN = Rule(
    "dra-pool-device-plugin", "no EFA or NVIDIA device plugin runs on a deviceAllocation: dra pool",
    "https://docs.aws.amazon.com/eks/latest/userguide/device-management-efa.html", policy=DRA_POLICY)
DRA_POOL_PLUGIN_KEYS = Rule(
    "dra-pool-plugin-keys", "nothing requests vpc.amazonaws.com/efa or nvidia.com/gpu on a deviceAllocation: dra pool",
    "https://kubernetes.io/docs/concepts/scheduling-eviction/dynamic-resource-allocation/", policy=DRA_POLICY)


def plugin_keys_of(daemonset: Mapping[str, Any]) -> list[str]:
    """The device-plugin keys a DaemonSet advertises: the EFA plugin's (by annotation or image), NVIDIA's (by image)."""
    keys = []
    if constants.EFA_RESOURCE in advertised_resources(daemonset) or EFA_PLUGIN in nic_advertisers(daemonset):
        keys.append(constants.EFA_RESOURCE)
    containers = (((daemonset.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers") or []
    if any(isinstance(c, Mapping) and is_nvidia_plugin(c) for c in containers):
        keys.append(constants.NVIDIA_GPU_RESOURCE)
    return keys


def device_plugin_findings(pools: Sequence[PoolView], daemonsets: Sequence[Mapping[str, Any]]) -> list[Finding]:
    """Every EFA or NVIDIA device plugin DaemonSet that would run on a ``dra`` pool (at the DaemonSet's pod spec)."""
    findings: list[Finding] = []
    for pool in pools:
        if not pool.uses_dra:
            continue
        for daemonset in daemonsets:
            keys = plugin_keys_of(daemonset)
            if not keys or not daemonset_schedules_on(daemonset, pool.labels, pool.taints)[0]:
                continue
            ref = object_ref(daemonset)
            # gpu-fabric's own EFA plugin keeps off nodes carrying the label; nodes the stack does not provision get it
            # only from whoever labels them, so the fix there is the label (the plugin has no other knob).
            unlabelled = pool.labels.get(DEVICE_ALLOCATION_LABEL) != DEVICE_ALLOCATION_DRA
            label = (f"; gpu-fabric's EFA plugin keeps off nodes labelled {DEVICE_ALLOCATION_LABEL}: "
                     f"{DEVICE_ALLOCATION_DRA}: on nodes the stack does not provision, add that label to the pool's "
                     "nodeLabels and to the nodes themselves") if unlabelled else ""
            findings.append(Finding.of(DRA_POOL_DEVICE_PLUGIN, "spec.template.spec", (
                f"{ref} advertises {', '.join(keys)} and would run on pool {pool.name}, whose devices DRA drivers allocate "
                "(deviceAllocation: dra): the plugin and the driver hand out the same devices, a silent oversubscription "
                f"(EKS 'Manage EFA devices'); keep the plugin off the pool's nodes (nodeSelector, affinity or taints){label}"),
                subject=ref, pool=pool.name))
    return findings


def plugin_key_findings(pool: PoolView, keys: Collection[str], subject: ObjectRef, path: str) -> list[Finding]:
    """``subject`` requests device-plugin ``keys`` on ``pool``: refused when the pool is a ``dra`` pool."""
    wanted = sorted(set(keys) & set(PLUGIN_KEYS))
    if not pool.uses_dra or not wanted:
        return []
    return [Finding.of(DRA_POOL_PLUGIN_KEYS, path, (
        f"{subject} requests {', '.join(wanted)} on pool {pool.name}, whose GPUs and EFA devices are claimed through "
        f"DRA (deviceAllocation: dra): {_plugin_key_outcome(wanted)}. Run it on a deviceAllocation: plugin pool, or "
        "(a plain pod) claim the pool's ResourceClaimTemplate instead (docs/dra.md)"),
        subject=subject, pool=pool.name, rests_on_unknown=pool.fabric_unknown)]


def _plugin_key_outcome(keys: Collection[str]) -> str:
    """What the real kube-scheduler does with such a pod (tests/e2e/test_scheduler_dra.py)."""
    if constants.EFA_RESOURCE in keys:
        return f"nothing advertises {constants.EFA_RESOURCE} there, so the pod stays Pending"
    return (f"the pod either stays Pending or, when the GPU DeviceClass sets extendedResourceName: "
            f"{constants.NVIDIA_GPU_RESOURCE} (NVIDIA's chart does), gets GPUs through an implicit claim without "
            "their EFA devices, so its transfers run without GPUDirect RDMA")


def workload_plugin_key_findings(objects: Sequence[Mapping[str, Any]], pools: Sequence[PoolView]) -> list[Finding]:
    """Pods and workloads (not DaemonSets: device plugins are judged by :func:`device_plugin_findings`) whose pod
    template lands on a ``dra`` pool and requests a device-plugin key there (at the pod spec's containers)."""
    from gpu_fabric.kube.coverage import pod_schedules_on
    from gpu_fabric.kube.pod_templates import WorkloadShapeError, pod_templates, requested_resource_names

    dra = [pool for pool in pools if pool.uses_dra]
    findings: list[Finding] = []
    for obj in objects if dra else ():
        if obj.get("kind") == "DaemonSet":
            continue
        try:
            templates = pod_templates(obj)
        except WorkloadShapeError:
            continue  # the workload rules name the shape problem
        for path, pod_spec in templates:
            keys = requested_resource_names(pod_spec) & set(PLUGIN_KEYS)
            for pool in dra:
                if keys and pod_schedules_on(pod_spec, pool.labels, pool.taints)[0]:
                    findings += plugin_key_findings(pool, keys, object_ref(obj), f"{path}.containers")
    return findings
