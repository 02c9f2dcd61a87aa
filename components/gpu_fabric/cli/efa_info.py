"""``gpu-fabric efa-info TYPE...``: EFA facts and the planned interface layout per instance type.

Asks EC2 (boto3: region, profile and AWS_ENDPOINT_URL honoured) and falls back to the bundled
table, saying so and when and from which region the table was generated, when no credentials,
region or endpoint are available; --offline skips EC2. Exit codes: 0 answered, 2 unknown
instance type (with the closest known one) or AWS error.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Mapping, TextIO

from gpu_fabric.cli.conventions import EXIT_OK, EXIT_USAGE, add_command


def register(subparsers: Any) -> None:
    """Add the ``efa-info`` sub-command."""
    parser = add_command(
        subparsers, "efa-info", summary="show EFA facts and the planned network interface layout of instance types",
        description=__doc__,
        examples=["gpu-fabric efa-info p5.48xlarge p6-b300.48xlarge",
                  "gpu-fabric efa-info --offline p5.48xlarge",
                  "gpu-fabric efa-info --stack aws-efa --quiet"])
    parser.add_argument("types", nargs="*", metavar="TYPE", help="EC2 instance type, e.g. p5.48xlarge")
    parser.add_argument("--stack", default=None, metavar="NAME",
                        help="also print the EFA domains of stack NAME (Pulumi.NAME.yaml in the project's "
                             "stackConfigDir) and describe their instance types")
    parser.add_argument("--project", default=".", help="project folder holding Pulumi.yaml (default .)")
    parser.add_argument("--region", default=None, help="AWS region (default: boto3's resolution)")
    parser.add_argument("--profile", default=None, help="AWS profile (default: boto3's resolution)")
    parser.add_argument("--offline", action="store_true", help="use the bundled table without asking EC2")
    parser.set_defaults(func=run)


def _gpu_summary(facts: Any) -> str:
    if not facts.gpus:
        return "none"
    return ", ".join(f"{gpu.count} x {gpu.manufacturer} {gpu.name}".strip() for gpu in facts.gpus)


def _print_type(item: Mapping[str, Any], out: TextIO) -> None:
    from gpu_fabric.aws.catalog.types import InstanceFacts
    from gpu_fabric.aws.efa import plan_interfaces

    facts = InstanceFacts.from_item(item)
    efa_cards = [card.index for card in facts.network_cards if card.supports_efa]
    rows = [
        ("EFA supported", "yes" if facts.efa_supported else "no"),
        ("EFA interfaces", str(facts.max_efa_interfaces)),
        ("Network cards", f"{facts.max_network_cards} (EFA-capable: {_index_ranges(efa_cards) or 'none'})"),
        ("Interfaces per card", _index_ranges_by_value({c.index: c.max_interfaces for c in facts.network_cards})),
        ("GPUs", _gpu_summary(facts)),
        ("vCPUs", str(facts.vcpus)),
        ("Memory", f"{facts.memory_mib / 1024:g} GiB"),
    ]
    width = max(len(label) for label, _ in rows)
    print(facts.name, file=out)
    for label, value in rows:
        print(f"  {label:<{width}}  {value}", file=out)
    if not facts.efa_supported:
        print("", file=out)
        return
    plan = plan_interfaces(item)
    print("  Planned layout (recommended):", file=out)
    print(f"    {'card':>4}  {'device':>6}  type", file=out)
    for interface in plan:
        print(f"    {interface.network_card_index:>4}  {interface.device_index:>6}  {interface.interface_type}", file=out)
    print("", file=out)


def _index_ranges(indices: list[int]) -> str:
    """``[1, 2, 3, 5]`` -> ``"1-3, 5"``."""
    ranges: list[str] = []
    for index in sorted(indices):
        if ranges and index == int(ranges[-1].split("-")[-1]) + 1:
            ranges[-1] = f"{ranges[-1].split('-')[0]}-{index}"
        else:
            ranges.append(str(index))
    return ", ".join(ranges)


def _index_ranges_by_value(values: Mapping[int, int]) -> str:
    """``{0: 2, 1: 2}`` -> ``"2 (cards 0-1)"``; several values are listed one group each."""
    groups: dict[int, list[int]] = {}
    for index, value in sorted(values.items()):
        groups.setdefault(value, []).append(index)
    return "; ".join(
        f"{value} (card{'s' if len(indices) > 1 else ''} {_index_ranges(indices)})" for value, indices in groups.items()
    )


def stack_domain_lines(stack: str, project: str) -> tuple[list[str], list[str]]:
    """The stack's fabric domains as paths (from its configuration alone), each namespace's LocalQueue per pool,
    and the domains' instance types."""
    from pathlib import Path

    from gpu_fabric.kube.kueue import kueue_manifests, local_queue_table
    from gpu_fabric.plan.efa_domains.description import describe_domain
    from gpu_fabric.plan.efa_domains.from_config import domains_from_config
    from gpu_fabric.plan.efa_domains.naming import planned_security_group
    from gpu_fabric.program.render import load_stack_config
    from gpu_fabric.config.fabric import CONFIG_NAMESPACE
    from gpu_fabric.config.secrets import namespace_values
    from gpu_fabric.validation.configuration import load_config

    raw = load_stack_config(Path(project), stack)
    # ``secure:`` values cannot be read offline: "[secret]" in their place, as render has them.
    config = load_config(namespace_values(raw, CONFIG_NAMESPACE))
    lines: list[str] = []
    types: list[str] = []
    for domain in domains_from_config(config).domains:
        lines.extend(describe_domain(domain, planned_security_group("fabric", domain)))
        types.extend(t for pool in domain.pools for t in pool.instance_types if t not in types)
    lines = lines or [f"stack {stack}: no pool exchanges fabric traffic with another"]
    return [*lines, *local_queue_table(kueue_manifests(config))], types


