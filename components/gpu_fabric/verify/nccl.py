"""Did an NCCL run move its data over the fabric? Read ``NCCL_DEBUG=INFO`` logs (pure).

What the lines mean (aws-ofi-nccl and NCCL's own logging, https://github.com/aws/aws-ofi-nccl and
https://github.com/NVIDIA/nccl; the EKS User Guide's EFA page, ``latest/ug/ml/node-efa.adoc`` in
awsdocs/amazon-eks-user-guide, runs the NCCL test these lines come from):

* EFA through aws-ofi-nccl: ``NET/OFI Selected Provider is efa (found 4 nics)`` (1.7 and older) or
  ``NET/OFI Selected provider is efa, fabric is efa-direct (found 32 nics)`` (1.16); N is the
  number of EFA devices the plugin drives, compared with the pool's ``interfacesPerNode``.
  Any other provider (``tcp``, ``sockets``) is libfabric over TCP: not the fabric.
* RDMA (InfiniBand or RoCE) through NCCL's verbs transport: ``NET/IB : Using [0]mlx5_0:1/RoCE ...``,
  ``Using network IB``, channels ``via NET/IB/...``.
* Sockets: ``NET/Socket``, ``Using network Socket``, ``Using internal Network Socket``. A job that
  finished over sockets still failed the fabric, so one such line (from any rank) is a failure.
* Neither: inconclusive (``NCCL_DEBUG`` was not ``INFO``, or the log is of something else), not a pass.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from gpu_fabric.config.pool import PoolSpec
from gpu_fabric.verify.checks import FAIL, INCONCLUSIVE, PASS, Check, Status

# aws/aws-ofi-nccl src/nccl_ofi_net.cpp, nccl_net_ofi_query_provider_capabilities():
#   NCCL_OFI_INFO(..., "Selected provider is %s, fabric is %s (found %d nics)", prov_name, fabric name, count)
# and the C plugin of 1.7 and older (src/nccl_ofi_net.c, init): "Selected Provider is %s (found %d nics)";
# NCCL_OFI_INFO prefixes "NET/OFI ". Some older releases print the provider without a count.
_OFI_PROVIDER = re.compile(r"(?:NET/OFI\s+)?Selected\s+provider\s+is\s+(?P<provider>[A-Za-z0-9_.-]+)", re.IGNORECASE)
_OFI_NICS = re.compile(r"\(found\s+(?P<nics>\d+)\s+nics?\)", re.IGNORECASE)
# NVIDIA/nccl src/transport/net_ib.cc, ncclIbInit(): INFO(..., "NET/IB : Using%s %s; OOB %s:%s", line, ...)
# where line lists " [%d]%s:%d/%s" (index, device, port, IB or RoCE) per device.
_IB_DEVICES = re.compile(r"NET/IB\s*:\s*Using\s+(?P<devices>(?:\[\d+\]\S+\s*)+)", re.IGNORECASE)
_IB_DEVICE = re.compile(r"\[\d+\](\S+)")
_IB_USE = re.compile(r"Using\s+network\s+IB\b|via\s+NET/IB\b", re.IGNORECASE)
_SOCKET = re.compile(r"NET/Socket\b|Using\s+network\s+Socket\b|Using\s+internal\s+Network\s+Socket\b", re.IGNORECASE)
_NCCL_LINE = re.compile(r"\bNCCL\s+(INFO|WARN)\b")


class NcclLogError(Exception):
    """The log file cannot be read or is not text."""


@dataclass(frozen=True)
class FabricPlan:
    """What the stack plans for NCCL traffic: the EFA NIC counts and whether RDMA pools exist."""

    efa_nics: tuple[int, ...] = ()
    rdma: bool = False

    @classmethod
    def of_pools(cls, pools: Iterable[PoolSpec]) -> "FabricPlan":
        """From the stack's pools: NCCL runs on accelerator pools, so only those count when there are any."""
        pools = list(pools)
        accelerated = [pool for pool in pools if pool.accelerators_per_node] or pools
        efa = tuple(sorted({pool.interfaces_per_node for pool in accelerated if pool.fabric == "efa"}))
        return cls(efa, any(pool.fabric == "rdma" for pool in accelerated))


