"""``gpu-fabric verify --stack NAME``: does the live cluster hold what the stack declares?

The stack is validated and rendered offline exactly as ``gpu-fabric render`` does; the pools and
the registered manifests become expectations (``gpu_fabric.verify.expectations``); the cluster is
read through the Kubernetes API (``gpu_fabric.verify.collect``) and compared
(``gpu_fabric.verify.checks``). Exit 0 when every check holds, 1 when any fails or cannot
conclude, 2 when the stack is invalid, the cluster unreachable or refusing, a CRD missing, or a
recording or NCCL log malformed -- with a one-line reason, never a traceback.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any, Optional

from gpu_fabric.cli.conventions import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, add_command, folder_argument
from gpu_fabric.verify.api import DEFAULT_MAX_BODY_BYTES, DEFAULT_REQUEST_TIMEOUT, DEFAULT_TOTAL_TIMEOUT  # stdlib only


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``verify`` sub-command."""
    parser = add_command(
        subparsers, "verify", summary="check a live cluster against a stack (nodes, allocatable, kubelet topology, objects)",
        description="Compare a live cluster with the stack: each pool's nodes (count, Ready, allocatable "
                    "accelerators and fabric endpoints, kubelet TopologyManager/CPU manager settings) and every "
                    "object the stack registers. Exit 0 all hold, 1 a check fails, 2 cannot verify. "
                    "--quiet prints only the problems and the result line.",
        examples=["gpu-fabric verify --stack seed-rdma", "gpu-fabric verify --stack aws-efa --nccl-log nccl-tests.log",
                  "gpu-fabric verify --stack seed-rdma --record state/",
                  "gpu-fabric verify --stack seed-rdma --replay state/ --quiet"])
    parser.add_argument("--stack", required=True, metavar="NAME", help="stack name (Pulumi.NAME.yaml in the project's stackConfigDir)")
    parser.add_argument("--project", type=Path, default=Path("."), help="project folder holding Pulumi.yaml (default .)")
    parser.add_argument("--kubeconfig", metavar="FILE",
                        help="kubeconfig to use instead of the stack's target (default: the stack's "
                             "kubernetes setting, else $KUBECONFIG or ~/.kube/config)")
    parser.add_argument("--context", metavar="NAME", help="kubeconfig context (default: the stack's, else current)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--nccl-log", action="append", type=Path, default=[], dest="nccl_logs", metavar="FILE",
                        help="NCCL_DEBUG=INFO log of a test run: did it use EFA / RDMA or fall back to sockets? repeatable")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--record", type=folder_argument, metavar="DIR", help="also save the raw API responses to DIR")
    source.add_argument("--replay", type=folder_argument, metavar="DIR", help="read the API responses from DIR instead of a cluster")
    parser.add_argument("--workers", type=int, default=32, metavar="N", help="concurrent kubelet configz reads (default 32)")
    parser.add_argument("--request-timeout", type=float, default=DEFAULT_REQUEST_TIMEOUT, metavar="SECONDS",
                        help="longest one API request may take, connecting to last byte "
                             f"(default {DEFAULT_REQUEST_TIMEOUT:g})")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TOTAL_TIMEOUT, metavar="SECONDS",
                        help=f"longest the whole run may spend reading the cluster (default {DEFAULT_TOTAL_TIMEOUT:g})")
    parser.add_argument("--max-body-bytes", type=int, default=DEFAULT_MAX_BODY_BYTES, metavar="N",
                        help=f"largest API answer read (default {DEFAULT_MAX_BODY_BYTES // 2**20} MiB)")
    parser.set_defaults(func=run)


def _refuse(message: str) -> int:
    print(f"gpu-fabric verify: {message}", file=sys.stderr)
    return EXIT_USAGE


def load_expectations(stack: str, project: Path) -> Optional[tuple[Any, Any, dict[str, Any]]]:
    """Render and validate the stack; return (expectations, validated config, raw stack values) or ``None``."""
    from gpu_fabric.cli.render import render_or_report
    from gpu_fabric.program.render import load_stack_config
    from gpu_fabric.config.fabric import CONFIG_NAMESPACE
    from gpu_fabric.config.secrets import namespace_values, offline_values
    from gpu_fabric.validation.configuration import load_config
    from gpu_fabric.verify.expectations import stack_expectations

    result = render_or_report(stack, project)  # the whole configuration, validated as `pulumi up` would
    if isinstance(result, int):  # reported; a stack that does not render cannot be verified (exit 2)
        return None
    values = offline_values(load_stack_config(project, stack))  # secure: values as "[secret]", as render has them
    config = load_config(namespace_values(values, CONFIG_NAMESPACE))
    return stack_expectations(stack, config, result.kubernetes_objects()), config, values


