"""The ``gpu-fabric`` command line: ``render``, ``lint``, ``check``, ``efa-info``, ``diff``, ``verify`` and ``schema``.

Each sub-command lives in its own module, which exposes ``register(subparsers)``; the module is
imported only when the command line is parsed, so ``import gpu_fabric`` stays cheap. What every
command shares -- exit codes, ``--quiet``, the help layout with examples -- is
:mod:`gpu_fabric.cli.conventions`.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Sequence

from gpu_fabric.cli.conventions import EXIT_CODES_TEXT, EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, ArgumentParser, HelpFormatter

__all__ = ["EXIT_FINDINGS", "EXIT_OK", "EXIT_USAGE", "build_parser", "console_main", "main", "version_text"]

# Sub-command modules, in the order ``--help`` lists them.
COMMAND_MODULES: tuple[str, ...] = (
    "gpu_fabric.cli.render",
    "gpu_fabric.cli.lint",
    "gpu_fabric.cli.check",
    "gpu_fabric.cli.efa_info",
    "gpu_fabric.cli.diff",
    "gpu_fabric.cli.verify",
    "gpu_fabric.cli.schema",
)

RUNS_STACK_PROGRAMS = frozenset({"render", "check", "diff", "verify"})
"""The commands that render stack programs, each in a forked child (:mod:`gpu_fabric.program.completion`)."""


def version_text() -> str:
    """``gpu-fabric <version>``, every GPUStack operator line it mirrors with the source of each, and when
    and where the bundled EC2 table was generated."""
    from gpu_fabric import __version__
    from gpu_fabric.aws.catalog.table import bundled_table_origin
    from gpu_fabric.gpustack.profiles import DEFAULT_GPUSTACK_OPERATOR, PROFILES

    from gpu_fabric.gpustack.operator_pin import OPERATOR_COMMIT, SCHEMA_COMMIT
    from gpu_fabric.gpustack.profiles import newest_line

    pin = f"github.com/gpustack/gpustack-operator {OPERATOR_COMMIT[:8]} (CRD schemas at {SCHEMA_COMMIT[:8]})"
    lines = [f"gpu-fabric {__version__}", f"mirrors GPUStack operator (gpu-fabric:gpustackOperator, default {DEFAULT_GPUSTACK_OPERATOR}):"]
    for profile in PROFILES:
        from_code, from_docs = profile.provenance(pin)
        lines += [f"  {profile.describe()}", f"    from operator code: {from_code}", f"    from docs: {from_docs}"]
    newest = newest_line()
    lines.append(f"  a newer release: refused, unless written <version>+as-{newest.line} (the {newest.line} line's rules, "
                 "unverified, warned on every render)")
    lines.append(f"bundled EC2 table {bundled_table_origin().describe()}")
    return "\n".join(lines)


class _PrintVersion(argparse.Action):
    # argparse's own "version" action re-wraps the text; the commit ids must stay on one line.
    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> None:
        print(version_text())
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    """Return the top-level parser with every sub-command registered."""
    parser = ArgumentParser(
        prog="gpu-fabric",
        description="Render, lint and check GPU fabrics (EFA/RDMA, Kueue, GPUStack, Mooncake) offline.",
        epilog="examples:\n  gpu-fabric render && gpu-fabric check\n  gpu-fabric COMMAND --help\n\n" + EXIT_CODES_TEXT,
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action=_PrintVersion, nargs=0,
                        help="print gpu-fabric's version and the GPUStack operator version it mirrors")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=ArgumentParser)
    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(subparsers)
    return parser


EXIT_INTERRUPTED = 130
"""A shell's status for a command ended by Ctrl-C (128 + SIGINT), after it cleaned up and said so."""


def console_main() -> int:
    """Entry point of the ``gpu-fabric`` console script and ``python -m gpu_fabric.cli``: :func:`main`, then exit.

    Once the command has returned, what it allocated is left out of the interpreter's exit-time
    collections (:func:`gpu_fabric.interpreter.collector.no_collection_at_exit`): a third of a render's CPU
    time went to walking the SDKs' objects as the process ended. The heap is frozen before the paused
    collector is back, or its first pass would walk the whole heap once more (4% of a render). Only the
    process's own entry point does this; :func:`main` called in-process leaves the collector as it found it.
    """
    from gpu_fabric.interpreter.collector import collector_paused, no_collection_at_exit

    with collector_paused():
        code = main()
        no_collection_at_exit()
    if code == EXIT_INTERRUPTED:
        # Reported once, and cleaned up as the command unwound: the interpreter's own exit is left out, where a
        # Ctrl-C still pending, or a second one, would end the process with a traceback and the status of a
        # process killed by SIGINT instead of 130.
        import signal

        signal.signal(signal.SIGINT, signal.SIG_IGN)
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``gpu-fabric`` command line (``sys.argv[1:]`` by default); returns the process exit code.

    The cyclic garbage collector is paused while the command runs (:mod:`gpu_fabric.interpreter.collector`:
    a command keeps what it allocates to the end, and the collector's passes were up to a seventh of a
    render's time) and restored as it was on return.
    """
    from gpu_fabric.interpreter.collector import collector_paused

    with collector_paused():
        return _run(argv)


def _run(argv: Sequence[str] | None) -> int:
    from gpu_fabric.cli.output import OutputError, escaped_streams

    with escaped_streams():
        try:
            return _run_command(argv)
        except OutputError as error:
            # A full disk (``> /dev/full``) or a closed descriptor (``>&-``): one line, no traceback, and stdout
            # pointed at /dev/null so that the interpreter's own flush at exit cannot fail a second time.
            _point_at_devnull(sys.__stdout__)
            try:
                print(f"gpu-fabric: {error}", file=sys.stderr)
                sys.stderr.flush()
            except OutputError:
                pass
            return EXIT_USAGE


def _point_at_devnull(stream: object) -> None:
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):
        pass  # no descriptor to repoint (closed at start, or a test's capture)


def _run_command(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    try:
        try:
            args = parser.parse_args(argv)
        finally:
            # Parsing prints too (``--version | head -1``, ``--help``) and then exits: flushed here, a
            # reader that went away is the BrokenPipeError below, not an error at interpreter exit.
            sys.stdout.flush()
        if getattr(args, "command", None) in RUNS_STACK_PROGRAMS:
            from gpu_fabric.program.completion import grpc_without_fork_handlers

            grpc_without_fork_handlers()  # before the command imports gRPC: its renders fork (see there)
        code = int(args.func(args))
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        # The reader went away (``gpu-fabric check | head``): stop quietly. Python would otherwise
        # print a traceback, and again at exit when it flushes stdout, so point stdout at /dev/null
        # (the recipe of Python's signal module docs, "Note on SIGPIPE").
        _point_at_devnull(sys.__stdout__)
        return EXIT_FINDINGS
    except KeyboardInterrupt:
        print("gpu-fabric: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":  # pragma: no cover - exercised through the console script
    sys.exit(console_main())
