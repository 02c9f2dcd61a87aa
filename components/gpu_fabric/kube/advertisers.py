"""One advertiser per NIC, at a version that counts the NICs right (pure).

Several DaemonSets can claim a node's RDMA/EFA devices: AWS's EFA device plugin, the EFA DRA driver
(DRANET), GPUStack's Device Manager, the SR-IOV network device plugin and the RDMA shared device
plugin -- and NVIDIA's GPU device plugin with MOFED support on, which mounts every
``/dev/infiniband/uverbs*`` into GPU containers. Two of them on one pool's nodes hand the same
devices out twice (EKS user guide, "Manage EFA devices": "Do not install the EFA DRA driver on nodes
where the EFA device plugin is running ... silent oversubscription").

:func:`advertiser_findings` is the one rule set: ``load_config`` runs it over the stack's own
plugin, the ``fabric-advertisers`` policy over the DaemonSets of a Pulumi program, and
``gpu-fabric lint --stack`` over manifests together with the stack's own plugin. Which pools a
DaemonSet serves is :func:`gpu_fabric.kube.coverage.daemonset_schedules_on`, as for coverage.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

from gpu_fabric.kube.coverage import (
    DEVICE_MANAGER_ARG_MARKER,
    DEVICE_MANAGER_IMAGE_MARKER,
    EFA_PLUGIN_IMAGE_MARKER,
    EFA_RESOURCE,
    RDMA_RESOURCE,
    advertised_resources,
    daemonset_schedules_on,
)
from gpu_fabric.findings import Finding, ObjectRef, Rule, Severity
from gpu_fabric.kube.workload_rules import FabricPool
from gpu_fabric.kube.workloads import object_ref

ADVERTISERS_POLICY = "fabric-advertisers"

EFA_PLUGIN_VERSION = Rule(
    "efa-plugin-version", "the EFA device plugin is at least the version floor of every instance family it serves",
    "https://github.com/aws/sagemaker-hyperpod-cli/pull/282", policy=ADVERTISERS_POLICY)
NVIDIA_PLUGIN_MOFED = Rule(
    "nvidia-plugin-mofed", "NVIDIA's device plugin runs with MOFED support off on EFA/RDMA pools",
    "https://github.com/NVIDIA/k8s-device-plugin/pull/1837", policy=ADVERTISERS_POLICY)
ONE_ADVERTISER_PER_NIC = Rule(
    "one-advertiser-per-nic", "no two NIC advertisers (EFA plugin, EFA DRA driver, Device Manager, SR-IOV or RDMA "
    "shared device plugin) serve one pool",
    "https://docs.aws.amazon.com/eks/latest/userguide/device-management-efa.html", policy=ADVERTISERS_POLICY)

EFA_PLUGIN = "AWS EFA device plugin"
EFA_DRA_DRIVER = "AWS EFA DRA driver (DRANET)"
DEVICE_MANAGER = "GPUStack Device Manager"
SRIOV_PLUGIN = "SR-IOV network device plugin"
RDMA_SHARED_PLUGIN = "RDMA shared device plugin"
NVIDIA_PLUGIN = "NVIDIA device plugin"

# Image repository markers of the NIC advertisers. The EFA DRA driver ships as chart eks/aws-dranet
# (driver dra.net, EKS "Manage EFA devices"); its image name is not given by the sources read, so
# any image whose repository contains "dranet" counts. SR-IOV: k8snetworkplumbingwg/
# sriov-network-device-plugin; RDMA shared: Mellanox/k8s-rdma-shared-dev-plugin.
_IMAGE_MARKERS: tuple[tuple[str, str], ...] = (
    (EFA_PLUGIN_IMAGE_MARKER, EFA_PLUGIN),
    ("dranet", EFA_DRA_DRIVER),
    ("sriov-network-device-plugin", SRIOV_PLUGIN),
    ("k8s-rdma-shared-dev-plugin", RDMA_SHARED_PLUGIN),
)
# NVIDIA's GPU plugin: nvcr.io/nvidia/k8s-device-plugin (the repository's last segment; the EFA
# plugin's "aws-efa-k8s-device-plugin" is a different segment).
_NVIDIA_PLUGIN_REPOSITORY = "k8s-device-plugin"

EFA_PLUGIN_FLOORS: tuple[tuple[str, tuple[int, int, int], str], ...] = (
    # (instance family or family prefix, lowest plugin version, source) -- most specific first.
    ("p6-b200", (0, 5, 10), "before v0.5.10 the plugin counts p6-b200's two ibp* NVLink controllers as EFAs, 10 instead of 8 "
                            "(aws/sagemaker-hyperpod-cli PR #282; EKS user guide PR #1083)"),
    ("p6", (0, 5, 6), "P6 devices are recognised from v0.5.6 (aws-ia/terraform-aws-eks-data-addons#53)"),
)
"""The EFA plugin's version floor per EFA instance family; families not listed have none stated by the sources."""

