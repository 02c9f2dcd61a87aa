"""``gpu-fabric diff``: what a change to a stack will do, offline, in Pulumi's vocabulary.

    gpu-fabric diff --base origin/main --stack aws-efa [--head REF] [--json | --markdown] [--detailed-exitcode]
    gpu-fabric diff --from-preview-json preview.json --markdown [--stack NAME]

The first form renders the stack at ``--base`` and at ``--head`` (default: the working tree)
with the installed gpu-fabric and compares them (``gpu_fabric.diff``). The second renders a real
``pulumi preview --json`` digest with the same Markdown layout. Exit 0 (with or without changes;
2 with ``--detailed-exitcode`` when there are changes); bad input exits 2 with one line naming
the ref, stack or file.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
import threading
from pathlib import Path
from typing import Iterator

from gpu_fabric.cli.conventions import EXIT_OK, EXIT_USAGE, add_command

EXIT_CHANGES = 2
EXIT_TERMINATED = 128 + signal.SIGTERM
"""A shell's status for a process ended by SIGTERM; kept when the diff stops on one after cleaning up."""


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the diff is so that it unwinds as from Ctrl-C.

    A KeyboardInterrupt because asyncio (the render's event loop) re-raises that at once, where any
    other exception raised inside a task would be kept in the task instead of unwinding the diff.
    """


@contextlib.contextmanager
def _signals_unwind(received: list[int]) -> Iterator[None]:
    """SIGTERM and SIGINT unwind the command (``with`` blocks and ``finally`` run) instead of ending the process
    where it stands: the default action would leave the commit's extracted folder in $TMPDIR.

    Each signal is also appended to ``received``: a KeyboardInterrupt raised where Python cannot propagate it
    (a callback run from C, such as a weakref finaliser or a ``__del__``, prints "Exception ignored in" and goes
    on) is lost, and the diff would then finish and exit 0 as if never interrupted. The caller reads
    ``received`` after the diff returns and stops as the signal asked.
    """
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set handlers; a caller in another thread keeps its own
        return

    def unwind(signum: int, frame: object) -> None:
        received.append(signum)
        raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()

    previous = {signum: signal.signal(signum, unwind) for signum in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            if handler is not None:  # None: a handler set outside Python, which cannot be put back
                signal.signal(signum, handler)


def _terminated() -> int:
    print("gpu-fabric diff: terminated", file=sys.stderr)
    return EXIT_TERMINATED


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``diff`` sub-command."""
    parser = add_command(
        subparsers, "diff", summary="preview what a change to a stack creates, updates, replaces or deletes (offline)",
        description="Render the stack at --base and at --head (default: the working tree) and compare them "
                    "resource by resource in Pulumi's vocabulary, or render a real `pulumi preview --json`. "
                    "A stack only the head has is all creates; one only the base has, all deletes. Exit 0 "
                    "(2 with --detailed-exitcode when anything changes); bad input exits 2 naming the ref, "
                    "stack or file. --quiet changes nothing here: the digest is the output.",
        examples=["gpu-fabric diff --base origin/main --stack aws-efa --markdown",
                  "gpu-fabric diff --base origin/main --stack aws-efa --detailed-exitcode",
                  "gpu-fabric diff --from-preview-json preview.json --markdown"])
    parser.add_argument("--base", metavar="REF", help="git ref of the base (e.g. origin/main)")
    parser.add_argument("--head", metavar="REF", help="git ref of the head (default: the working tree)")
    parser.add_argument("--stack", metavar="NAME", help="stack name (Pulumi.NAME.yaml in the project's stackConfigDir)")
    parser.add_argument("--project", type=Path, default=Path("."), help="project folder holding Pulumi.yaml (default .)")
    parser.add_argument("--from-preview-json", type=Path, metavar="FILE",
                        help="render a `pulumi preview --json` digest instead of comparing refs")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print the digest as JSON (default)")
    output.add_argument("--markdown", action="store_true", help="print one pull-request comment in Markdown")
    parser.add_argument("--detailed-exitcode", action="store_true", help="exit 2 when there are changes")
    parser.set_defaults(func=run)


def _fail(message: str) -> int:
    print(f"gpu-fabric diff: {message}", file=sys.stderr)
    return EXIT_USAGE


def run(args: argparse.Namespace) -> int:
    """Build the digest, print it as JSON or Markdown, return the exit code."""
    from gpu_fabric.diff.source import DiffInputError

    received: list[int] = []
    try:
        with _signals_unwind(received):
            digest = _digest(args)
    except DiffInputError as error:
        return _fail(str(error))
    except Terminated:
        return _terminated()
    if signal.SIGTERM in received:
        return _terminated()  # the Terminated raised for it was swallowed where it landed (see _signals_unwind)
    if received:
        raise KeyboardInterrupt  # likewise: the command's own handler reports it (cli/__init__.py)
    if args.markdown:
        from gpu_fabric.diff.markdown import render_markdown

        sys.stdout.write(render_markdown(digest))
    else:
        sys.stdout.write(json.dumps(digest.to_json(), indent=2, sort_keys=False) + "\n")
    return EXIT_CHANGES if args.detailed_exitcode and digest.has_changes else EXIT_OK


def _digest(args: argparse.Namespace):
    from gpu_fabric.diff.source import DiffInputError

    if args.from_preview_json is not None:
        if args.base or args.head:
            raise DiffInputError("--from-preview-json renders a preview file; it takes no --base or --head")
        from gpu_fabric.diff.preview_json import load_preview_digest

        return load_preview_digest(args.from_preview_json, stack=args.stack)
    if not args.base:
        raise DiffInputError("--base REF is required (or --from-preview-json FILE)")
    if not args.stack:
        raise DiffInputError("--stack NAME is required")
    from gpu_fabric.diff.compare import compare
    from gpu_fabric.diff.source import render_base_and_head

    base, base_label, head, head_label = render_base_and_head(args.project, args.stack, args.base, args.head)
    return compare(base.resources, head.resources, stack=args.stack, base_label=base_label, head_label=head_label)