def run(args: argparse.Namespace) -> int:
    """Validate, read the cluster (or a recording), compare, print; exit 0, 1 or 2."""
    from gpu_fabric.verify.api import ClusterUnavailable, Deadline, Limits, RecordingError, mask_credentials
    from gpu_fabric.verify.recording import RecordingTransport, ReplayTransport
    from gpu_fabric.verify.checks import PASS, verify
    from gpu_fabric.verify.collect import collect
    from gpu_fabric.verify.nccl import FabricPlan, NcclLogError, judge_files
    from gpu_fabric.verify.report import render_json

    # urllib3's retry warnings and the client's log lines would break the one-line reason on stderr.
    for noisy in ("urllib3", "kubernetes"):
        logging.getLogger(noisy).setLevel(logging.CRITICAL)
    if args.workers < 1:
        return _refuse("--workers must be at least 1")
    for flag, value in (("--request-timeout", args.request_timeout), ("--timeout", args.timeout)):
        if not value > 0 or value == float("inf"):
            return _refuse(f"{flag} must be a positive number of seconds, not {value:g}")
    if args.max_body_bytes < 1024:
        return _refuse("--max-body-bytes must be at least 1024")
    limits = Limits(request_timeout=args.request_timeout, total_timeout=args.timeout,
                    max_body_bytes=args.max_body_bytes)
    loaded = load_expectations(args.stack, args.project)
    if loaded is None:
        return EXIT_USAGE
    expectations, config, values = loaded
    try:
        verdicts = judge_files(args.nccl_logs, FabricPlan.of_pools(config.pools))
    except NcclLogError as error:
        return _refuse(str(error))

    transport: Any = None
    try:
        if args.replay is not None:
            transport = ReplayTransport(args.replay, limits)
            target = f"recording {args.replay} of {transport.host}"
        else:
            from gpu_fabric.verify.target import connect

            transport, target = connect(config, values, kubeconfig=args.kubeconfig, context=args.context,
                                        workers=args.workers, limits=limits, deadline=Deadline(args.timeout))
            if args.record is not None:
                transport = RecordingTransport(transport, args.record)
        snapshot = collect(transport, expectations, workers=args.workers)
        if isinstance(transport, RecordingTransport):
            transport.save()
    except ClusterUnavailable as error:
        # What was read up to the refusal (a missing CRD's 404, a 401) is worth attaching to an issue too.
        if isinstance(transport, RecordingTransport) and transport.recorded:
            try:
                transport.save()
            except RecordingError as save_error:
                return _refuse(f"{error}; {save_error}")
        return _refuse(str(error))
    except RecordingError as error:
        return _refuse(str(error))
    except Exception as error:  # noqa: BLE001 - a client or plugin failure is a reason to print, not a traceback
        # collect() names the request, object and server of every failure it sees; this is the rest
        # (connecting, saving), said with the server the run was reading.
        lines = str(error).strip().splitlines()
        server = getattr(transport, "host", None) or "the cluster"
        return _refuse(f"reading the cluster at {server} failed: {type(error).__name__}"
                       + (f": {mask_credentials(lines[0])[:200]}" if lines else ""))
    finally:
        if isinstance(transport, ReplayTransport):
            transport.close()

    report = verify(expectations, snapshot, target)
    report.logs.extend(verdicts)
    print(render_json(report) if args.json else _table_text(report, quiet=getattr(args, "quiet", False)))
    return EXIT_OK if report.status == PASS else EXIT_FINDINGS


def _table_text(report: Any, *, quiet: bool) -> str:
    """The human report; quiet: its first line, the problems and the result line (no per-pool tables)."""
    from gpu_fabric.verify.report import render_table

    lines = render_table(report).splitlines()
    if not quiet:
        return "\n".join(lines)
    start = next((i for i, line in enumerate(lines) if line.startswith("problems (")), len(lines) - 1)
    return "\n".join([lines[0], *lines[start:]])