# NVIDIA/k8s-device-plugin: v0.19.0 enabled --mofed-enabled (MOFED_ENABLED) by default (PR #1550),
# mounting every /dev/infiniband/uverbs* into GPU containers beside the EFA plugin's devices
# (issue #1692); v0.19.3 reverted the default (PR #1837). EKS "Manage EFA devices" says to disable it.
MOFED_DEFAULT_ON = ((0, 19, 0), (0, 19, 3))
"""``[first, last)`` NVIDIA device plugin versions whose MOFED support is on unless switched off."""
MOFED_FLAG, MOFED_ENV = "--mofed-enabled", "MOFED_ENABLED"

# ASCII digits, at most 9 a part: a tag of 5,000 digits is no version to compare (int() of it raises,
# sys.int_info.str_digits_check_threshold), and is read like ``latest``.
_VERSION = re.compile(r"^v?([0-9]{1,9})\.([0-9]{1,9})\.([0-9]{1,9})(?![0-9])", re.ASCII)


def image_tag(image: str) -> str | None:
    """The tag of ``repo[:tag][@digest]``, or ``None`` when the image names none."""
    name = image.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    return last.split(":", 1)[1] if ":" in last else None


def image_version(image: str) -> tuple[int, int, int] | None:
    """``(major, minor, patch)`` of an image tag such as ``v0.5.21-eksbuild.13``; ``None`` for ``latest`` or a digest."""
    match = _VERSION.match(image_tag(image) or "")
    return (int(match.group(1)), int(match.group(2)), int(match.group(3))) if match else None


def _version_text(version: tuple[int, int, int]) -> str:
    return "v" + ".".join(str(part) for part in version)


def efa_plugin_floor(instance_type: str) -> tuple[tuple[int, int, int], str] | None:
    """The lowest EFA plugin version ``instance_type`` needs, with its source; ``None`` when none is stated."""
    family = instance_type.split(".", 1)[0]
    for prefix, version, source in EFA_PLUGIN_FLOORS:
        if family == prefix or (family.startswith(prefix) and prefix == "p6"):
            return version, source
    return None


def _containers(daemonset: Mapping[str, Any]) -> list[tuple[int, Mapping[str, Any]]]:
    spec = ((daemonset.get("spec") or {}).get("template") or {}).get("spec") or {}
    return [(i, c) for i, c in enumerate(spec.get("containers") or []) if isinstance(c, Mapping)]


def _repository(image: str) -> str:
    """``registry/path/name`` of ``registry/path/name[:tag][@digest]``."""
    head, slash, last = image.split("@", 1)[0].rpartition("/")
    return f"{head}{slash}{last.split(':', 1)[0]}"


def nic_advertisers(daemonset: Mapping[str, Any]) -> list[str]:
    """The NIC advertisers a DaemonSet runs (by image, or by the ``gpu-fabric.io/advertises`` annotation)."""
    found: list[str] = []
    resources = advertised_resources(daemonset)
    if EFA_RESOURCE in resources:
        found.append(EFA_PLUGIN)
    if RDMA_RESOURCE in resources:
        found.append(DEVICE_MANAGER)
    for _, container in _containers(daemonset):
        repository = _repository(str(container.get("image") or ""))
        for marker, advertiser in _IMAGE_MARKERS:
            if marker in repository and advertiser not in found:
                found.append(advertiser)
        words = [*(container.get("command") or []), *(container.get("args") or [])]
        if DEVICE_MANAGER_IMAGE_MARKER in repository and DEVICE_MANAGER_ARG_MARKER in words and DEVICE_MANAGER not in found:
            found.append(DEVICE_MANAGER)
    return found


def is_nvidia_plugin(container: Mapping[str, Any]) -> bool:
    """True for NVIDIA's GPU device plugin image (``nvcr.io/nvidia/k8s-device-plugin``)."""
    return _repository(str(container.get("image") or "")).rsplit("/", 1)[-1] == _NVIDIA_PLUGIN_REPOSITORY


