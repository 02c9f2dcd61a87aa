"""The ``gpu-fabric`` command line: ``render``, ``lint``, ``check``, ``efa-info``, ``diff`` and ``verify``.

Each sub-command lives in its own module, which exposes ``register(subparsers)``; the module is
imported only when the command line is parsed, so ``import gpu_fabric`` stays cheap.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Sequence

# Sub-command modules, in the order ``--help`` lists them.
COMMAND_MODULES: tuple[str, ...] = (
    "gpu_fabric.cli.render",
    "gpu_fabric.cli.lint",
    "gpu_fabric.cli.check",
    "gpu_fabric.cli.efa_info",
    "gpu_fabric.cli.diff",
    "gpu_fabric.cli.verify",
)

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2


def version_text() -> str:
    """``gpu-fabric <version>`` and every GPUStack operator line it mirrors, with the source of each."""
    from gpu_fabric import __version__
    from gpu_fabric.gpustack.profiles import DEFAULT_GPUSTACK_OPERATOR, PROFILES

    lines = [f"gpu-fabric {__version__}", f"mirrors GPUStack operator (gpu-fabric:gpustackOperator, default {DEFAULT_GPUSTACK_OPERATOR}):"]
    lines += [f"  {profile.describe()}" for profile in PROFILES]
    return "\n".join(lines)


class _PrintVersion(argparse.Action):
    # argparse's own "version" action re-wraps the text; the commit ids must stay on one line.
    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> None:
        print(version_text())
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    """Return the top-level parser with every sub-command registered."""
    parser = argparse.ArgumentParser(
        prog="gpu-fabric",
        description="Render, lint and check GPU fabrics (EFA/RDMA, Kueue, GPUStack, Mooncake) offline.",
    )
    parser.add_argument("--version", action=_PrintVersion, nargs=0,
                        help="print gpu-fabric's version and the GPUStack operator version it mirrors")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``gpu-fabric`` console script; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code = int(args.func(args))
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        # The reader went away (``gpu-fabric check | head``): stop quietly. Python would otherwise
        # print a traceback, and again at exit when it flushes stdout, so point stdout at /dev/null
        # (the recipe of Python's signal module docs, "Note on SIGPIPE").
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_FINDINGS
    except KeyboardInterrupt:
        print("gpu-fabric: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover - exercised through the console script
    sys.exit(main())
