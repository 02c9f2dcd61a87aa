"""NCCL log verdicts: EFA (both aws-ofi-nccl formats, NIC count vs plan), NET/IB, socket fallback, nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.stack_configs import seed_values, stack_values

from gpu_fabric.validation.configuration import load_config
from gpu_fabric.verify.checks import FAIL, INCONCLUSIVE, PASS
from gpu_fabric.verify.nccl import FabricPlan, NcclLogError, judge, judge_files, read_log

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "nccl"
P5_PLAN = FabricPlan.of_pools(load_config(stack_values("aws-efa")).pools)
SEED_PLAN = FabricPlan.of_pools(load_config(seed_values()).pools)


def verdict(name, plan):
    return judge(read_log(LOGS / name), plan, name)


def test_plans_come_from_the_accelerator_pools():
    assert P5_PLAN == FabricPlan(efa_nics=(32,), rdma=False)  # the c6in cache pool has no GPUs, so not 2
    assert SEED_PLAN == FabricPlan(efa_nics=(), rdma=True)


def test_aws_ofi_nccl_1_16_format_with_the_planned_nic_count_passes():
    result = verdict("efa-ofi-1.16.log", P5_PLAN)
    assert (result.transport, result.status, result.nic_counts) == ("efa", PASS, [32])


def test_aws_ofi_nccl_1_7_format_is_read_and_its_nic_count_compared():
    result = verdict("efa-ofi-1.7.log", P5_PLAN)
    assert (result.transport, result.providers, result.nic_counts) == ("efa", ["efa"], [4])
    assert result.status == FAIL
    assert "found 4 NIC(s); the plan gives 32 per node" in result.detail
    assert verdict("efa-ofi-1.7.log", FabricPlan(efa_nics=(4,))).status == PASS


def test_net_ib_on_an_rdma_stack_passes_and_lists_the_devices():
    result = verdict("rdma-net-ib.log", SEED_PLAN)
    assert (result.transport, result.status, result.ib_devices) == ("ib", PASS, ["mlx5_0:1/RoCE", "mlx5_1:1/RoCE"])


def test_a_socket_fallback_fails_even_though_the_job_finished():
    result = verdict("socket-fallback.log", SEED_PLAN)
    assert (result.transport, result.status) == ("socket", FAIL)
    assert result.socket_lines == [4, 5, 6]
    assert "fell back to TCP (line 4)" in result.detail


def test_one_rank_on_sockets_fails_a_log_that_is_otherwise_efa():
    text = (LOGS / "efa-ofi-1.16.log").read_text() + "worker-3:9:9 [0] NCCL INFO Using network Socket\n"
    assert judge(text, P5_PLAN).status == FAIL


def test_libfabric_over_tcp_is_not_the_fabric():
    text = "w:1:1 [0] NCCL INFO NET/OFI Selected provider is tcp, fabric is 10.0.0.0/16 (found 1 nics)\n"
    result = judge(text, P5_PLAN)
    assert (result.transport, result.status) == ("socket", FAIL)
    assert "selected provider tcp" in result.detail


def test_a_log_without_transport_lines_is_inconclusive_not_a_pass():
    result = verdict("no-transport.log", SEED_PLAN)
    assert (result.transport, result.status) == ("none", INCONCLUSIVE)
    assert "NCCL_DEBUG=INFO" in result.detail
    info_only = judge("h:1:1 [0] NCCL INFO NCCL version 2.21.5\n", SEED_PLAN)
    assert info_only.status == INCONCLUSIVE and "neither" in info_only.detail


def test_the_transport_must_be_the_stacks_fabric():
    assert verdict("rdma-net-ib.log", P5_PLAN).status == FAIL
    assert verdict("efa-ofi-1.16.log", SEED_PLAN).status == FAIL


def test_provider_lines_are_matched_case_insensitively():
    text = "x NCCL INFO net/ofi selected PROVIDER is EFA (found 32 NICs)\n"
    assert judge(text, P5_PLAN).status == PASS


def test_unreadable_and_binary_logs_are_refused(tmp_path):
    with pytest.raises(NcclLogError, match="No such file"):
        judge_files([tmp_path / "missing.log"], SEED_PLAN)
    (tmp_path / "core").write_bytes(b"\x7fELF\x00\x01")
    with pytest.raises(NcclLogError, match="NUL bytes"):
        judge_files([tmp_path / "core"], SEED_PLAN)
    (tmp_path / "latin").write_bytes("NCCL INFO caf\xe9".encode("latin-1"))
    with pytest.raises(NcclLogError, match="not UTF-8"):
        judge_files([tmp_path / "latin"], SEED_PLAN)
