"""``gpu-fabric schema``: the JSON Schema of the ``gpu-fabric:`` stack configuration."""

from __future__ import annotations

import argparse
import json
import sys

from gpu_fabric.cli.conventions import EXIT_OK, add_command


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``schema`` sub-command."""
    parser = add_command(
        subparsers, "schema", summary="print the JSON Schema (draft 2020-12) of a stack file's configuration",
        description="Print the JSON Schema of Pulumi.<stack>.yaml as gpu-fabric reads it: the config: mapping "
                    "and every gpu-fabric: key, with each field's description, generated from the models the "
                    "render validates with. Point an editor's YAML language server at it for completion; the "
                    "schema checks field names and types, the render also checks references across objects.",
        examples=["gpu-fabric schema > gpu-fabric.schema.json",
                  "gpu-fabric schema --config-only  # the gpu-fabric: keys alone, without the file around them"])
    parser.add_argument("--config-only", action="store_true",
                        help="the schema of the gpu-fabric: values alone (keys without the namespace)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print the schema as indented JSON."""
    from gpu_fabric.config.json_schema import configuration_schema, stack_file_schema

    schema = configuration_schema() if args.config_only else stack_file_schema()
    sys.stdout.write(json.dumps(schema, indent=2, sort_keys=False) + "\n")
    return EXIT_OK