def source_text(source: Any) -> str:
    """Which catalog answered; for the bundled table also when and where it was generated."""
    from gpu_fabric.aws.catalog.table import bundled_table_origin

    if source.is_fallback:
        return (f"Using the bundled instance table: {source.detail}\n"
                f"The table was {bundled_table_origin().describe()}; it may lag EC2.")
    return f"Source: EC2 DescribeInstanceTypes ({source.detail or 'default region'})"


def run(args: argparse.Namespace) -> int:
    """Print one table per instance type; returns the exit code."""
    from botocore.exceptions import BotoCoreError, ClientError

    from gpu_fabric.aws.catalog.selection import describe_with_fallback
    from gpu_fabric.aws.catalog.types import UnknownInstanceTypeError

    if args.stack:
        from gpu_fabric.config.base import ConfigError
        from gpu_fabric.config.stack_file import StackFileError
        from gpu_fabric.program.project import ProjectError
        from gpu_fabric.program.errors import StackNotFoundError

        try:
            lines, domain_types = stack_domain_lines(args.stack, args.project)
        except (ConfigError, StackNotFoundError, StackFileError, ProjectError) as error:
            print(f"gpu-fabric efa-info: stack {args.stack}: {error}", file=sys.stderr)
            # A mandatory policy's refusal is a violation (1); anything else is unusable input (2).
            return error.exit_code if isinstance(error, ConfigError) else EXIT_USAGE
        if not getattr(args, "quiet", False):
            print("\n".join(lines))
            print("")
        args.types = list(dict.fromkeys([*args.types, *domain_types]))
    if not args.types:
        if args.stack:  # a stack whose pools name no EC2 type (nodes it does not provision): its domains and queues say it all
            return EXIT_OK
        print("gpu-fabric efa-info: name at least one instance type (or --stack)", file=sys.stderr)
        return EXIT_USAGE

    try:
        items, source = describe_with_fallback(
            args.types, region=args.region, profile=args.profile, offline=args.offline
        )
    except UnknownInstanceTypeError as error:
        print(f"gpu-fabric efa-info: {error}", file=sys.stderr)
        return EXIT_USAGE
    except (BotoCoreError, ClientError) as error:
        print(f"gpu-fabric efa-info: EC2 DescribeInstanceTypes failed: {error} (use --offline for the bundled table)", file=sys.stderr)
        return EXIT_USAGE

    if not getattr(args, "quiet", False):
        print(source_text(source))
        print("")
    for name in dict.fromkeys(args.types):
        _print_type(items[name], sys.stdout)
    return EXIT_OK
