"""The pod-template rules of :mod:`gpu_fabric.kube.workloads`: the pools they judge on and each rule with its check (pure).

A :class:`FabricPool` is what the rules read of a pool (its fabric, the keys its advertiser serves, its
node capacity); a :class:`ContainerView` is one container on one pool; :data:`RULES` pairs each
:class:`~gpu_fabric.findings.Rule` with the check that decides it. :func:`gpu_fabric.kube.workloads.judge_workloads`
finds the pools each template lands on and applies them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from gpu_fabric.config import constants
from gpu_fabric.config.secrets import MANIFEST_ADVICE, plaintext_credentials
from gpu_fabric.findings import Enforcement, Finding, ObjectRef, Rule, Severity
from gpu_fabric.kube.coverage import PoolPlacement
from gpu_fabric.kube.engine_flags import EngineSettings


EFA_RESOURCE = constants.EFA_RESOURCE
RDMA_RESOURCE = constants.RDMA_RESOURCE
RDMA_SHARED_RESOURCE = constants.RDMA_SHARED_RESOURCE
RDMA_PARTITIONED_RESOURCE = constants.RDMA_PARTITIONED_RESOURCE
FABRIC_RESOURCES = (EFA_RESOURCE, RDMA_RESOURCE, RDMA_SHARED_RESOURCE, RDMA_PARTITIONED_RESOURCE)
"""The fabric keys gpu-fabric's advertisers serve: the EFA plugin's and GPUStack's Device Manager's."""
HUGEPAGES_2MI = "hugepages-2Mi"

ERROR, WARNING = Severity.ERROR, Severity.WARNING

WORKLOADS_POLICY = "fabric-workloads"
"""The mandatory policy that reports the errors of :data:`RULES`."""
WORKLOADS_ADVISORY_POLICY = "fabric-workloads-advisory"
"""The advisory policy that reports their warnings."""


# ---------------------------------------------------------------------------------------------
# Pools
# ---------------------------------------------------------------------------------------------


def advertised_fabric_keys(fabric: str, partitioned_interfaces: int | None = None) -> frozenset[str]:
    """The fabric keys a pool's advertiser serves on its nodes.

    EFA pools: ``vpc.amazonaws.com/efa`` (AWS's EFA plugin). RDMA pools: GPUStack's Device Manager
    registers ``rdma``, ``rdma.shared`` and ``rdma.partitioned`` on every node it serves, the last at
    zero without SR-IOV virtual functions (gpustack/gpustack-operator ``pkg/devicemanager/allocator/rdma/``,
    the three RDMA device-plugin servers), so ``.partitioned`` counts only where the pool has partitioned interfaces (or their
    number is unknown).
    """
    if fabric == "efa":
        return frozenset({EFA_RESOURCE})
    if fabric == "rdma":
        keys = {RDMA_RESOURCE, RDMA_SHARED_RESOURCE}
        if partitioned_interfaces is None or partitioned_interfaces > 0:
            keys.add(RDMA_PARTITIONED_RESOURCE)
        return frozenset(keys)
    return frozenset()


@dataclass(frozen=True)
class FabricPool:
    """A pool as the workload rules see it: where its nodes are (placement) and which fabric keys they offer."""

    placement: PoolPlacement
    advertised: frozenset[str]
    instance_types: tuple[str, ...] = ()
    """EC2 instance types of the pool's node group, when the stack provisions it."""
    node_capacity: Mapping[str, int] = field(default_factory=dict)
    """What one node offers of each countable resource (:func:`gpu_fabric.kube.workload_demand.node_capacity_of`);
    a resource not listed is not judged."""

    @property
    def name(self) -> str:
        return self.placement.name

    @property
    def fabric(self) -> str:
        return self.placement.fabric

    @classmethod
    def of(cls, name: str, fabric: str, labels: Mapping[str, str], taints: Sequence[Mapping[str, Any]] = (),
           manufacturer: str | None = None, partitioned_interfaces: int | None = None,
           instance_types: Sequence[str] = (), dra: bool = False,
           node_capacity: Mapping[str, int] | None = None) -> "FabricPool":
        """Build from plain facts (a pool spec's, or a policy's reading of resource inputs).

        On a ``deviceAllocation: dra`` pool (``dra``) no device plugin advertises a fabric key: the EFA devices
        are claimed through ResourceClaims."""
        advertised = frozenset() if dra else advertised_fabric_keys(fabric, partitioned_interfaces)
        return cls(PoolPlacement(name, fabric, dict(labels), tuple(taints), manufacturer), advertised, tuple(instance_types),
                   dict(node_capacity or {}))


# ---------------------------------------------------------------------------------------------
# Rules
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ContainerView:
    """What the rules read of one container on one pool."""

    pod_path: str
    pod_spec: Mapping[str, Any]
    path: str
    container: Mapping[str, Any]
    settings: EngineSettings
    pool: FabricPool
    subject: ObjectRef
    """The workload the container belongs to."""

    def requested(self) -> dict[str, str]:
        """Resource name -> the field path that requests or limits it."""
        found: dict[str, str] = {}
        resources = self.container.get("resources") or {}
        for section in ("limits", "requests"):
            for key in resources.get(section) or {}:
                # Resource names hold dots and slashes: bracketed, so the path stays readable.
                found.setdefault(str(key), f'{self.path}.resources.{section}["{key}"]')
        return found

    def fabric_keys(self) -> dict[str, str]:
        return {key: where for key, where in self.requested().items() if key in FABRIC_RESOURCES}

    def env(self, name: str) -> tuple[str, str] | None:
        setting = self.settings.env.get(name)
        return (str(setting.value), setting.path) if setting is not None else None

    def finding(self, rule: Rule, path: str, message: str, severity: Severity = ERROR) -> Finding:
        """A finding of ``rule`` on this container's workload, for this pool, at ``path``."""
        return Finding.of(rule, path, message, severity=severity, subject=self.subject, pool=self.pool.name)


Check = Callable[[ContainerView], Iterable[Finding]]
"""A rule's check: the findings of one container on one pool."""


def _workload_rule(rule_id: str, summary: str, source: str, *, advisory: bool = False) -> Rule:
    """A rule of :data:`RULES`: errors go to ``fabric-workloads``, warnings to ``fabric-workloads-advisory``."""
    if advisory:
        return Rule(rule_id, summary, source, policy=WORKLOADS_ADVISORY_POLICY, enforcement=Enforcement.ADVISORY)
    return Rule(rule_id, summary, source, policy=WORKLOADS_POLICY, warnings_policy=WORKLOADS_ADVISORY_POLICY)


ENGINE_FLAGS = _workload_rule(
    "engine-flags", "an engine's --kv-transfer-config is a JSON object (the engine does not start otherwise)",
    "https://docs.vllm.ai/en/latest/features/nixl_connector_usage.html")
FABRIC_KEY_ADVERTISED = _workload_rule(
    "fabric-key-advertised", "a container requests only fabric keys its pool's advertiser serves (else the pod stays Pending)",
    "https://docs.aws.amazon.com/eks/latest/userguide/device-management-efa.html")
EFA_HUGEPAGES = _workload_rule(
    "efa-hugepages", "vpc.amazonaws.com/efa is requested with hugepages-2Mi (libfabric's EFA provider needs huge pages)",
    "https://docs.aws.amazon.com/eks/latest/userguide/device-management-efa.html")
TRANSFER_HAS_FABRIC_KEY = _workload_rule(
    "transfer-has-fabric-key", "a NIXL connector on a fabric pool requests a fabric key (else NIXL falls back to TCP)",
    "https://github.com/aws-samples/aws-do-eks/pull/56")
NIXL_BACKEND_FABRIC = _workload_rule(
    "nixl-backend-fabric", "NIXL's backend and UCX transports carry the pool's fabric (srd on EFA, RDMA verbs on RDMA)",
    "https://docs.nvidia.com/dynamo/latest/guides/disagg_communication.html")
EFA_FI_PROVIDER = _workload_rule(
    "efa-fi-provider", "FI_PROVIDER is unset or efa on EFA pools (another provider skips the EFA devices)",
    "https://github.com/aws-samples/awsome-distributed-training/blob/main/1.architectures/efa-cheatsheet.md")
EFA_NO_RDMAV = _workload_rule(
    "efa-no-rdmav", "no RDMAV_* variable on EFA pools (the EFA cheatsheet: do not use)",
    "https://github.com/aws-samples/awsome-distributed-training/blob/main/1.architectures/efa-cheatsheet.md")
ADVERTISER_OWNED_SETTINGS = _workload_rule(
    "advertiser-owned-settings", "NCCL_IB_HCA is not set by hand where the Device Manager grants device.gpustack.ai/rdma*",
    "gpustack/gpustack-operator: pkg/deviceplugin/rdma_allocate.go")
ADVERTISER_OWNED_DEVICES = _workload_rule(
    "advertiser-owned-devices", "no /dev/infiniband hostPath on fabric pools (the advertiser owns the verbs devices)",
    "https://github.com/aws-samples/aws-do-eks/pull/63")
NIXL_NCCL_DEAD_CONFIG = _workload_rule(
    "nixl-nccl-dead-config", "no NCCL_IB_HCA / NCCL_SOCKET_IFNAME where only NixlConnector moves the KV cache",
    "https://docs.vllm.ai/en/latest/features/nixl_connector_usage.html", advisory=True)
NIXL_SIDE_CHANNEL_HOST = _workload_rule(
    "nixl-side-channel-host", "VLLM_NIXL_SIDE_CHANNEL_HOST is set to an address peers on other nodes reach",
    "https://docs.vllm.ai/en/latest/features/nixl_connector_usage.html", advisory=True)

WORKLOAD_NODE_CAPACITY = _workload_rule(
    "workload-node-capacity", "a container, a pod (containers, init containers, overhead) and its claims ask for no more "
    "GPUs, EFA or RDMA devices than one node of the pool it lands on has (else the pod stays Pending)",
    "https://kubernetes.io/docs/concepts/workloads/pods/init-containers/#resource-sharing-within-containers")
WORKLOAD_LANDS_ON_NO_POOL = _workload_rule(
    "workload-lands-on-no-pool", "a workload that asks for the fabric (a fabric key, a claim of GPU or NIC devices, a "
    "LocalQueue of the stack) can land on a pool of the stack (nodeSelector, required node affinity, tolerations)",
    "https://kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration/")

PLAINTEXT_CREDENTIAL = _workload_rule(
    "plaintext-credential", "no credential in plain text in an object: a pod template's env, probe headers, command or args, "
    "its annotations, a ConfigMap's data (a token, key or password belongs in a Kubernetes Secret, read with "
    "valueFrom.secretKeyRef)",
    "https://kubernetes.io/docs/concepts/configuration/secret/#using-secrets-as-environment-variables")


def credential_findings(ref: ObjectRef, pod_path: str, pod_spec: Mapping[str, Any]) -> list[Finding]:
    """A finding per credential an object (or a part of it at ``pod_path``) holds in plain text, whatever it
    is and on whichever pool it lands: a pod template's variables, probe headers and command lines, its
    annotations, a ConfigMap's data (:func:`gpu_fabric.config.secrets.credential_sites`).

    Anyone who can read the manifest (its repository, ``kubectl get -o yaml``, the Pulumi state) reads
    the credential; a Secret keeps it apart, under its own access rules. The message names the field
    and never quotes the value (:func:`gpu_fabric.config.secrets.credential_reason`).
    """
    return [Finding.of(PLAINTEXT_CREDENTIAL, where, f"{reason}; {MANIFEST_ADVICE}", subject=ref)
            for where, reason in plaintext_credentials(pod_spec, pod_path)]


def _unadvertised_keys(view: ContainerView) -> Iterable[Finding]:
    # A key no advertiser serves on the pool's nodes keeps the pod Pending (Insufficient <key>), and
    # on an EFA pool a GPUStack RDMA key means nothing advertises it there (only GPUStack's Device Manager
    # serves ``device.gpustack.ai/rdma*``; AWS's EFA plugin serves ``vpc.amazonaws.com/efa``).
    for key, where in view.fabric_keys().items():
        if key not in view.pool.advertised:
            offered = ", ".join(sorted(view.pool.advertised)) or "no fabric key"
            pool = (f"{view.pool.fabric} pool {view.pool.name}" if view.pool.fabric != "none"
                    else f"pool {view.pool.name} (fabric: none)")
            yield view.finding(FABRIC_KEY_ADVERTISED, where, f"requests {key}, which nothing advertises on {pool} (its nodes "
                                                            f"offer {offered}); the pod stays Pending")


def _efa_hugepages(view: ContainerView) -> Iterable[Finding]:
    # EKS user guide, "Manage EFA devices" (device-management-efa.adoc): pods request
    # vpc.amazonaws.com/efa and hugepages-2Mi; awsome-distributed-ai PR #1240: "without them the pod sits Pending".
    requested = view.requested()
    if EFA_RESOURCE in requested and HUGEPAGES_2MI not in requested:
        yield view.finding(EFA_HUGEPAGES, requested[EFA_RESOURCE], (f"requests {EFA_RESOURCE} without {HUGEPAGES_2MI}: libfabric's EFA provider "
                                               "allocates its buffers from 2 MiB huge pages (EKS 'Manage EFA devices'; "
                                               "request for example hugepages-2Mi: 5120Mi and memory beside it)"))


def _transfer_without_fabric_key(view: ContainerView) -> Iterable[Finding]:
    # A NIXL connector on a fabric pool with no fabric key in the container gets no device node, so
    # libfabric/UCX find no RDMA device and move the KV cache over TCP (aws-do-eks PR #56:
    # fi_info -p efa = -61, NCCL NET/Socket).
    nixl = view.settings.uses_nixl()
    privileged = (view.container.get("securityContext") or {}).get("privileged") is True  # sees every device node
    # On a deviceAllocation: dra pool the devices come with a ResourceClaim the container names (resources.claims).
    claims = bool((view.container.get("resources") or {}).get("claims"))
    if nixl is not None and not view.fabric_keys() and not privileged and not claims:
        keys = " or ".join(sorted(view.pool.advertised)) or "a ResourceClaim of the pool's template, resources.claims"
        yield view.finding(TRANSFER_HAS_FABRIC_KEY, nixl.path, (f"transfers KV over NIXL on {view.pool.fabric} pool {view.pool.name} but requests no "
                                 f"fabric key ({keys}): the container gets no RDMA device and NIXL falls back to TCP"))


# UCX transport names: RDMA verbs (rc, ud, dc and their accelerated _x/_mlx5 forms; ib is UCX's alias
# for the IB family) and AWS EFA's SRD (Dynamo "Disaggregated Inference Communication Guide", UCX Configuration Reference).
_UCX_RDMA_TRANSPORTS = frozenset({"rc", "rc_x", "rc_v", "rc_verbs", "rc_mlx5", "dc", "dc_x", "dc_mlx5", "ud", "ud_x",
                                  "ud_v", "ud_verbs", "ud_mlx5", "ib"})
_UCX_EFA_TRANSPORTS = frozenset({"srd"})
_UCX_GPU_TRANSPORTS = frozenset({"cuda_copy", "cuda_ipc", "cuda", "rocm_copy", "rocm_ipc", "rocm"})


def _ucx_transports(value: str) -> tuple[set[str], bool]:
    """The transports ``UCX_TLS`` names and whether it is an exclusion list (``^tcp``) or ``all``."""
    text = value.strip()
    if text.startswith("^") or text.lower() in ("all", ""):
        return set(), True
    return {item.strip().lower() for item in text.split(",") if item.strip()}, False


def _nixl_backends(view: ContainerView) -> Iterable[Finding]:
    backends = view.settings.nixl_backends()
    if backends is None:
        return
    names = set(backends.value)
    fabric = view.pool.fabric
    if fabric == "rdma" and names == {"LIBFABRIC"}:
        # ai-dynamo/nixl src/plugins/libfabric/README.md: only AWS EFA is validated in production.
        yield view.finding(NIXL_BACKEND_FABRIC, backends.path, ("NIXL's LIBFABRIC backend is validated in production on AWS EFA only "
                                       f"(NIXL libfabric plugin README); on RDMA pool {view.pool.name} use UCX"), severity=WARNING)
    if "UCX" not in names:
        return
    tls = view.env("UCX_TLS")
    if tls is None:
        if fabric == "efa" and names == {"UCX"}:
            # Dynamo guide, "AWS EFA Configuration": UCX over EFA works but is not recommended; NIXL on AWS moves to libfabric.
            yield view.finding(NIXL_BACKEND_FABRIC, backends.path, ("NIXL uses UCX on EFA pool " f"{view.pool.name}: prefer "
                                           "kv_connector_extra_config.backends [\"LIBFABRIC\"] (vLLM NixlConnector guide; the "
                                           "Dynamo communication guide calls UCX over EFA functional but not performant)"), severity=WARNING)
        return
    value, where = tls
    transports, open_list = _ucx_transports(value)
    if open_list:
        return
    needed = _UCX_EFA_TRANSPORTS if fabric == "efa" else _UCX_RDMA_TRANSPORTS
    if not transports & needed:
        wanted = "srd (EFA's transport)" if fabric == "efa" else "RDMA transport (rc_x, rc, dc_x, dc, ud)"
        yield view.finding(NIXL_BACKEND_FABRIC, where, (f"UCX_TLS={value} has no {wanted}: NIXL's UCX backend moves the KV cache over "
                             f"{', '.join(sorted(transports))} on {fabric} pool {view.pool.name}, a silent TCP fallback "
                             "(Dynamo 'Disaggregated Inference Communication Guide')"))
    if not transports & _UCX_GPU_TRANSPORTS:
        yield view.finding(NIXL_BACKEND_FABRIC, where, (f"UCX_TLS={value} lists no cuda_copy or cuda_ipc: UCX does not recognise GPU buffers "
                               "without them (Dynamo communication guide, 'Core Transport Selection')"), severity=WARNING)
    if fabric == "efa":
        scheme = view.env("UCX_RNDV_SCHEME")
        if scheme is not None and scheme[0].strip() == "get_zcopy":
            yield view.finding(NIXL_BACKEND_FABRIC, scheme[1], ("UCX_RNDV_SCHEME=get_zcopy over EFA crashes with NIXL_ERR_BACKEND on kernels >= 6.8 "
                                       "(Dynamo guide, 'AWS EFA Configuration': use auto and UCX_RNDV_THRESH=8192)"), severity=WARNING)


def _fi_provider(view: ContainerView) -> Iterable[Finding]:
    # awsome-distributed-ai: FI_PROVIDER=efa in every EFA sample and health check (fi_info -p efa);
    # any other provider (tcp, sockets, verbs) moves the traffic off the EFA devices.
    setting = view.env("FI_PROVIDER")
    if view.pool.fabric == "efa" and setting is not None and setting[0].strip().lower() != "efa":
        yield view.finding(EFA_FI_PROVIDER, setting[1], (f"FI_PROVIDER={setting[0]} on EFA pool {view.pool.name}: libfabric then skips the EFA "
                                  "devices; leave it unset or set efa (awsome-distributed-ai EFA cheatsheet)"))


def _rdmav(view: ContainerView) -> Iterable[Finding]:
    # awsome-distributed-ai 1.architectures/efa-cheatsheet.md: RDMAV_FORK_SAFE / RDMAV_* "Do not use".
    if view.pool.fabric != "efa":
        return
    for name, setting in view.settings.env.items():
        if name.startswith("RDMAV_"):
            yield view.finding(EFA_NO_RDMAV, setting.path, (f"{name} is set on EFA pool {view.pool.name}: the EFA cheatsheet says never to set "
                                        "RDMAV_* (libfabric >= 1.13 handles fork safety itself)"))


def _advertiser_owned(view: ContainerView) -> Iterable[Finding]:
    # GPUStack's Device Manager injects NCCL_IB_HCA with the granted devices into every container it
    # grants device.gpustack.ai/rdma* (docs/modules/rdma/operations.md, pkg/deviceplugin/rdma_allocate.go):
    # a hand-set value names other NICs than the ones the container was given.
    granted = [key for key in view.fabric_keys() if key.startswith("device.gpustack.ai/")]
    setting = view.env("NCCL_IB_HCA")
    if granted and setting is not None:
        yield view.finding(ADVERTISER_OWNED_SETTINGS, setting[1], (f"NCCL_IB_HCA is set by hand on a container granted {granted[0]}: the Device Manager "
                                  "sets it to the granted devices, so the hand-set NICs are not the allocated ones"))


def _device_hostpath(view: ContainerView) -> Iterable[Finding]:
    # aws-do-eks PR #63: a /dev/infiniband hostPath exposes every uverbs device (mlx5 beside EFA on
    # B200), libfabric's EFA provider fails (fi_info -61) and NCCL runs on TCP; the advertiser owns those devices.
    mounts = {str(m.get("name")): f"{view.path}.volumeMounts[{i}]"
              for i, m in enumerate(view.container.get("volumeMounts") or []) if isinstance(m, Mapping)}
    for volume in view.pod_spec.get("volumes") or []:
        if not isinstance(volume, Mapping):
            continue
        host_path = str((volume.get("hostPath") or {}).get("path") or "").rstrip("/")
        if (host_path == "/dev/infiniband" or host_path.startswith("/dev/infiniband/")) and str(volume.get("name")) in mounts:
            yield view.finding(ADVERTISER_OWNED_DEVICES, mounts[str(volume.get("name"))], (
                f"mounts hostPath {host_path} on {view.pool.fabric} pool {view.pool.name}: every verbs device of the node "
                "reaches the container, not the ones its advertiser granted (aws-do-eks PR #63: fi_info -61, NCCL on TCP)"))


_NCCL_FOR_NIXL = ("NCCL_IB_HCA", "NCCL_SOCKET_IFNAME")


def _nccl_dead_config(view: ContainerView) -> Iterable[Finding]:
    # vLLM NixlConnector guide (tip under "Transport Configuration"): NCCL variables (NCCL_IB_HCA,
    # NCCL_SOCKET_IFNAME) are not applicable to NixlConnector.
    if view.settings.uses_nixl() is None:
        return
    granted = any(key.startswith("device.gpustack.ai/") for key in view.fabric_keys())
    for name in _NCCL_FOR_NIXL:
        setting = view.env(name)
        if setting is not None and not (granted and name == "NCCL_IB_HCA"):
            yield view.finding(NIXL_NCCL_DEAD_CONFIG, setting[1], (f"{name} does not configure NixlConnector's KV transfer (vLLM NixlConnector guide); "
                                        "set UCX_NET_DEVICES / the NIXL backend instead"), severity=WARNING)


_SIDE_CHANNEL_HOST = "VLLM_NIXL_SIDE_CHANNEL_HOST"
_LOOPBACK = ("localhost", "127.0.0.1", "::1")


def _nixl_side_channel(view: ContainerView) -> Iterable[Finding]:
    # vLLM NixlConnector guide, "Environment Variables": VLLM_NIXL_SIDE_CHANNEL_HOST defaults to
    # "localhost" and must be set when prefiller and decoder are on different machines -- the
    # reason to run on a fabric pool. A valueFrom (status.podIP) counts as set.
    nixl = view.settings.vllm_nixl()
    if nixl is None or _SIDE_CHANNEL_HOST in view.settings.referenced_env:
        return
    setting = view.env(_SIDE_CHANNEL_HOST)
    if setting is None or setting[0].strip() in _LOOPBACK:
        where = setting[1] if setting is not None else nixl.path
        yield view.finding(NIXL_SIDE_CHANNEL_HOST, where, (f"{_SIDE_CHANNEL_HOST} is {'unset (localhost)' if setting is None else setting[0]}: a peer on "
                               "another node cannot reach the NIXL handshake; set it from status.podIP (vLLM NixlConnector guide)"), severity=WARNING)


def _engine_problems(view: ContainerView) -> Iterable[Finding]:
    for where, message in view.settings.problems:
        yield view.finding(ENGINE_FLAGS, where, message)


@dataclass(frozen=True)
class RuleSpec:
    """A rule (its id is printed with each finding) and the check that decides it (docs/workloads.md)."""

    rule: Rule
    check: Check
    every_pool: bool = False
    """Judged on pools without a fabric too (a fabric key requested there is never granted)."""

    @property
    def name(self) -> str:
        return self.rule.id


RULES: tuple[RuleSpec, ...] = (
    RuleSpec(ENGINE_FLAGS, _engine_problems),
    RuleSpec(FABRIC_KEY_ADVERTISED, _unadvertised_keys, every_pool=True),
    RuleSpec(EFA_HUGEPAGES, _efa_hugepages),
    RuleSpec(TRANSFER_HAS_FABRIC_KEY, _transfer_without_fabric_key),
    RuleSpec(NIXL_BACKEND_FABRIC, _nixl_backends),
    RuleSpec(EFA_FI_PROVIDER, _fi_provider),
    RuleSpec(EFA_NO_RDMAV, _rdmav),
    RuleSpec(ADVERTISER_OWNED_SETTINGS, _advertiser_owned),
    RuleSpec(ADVERTISER_OWNED_DEVICES, _device_hostpath),
    RuleSpec(NIXL_NCCL_DEAD_CONFIG, _nccl_dead_config),
    RuleSpec(NIXL_SIDE_CHANNEL_HOST, _nixl_side_channel),
)