def mofed_setting(container: Mapping[str, Any]) -> tuple[bool | None, str]:
    """``(mofed on?, why)`` for an NVIDIA device plugin container: the flag, else the env, else its version's default.

    ``None`` when neither is set and the image's version cannot be read (``latest``, a digest).
    """
    words = [str(word) for word in [*(container.get("command") or []), *(container.get("args") or [])]]
    for word in reversed(words):
        if word == MOFED_FLAG:
            return True, f"{MOFED_FLAG} is passed"
        if word.startswith(MOFED_FLAG + "="):
            value = word.split("=", 1)[1].strip().lower()
            return value in ("true", "1", "t", "yes"), f"{word} is passed"
    for item in container.get("env") or []:
        if isinstance(item, Mapping) and item.get("name") == MOFED_ENV and "value" in item:
            value = str(item.get("value")).strip().lower()
            return value in ("true", "1", "t", "yes"), f"{MOFED_ENV}={item.get('value')}"
    version = image_version(str(container.get("image") or ""))
    if version is None:
        return None, "neither --mofed-enabled nor MOFED_ENABLED is set and the image tag is not a version"
    low, high = MOFED_DEFAULT_ON
    if low <= version < high:
        return True, f"{_version_text(version)} enables MOFED support by default (v0.19.0-v0.19.2; NVIDIA/k8s-device-plugin#1692)"
    return False, f"{_version_text(version)} leaves MOFED support off by default"


def _serves(daemonset: Mapping[str, Any], pool: FabricPool) -> bool:
    return daemonset_schedules_on(daemonset, pool.placement.node_labels(), pool.placement.taints)[0]


def _efa_plugin_versions(daemonset: Mapping[str, Any], pool: FabricPool, ref: ObjectRef) -> list[Finding]:
    findings: list[Finding] = []
    if EFA_PLUGIN not in nic_advertisers(daemonset):
        return findings
    for i, container in _containers(daemonset):
        image = str(container.get("image") or "")
        if not image:
            continue
        version = image_version(image)
        path = f"spec.template.spec.containers[{i}].image"
        for instance_type in pool.instance_types:
            floor = efa_plugin_floor(instance_type)
            if floor is None:
                continue
            lowest, source = floor
            if version is None:
                findings.append(Finding.of(EFA_PLUGIN_VERSION, path, (
                    f"{image} names no version; pool {pool.name} runs {instance_type}, which needs at least "
                    f"{_version_text(lowest)}: {source}. Pin a tag"), subject=ref, pool=pool.name))
            elif version < lowest:
                findings.append(Finding.of(EFA_PLUGIN_VERSION, path, (
                    f"{_version_text(version)} on pool {pool.name} ({instance_type}) is below {_version_text(lowest)}: "
                    f"{source}"), subject=ref, pool=pool.name))
    return findings


def _nvidia_mofed(daemonset: Mapping[str, Any], pool: FabricPool, ref: ObjectRef) -> list[Finding]:
    findings = []
    for i, container in _containers(daemonset):
        if not is_nvidia_plugin(container):
            continue
        enabled, why = mofed_setting(container)
        path = f"spec.template.spec.containers[{i}]"
        if enabled:
            findings.append(Finding.of(NVIDIA_PLUGIN_MOFED, path, (
                f"MOFED support is on ({why}) on {pool.fabric} pool {pool.name}: every /dev/infiniband/uverbs* is mounted "
                f"into GPU containers beside the fabric advertiser's devices (EKS 'Manage EFA devices'); pass "
                f"{MOFED_FLAG}=false or use v0.19.3 or later"), subject=ref, pool=pool.name))
        elif enabled is None:
            findings.append(Finding.of(NVIDIA_PLUGIN_MOFED, path, (
                f"cannot tell whether MOFED support is on ({why}) on {pool.fabric} pool {pool.name}; pass {MOFED_FLAG}=false"),
                severity=Severity.WARNING, subject=ref, pool=pool.name))
    return findings


def advertiser_findings(pools: Sequence[FabricPool], daemonsets: Sequence[Mapping[str, Any]]) -> list[Finding]:
    """Versions and exclusivity of every NIC advertiser (and NVIDIA's plugin) on every fabric pool."""
    findings: list[Finding] = []
    for pool in pools:
        if pool.fabric == "none":
            continue
        serving: dict[str, list[ObjectRef]] = {}
        for daemonset in daemonsets:
            if not _serves(daemonset, pool):
                continue
            ref = object_ref(daemonset)
            for advertiser in nic_advertisers(daemonset):
                serving.setdefault(advertiser, []).append(ref)
            findings.extend(_efa_plugin_versions(daemonset, pool, ref))
            findings.extend(_nvidia_mofed(daemonset, pool, ref))
        distinct = sorted(serving)
        refs = sorted({ref for refs in serving.values() for ref in refs}, key=str)
        if len(distinct) > 1 or any(len(set(r)) > 1 for r in serving.values()):
            who = "; ".join(f"{advertiser}: {', '.join(sorted({str(ref) for ref in serving[advertiser]}))}"
                            for advertiser in distinct)
            findings.append(Finding.of(ONE_ADVERTISER_PER_NIC, "spec.template.spec", (
                f"{len(refs)} DaemonSets advertise the NICs of {pool.fabric} pool {pool.name} ({who}): each hands out the same "
                "devices, which oversubscribes them silently (EKS 'Manage EFA devices'); keep one"),
                subject=refs[-1], pool=pool.name))
    return findings