@dataclass
class LogVerdict:
    """What one log shows, and whether that is the fabric the stack planned."""

    path: str
    transport: str
    """``efa``, ``ib``, ``socket`` or ``none``."""
    status: Status
    detail: str
    expected: str
    providers: list[str] = field(default_factory=list)
    nic_counts: list[int] = field(default_factory=list)
    ib_devices: list[str] = field(default_factory=list)
    socket_lines: list[int] = field(default_factory=list)

    def summary(self) -> str:
        """One phrase for the table."""
        if self.transport == "efa":
            return f"EFA, {'/'.join(map(str, self.nic_counts)) or '?'} NICs"
        if self.transport == "ib":
            return f"NET/IB, {len(self.ib_devices)} device(s)" if self.ib_devices else "NET/IB"
        if self.transport == "socket":
            return "sockets (TCP fallback)"
        return "no transport lines"

    def check(self) -> Check:
        """The verdict as a report check."""
        return Check(f"NCCL log {self.path}", "transport", self.expected, self.summary(), self.status, self.detail)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"path": self.path, "transport": self.transport, "result": self.status, "expected": self.expected,
                "detail": self.detail, "providers": self.providers, "nicCounts": self.nic_counts,
                "ibDevices": self.ib_devices, "socketLines": self.socket_lines}


def read_log(path: Path) -> str:
    """The log's text; raise :class:`NcclLogError` when it is unreadable or binary."""
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise NcclLogError(f"NCCL log {path}: {error.strerror or error}") from None
    if b"\x00" in data:
        raise NcclLogError(f"NCCL log {path}: not a text log (it holds NUL bytes)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise NcclLogError(f"NCCL log {path}: not UTF-8 text (byte {error.start})") from None


def _expected_text(plan: FabricPlan) -> str:
    parts = []
    if plan.efa_nics:
        parts.append(f"EFA with {' or '.join(map(str, plan.efa_nics))} NICs")
    if plan.rdma:
        parts.append("NET/IB (RDMA)")
    return " or ".join(parts) or "a fabric transport"


def judge(text: str, plan: FabricPlan, path: str = "<log>") -> LogVerdict:
    """Classify one log and compare it with the plan."""
    providers: list[str] = []
    nic_counts: set[int] = set()
    ib_devices: list[str] = []
    ib_used = False
    socket_lines: list[int] = []
    nccl_lines = 0
    for number, line in enumerate(text.splitlines(), start=1):
        if _NCCL_LINE.search(line):
            nccl_lines += 1
        provider = _OFI_PROVIDER.search(line)
        if provider:
            name = provider.group("provider").lower()
            if name not in providers:
                providers.append(name)
            nics = _OFI_NICS.search(line, provider.end())
            if nics:
                nic_counts.add(int(nics.group("nics")))
        devices = _IB_DEVICES.search(line)
        if devices:
            ib_used = True
            for device in _IB_DEVICE.findall(devices.group("devices")):
                if device not in ib_devices:
                    ib_devices.append(device)
        if _IB_USE.search(line):
            ib_used = True
        if _SOCKET.search(line):
            socket_lines.append(number)

    expected = _expected_text(plan)
    counts = sorted(nic_counts)
    non_efa = [name for name in providers if name != "efa"]

    def verdict(transport: str, status: Status, detail: str) -> LogVerdict:
        return LogVerdict(path, transport, status, detail, expected, providers, counts, ib_devices, socket_lines)

    if socket_lines or non_efa:
        where = f"line {socket_lines[0]}" if socket_lines else f"aws-ofi-nccl selected provider {non_efa[0]}"
        return verdict("socket", FAIL, f"NCCL fell back to TCP ({where}); a job that finished this way did not use the fabric")
    if "efa" in providers:
        if not plan.efa_nics:
            return verdict("efa", FAIL, "the log ran over EFA but the stack plans no EFA pool with accelerators")
        if not counts:
            return verdict("efa", INCONCLUSIVE, "aws-ofi-nccl selected efa but printed no NIC count")
        wrong = [count for count in counts if count not in plan.efa_nics]
        if wrong:
            return verdict("efa", FAIL, f"aws-ofi-nccl found {', '.join(map(str, wrong))} NIC(s); "
                                         f"the plan gives {' or '.join(map(str, plan.efa_nics))} per node")
        return verdict("efa", PASS, f"aws-ofi-nccl selected efa with {', '.join(map(str, counts))} NIC(s)")
    if ib_used:
        if not plan.rdma:
            return verdict("ib", FAIL, "the log ran over NET/IB but the stack plans no RDMA pool with accelerators")
        shown = f" over {', '.join(ib_devices)}" if ib_devices else ""
        return verdict("ib", PASS, f"NCCL used its verbs transport{shown}")
    reason = ("no transport line: neither aws-ofi-nccl's provider, NET/IB nor NET/Socket"
              if nccl_lines else "no NCCL INFO lines at all (run with NCCL_DEBUG=INFO)")
    return verdict("none", INCONCLUSIVE, reason)


def judge_files(paths: Sequence[Path], plan: FabricPlan) -> list[LogVerdict]:
    """Read and judge each log; the first unreadable one raises :class:`NcclLogError`."""
    return [judge(read_log(path), plan, str(path)) for path in paths]

