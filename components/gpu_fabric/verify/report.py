"""A :class:`~gpu_fabric.verify.checks.VerifyReport` as a table for people, or as JSON (pure)."""

from __future__ import annotations

import json
from typing import Any, Sequence

from gpu_fabric.verify.checks import FAIL, INCONCLUSIVE, PASS, Check, PoolResult, VerifyReport, show

_MARK = {PASS: "ok", FAIL: "FAIL", INCONCLUSIVE: "INCONCLUSIVE"}


def _cell(check: Check | None) -> str:
    if check is None:
        return "-"
    if check.status == PASS:
        return "as rendered" if isinstance(check.found, (dict, list)) else str(check.found)
    return f"{show(check.found)} (want {show(check.expected)})"


def _table(rows: Sequence[Sequence[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [indent + "  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]


def _pool_lines(pool: PoolResult) -> list[str]:
    expectation = pool.expectation
    lines = [f"pool {expectation.name} ({expectation.fabric}): {_MARK[pool.status]}"]
    for check in pool.checks:
        lines.append(f"  nodes: {check.found}, expected {check.expected}"
                     + (f"; {check.detail}" if check.detail else "") + f"  {_MARK[check.status]}")
    if not pool.nodes:
        return lines
    columns = ["Ready", *(f"allocatable {key}" for key in expectation.allocatable),
               *(f"taint {taint['key']}" for taint in expectation.taints),
               *(f"kubelet {key}" for key in expectation.kubelet)]
    # Resource and kubelet key names are distinct enough alone; a taint keeps its word (its key is often
    # the accelerator's resource name).
    header = ["NODE", *(column.split(" ", 1)[-1] if not column.startswith("taint ") else column for column in columns),
              "RESULT"]
    rows = [header]
    for node in pool.nodes:
        unreadable = node.check("kubelet configz")
        cells = []
        for column in columns:
            cell = node.check(column)
            cells.append("unreadable" if cell is None and unreadable and column.startswith("kubelet ") else _cell(cell))
        rows.append([node.name, *cells, _MARK[node.status]])
    lines.extend(_table(rows))
    return lines


def render_table(report: VerifyReport) -> str:
    """The human report: one table per pool, the objects, the NCCL logs, then every problem in full."""
    lines = [f"stack {report.stack} against {report.target}" if report.target else f"stack {report.stack}", ""]
    for pool in report.pools:
        lines.extend(_pool_lines(pool))
        lines.append("")
    if report.objects:
        lines.append("objects")
        rows = [["OBJECT", "CHECK", "FOUND", "RESULT"]]
        rows.extend([check.subject, check.name, _cell(check), _MARK[check.status]] for check in report.objects)
        lines.extend(_table(rows))
        lines.append("")
    if report.devices:
        lines.append("DRA device alignment")
        rows = [["POD", "CHECK", "RESULT"]]
        rows.extend([check.subject, check.name, _MARK[check.status]] for check in report.devices)
        lines.extend(_table(rows))
        lines.append("")
    if report.logs:
        lines.append("NCCL logs")
        rows = [["LOG", "TRANSPORT", "RESULT"]]
        rows.extend([log.path, log.summary(), _MARK[log.status]] for log in report.logs)
        lines.extend(_table(rows))
        lines.append("")
    checks = report.all_checks()
    problems = report.problems()
    if problems:
        lines.append(f"problems ({len(problems)}):")
        lines.extend(f"  {check.sentence()}" for check in problems)
    failed = sum(1 for check in checks if check.status == FAIL)
    unsure = sum(1 for check in checks if check.status == INCONCLUSIVE)
    lines.append(f"result: {_MARK[report.status]} ({len(checks)} checks, {failed} failed, {unsure} inconclusive)")
    return "\n".join(lines)


def report_data(report: VerifyReport) -> dict[str, Any]:
    """The report as plain data (the ``--json`` document)."""
    return {
        "stack": report.stack,
        "target": report.target,
        "result": report.status,
        "pools": [
            {
                "name": pool.expectation.name,
                "fabric": pool.expectation.fabric,
                "selector": pool.expectation.selector,
                "minNodes": pool.expectation.min_nodes,
                "taints": pool.expectation.taints,
                "result": pool.status,
                "checks": [check.as_dict() for check in pool.checks],
                "nodes": [{"name": node.name, "result": node.status, "checks": [c.as_dict() for c in node.checks]}
                          for node in pool.nodes],
            }
            for pool in report.pools
        ],
        "objects": [check.as_dict() for check in report.objects],
        "deviceAlignment": [check.as_dict() for check in report.devices],
        "ncclLogs": [log.as_dict() for log in report.logs],
        "problems": [check.as_dict() for check in report.problems()],
    }


def render_json(report: VerifyReport) -> str:
    """``report_data`` as indented, key-sorted JSON."""
    return json.dumps(report_data(report), indent=2, sort_keys=True)
