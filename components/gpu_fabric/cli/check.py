"""``gpu-fabric check [--stack NAME ...]``: the policy pack over an offline render of the stack.

The stack program runs under Pulumi's mock runtime (``gpu_fabric.program.render``), then every policy of
``gpu_fabric.policies.ALL_POLICIES`` runs as the analyzer would run it: one
``ResourceValidationArgs`` per resource for resource policies, one ``StackValidationArgs`` with
every resource (parents linked) for stack policies (``gpu_fabric.policies.runner``). Exit 1 on
any mandatory violation -- also one the stack refuses already at render (a configuration only
mandatory policies refuse) -- 0 otherwise, 2 on a configuration it cannot use.

``--preview`` renders as ``pulumi preview`` of a new stack does (ids and computed names unknown)
and drives the pack the way the engine does: served over the analyzer gRPC protocol, each unknown
sent as the engine's sentinel string (``gpu_fabric.policies.over_grpc``). A policy that raises
there fails the call as it would fail a real preview: a mandatory finding naming the call.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path
from typing import Sequence

from gpu_fabric.cli.conventions import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, add_command


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``check`` sub-command."""
    parser = add_command(
        subparsers, "check", summary="run the policy pack over a stack rendered offline",
        description="Render each stack offline, then run every policy of the pack over it as the analyzer "
                    "does at pulumi preview. Exit 1 on a mandatory violation (also one the stack refuses "
                    "already at render), 0 otherwise, 2 when the stack cannot be rendered.",
        examples=["gpu-fabric check", "gpu-fabric check --stack aws-efa --preview",
                  "gpu-fabric check --list-policies", "gpu-fabric check --quiet"])
    parser.add_argument("--list-policies", action="store_true",
                        help="list the pack's policies (name, enforcement level, what each refuses) and the rules "
                             "each reports, and exit")
    parser.add_argument("--stack", action="append", dest="stacks", metavar="NAME",
                        help="stack name (Pulumi.NAME.yaml in the project's stackConfigDir); repeatable; default: every stack there")
    parser.add_argument("--project", type=Path, default=Path("."), help="project folder holding Pulumi.yaml (default .)")
    parser.add_argument("--preview", action="store_true",
                        help="render as `pulumi preview` of a new stack does (ids and names of resources not yet "
                             "created are unknown) and run the pack over gRPC as the engine does")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Render, run the policies, print the grouped report; exit 1 on a mandatory violation."""
    from gpu_fabric.cli.render import render_or_report, selected_stacks
    from gpu_fabric import __version__
    from gpu_fabric.policies import ALL_POLICIES, pack_display_name
    from gpu_fabric.policies.catalogue import policy_listing
    from gpu_fabric.plan.efa_domains.from_resources import describe_stack_domains
    from gpu_fabric.policies.over_grpc import analyze_over_grpc, served_pack
    from gpu_fabric.policies.runner import NotApplicable, Violation, run_policies

    if args.list_policies:
        print(policy_listing(ALL_POLICIES))
        return EXIT_OK
    stacks = selected_stacks(args)
    if stacks is None:
        return EXIT_USAGE
    if not stacks:
        print(f"gpu-fabric check: no Pulumi.*.yaml stack files in the stackConfigDir of {args.project}", file=sys.stderr)
        return EXIT_USAGE
    refused = False
    with contextlib.ExitStack() as pack:
        stub = pack.enter_context(served_pack(display_name=pack_display_name(__version__))) if args.preview else None
        for stack in stacks:
            result = render_or_report(stack, args.project, preview=args.preview)
            if isinstance(result, int):
                if result != EXIT_FINDINGS:
                    return result
                refused = True  # a mandatory policy's refusal, decided at render: reported, next stack
                continue
            resources = [r.policy_resource()
                         for r in result.resources]
            skipped: list[NotApplicable] = []
            violations: list[Violation]
            if stub is not None:
                outcome = analyze_over_grpc(stub, resources)
                violations, skipped = outcome.violations, outcome.not_applicable
            else:
                violations = run_policies(ALL_POLICIES, resources, not_applicable=skipped)
            quiet = getattr(args, "quiet", False)
            # --quiet leaves out the domain listing; a policy that could not decide is still said.
            print(report(stack, len(resources), len(ALL_POLICIES), violations,
                         () if quiet else describe_stack_domains(resources), skipped, preview=args.preview))
            refused = refused or any(v.mandatory for v in violations)
    return EXIT_FINDINGS if refused else EXIT_OK


def _resource_label(urn: str) -> str:
    if not urn:
        return "(stack)"
    parts = urn.split("::")
    return f"{parts[-1]} ({parts[-2].split('$')[-1]})" if len(parts) >= 4 else urn


PREVIEW_NOTE = " (preview over gRPC: ids and names of new resources unknown)"


def report(stack: str, resource_count: int, policy_count: int, violations: Sequence,
           domains: Sequence[str] = (), not_applicable: Sequence = (), preview: bool = False) -> str:
    """The stack's fabric domains as paths, then violations grouped by policy: severity,
    enforcement, then one line per resource and message. ``preview``: the pack ran over gRPC on a
    render whose new resources' ids and names are unknown, and the heading says so."""
    mandatory = sum(1 for v in violations if v.mandatory)
    heading = f"stack {stack}: {resource_count} resources checked against {policy_count} policies"
    lines = [heading + (PREVIEW_NOTE if preview else ""), *domains]
    groups: dict[str, list] = {}
    for violation in violations:
        groups.setdefault(violation.policy, []).append(violation)
    for policy, found in groups.items():
        first = found[0]
        lines.append(f"{policy} [{first.enforcement.value}, severity {first.severity or 'unspecified'}]")
        for violation in found:
            lines.append(f"  {_resource_label(violation.urn)}")
            for line in violation.message.splitlines():
                lines.append(f"    {line}")
    for note in not_applicable:
        lines.append(f"{note.policy} [not applicable] {_resource_label(note.urn)}: {note.reason or 'no reason given'}")
    lines.append(f"{mandatory} mandatory, {len(violations) - mandatory} advisory violation(s)"
                 if violations else "no policy violations")
    return "\n".join(lines)
