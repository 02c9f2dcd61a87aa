"""``gpu-fabric render --stack NAME [--out DIR]``: the stack's objects, offline and byte-stable."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from gpu_fabric.cli.conventions import EXIT_OK, EXIT_USAGE, add_command, folder_argument

MANIFEST_DIR = "k8s"
RESOURCES_FILE = "resources.json"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``render`` sub-command."""
    parser = add_command(
        subparsers, "render", summary="render a stack offline under Pulumi's mock runtime",
        description="Run the project's stack program under Pulumi's mock runtime, offline, with instance facts "
                    "from the bundled EC2 table, and write every object as YAML plus resources.json "
                    "(byte-stable). A configuration a mandatory policy refuses exits 1, any other bad "
                    "configuration 2, with the field path.",
        examples=["gpu-fabric render", "gpu-fabric render --stack aws-efa --out out/aws-efa",
                  "gpu-fabric render --project ../platform --stack prod --quiet"])
    parser.add_argument("--stack", action="append", dest="stacks", metavar="NAME",
                        help="stack name (Pulumi.NAME.yaml in the project's stackConfigDir); repeatable; default: every stack there")
    parser.add_argument("--out", type=folder_argument, help="output folder (default out/NAME); only with a single --stack")
    parser.add_argument("--project", type=Path, default=Path("."), help="project folder holding Pulumi.yaml (default .)")
    parser.set_defaults(func=run)


def selected_stacks(args: argparse.Namespace) -> list[str] | None:
    """The stacks named with ``--stack``, or every ``stacks/Pulumi.*.yaml`` of the project; ``None``
    (reported on stderr) when the project's ``Pulumi.yaml`` cannot be read."""
    if args.stacks:
        return list(args.stacks)
    from gpu_fabric.program.render import ProjectError, example_stacks

    try:
        return example_stacks(args.project)
    except ProjectError as error:
        print(f"gpu-fabric: {error}", file=sys.stderr)
        return None


def run(args: argparse.Namespace) -> int:
    """Render, write, print the summary; exit 2 on a bad configuration."""
    from gpu_fabric.cli.render_output import OutputError

    stacks = selected_stacks(args)
    if stacks is None:
        return EXIT_USAGE
    if args.out and len(stacks) != 1:
        print("gpu-fabric render: --out needs exactly one --stack", file=sys.stderr)
        return EXIT_USAGE
    if not stacks:
        print(f"gpu-fabric render: no Pulumi.*.yaml stack files in the stackConfigDir of {args.project}", file=sys.stderr)
        return EXIT_USAGE
    for stack in stacks:
        result = render_or_report(stack, args.project)
        if isinstance(result, int):
            return result
        out = args.out or args.project / "out" / stack
        try:
            write_render(result, out)
        except (OutputError, OSError) as error:
            print(f"gpu-fabric render: stack {stack}: cannot write {out}: {error}", file=sys.stderr)
            return EXIT_USAGE
        text = summary(result, out)
        print(text.splitlines()[0] if getattr(args, "quiet", False) else text)
    return EXIT_OK


def render_or_report(stack: str, project: Path, *, preview: bool = False):
    """Render ``stack``; on a problem print it (no traceback) and return the exit code instead.

    A configuration that a mandatory policy of the pack refuses (the stack refuses it too, at
    render) is a policy violation: exit 1. Anything else the render cannot use exits 2.
    """
    from gpu_fabric.program.errors import StackNotFoundError, StackProgramError
    from gpu_fabric.program.render import ProjectError, render_stack
    from gpu_fabric.config.base import ConfigError
    from gpu_fabric.config.stack_file import StackFileError

    try:
        result = render_stack(stack, project, preview=preview)
        warning = stand_in_warning(result)
        if warning:
            print(f"gpu-fabric: stack {stack}: warning: {warning}", file=sys.stderr)
        return result
    except ConfigError as error:
        print(f"gpu-fabric: stack {stack}: {error}", file=sys.stderr)
        return error.exit_code
    except (StackNotFoundError, ProjectError) as error:
        print(f"gpu-fabric: {error}", file=sys.stderr)
    except StackProgramError as error:
        print(f"gpu-fabric: stack {stack}: {error}", file=sys.stderr)
    except StackFileError as error:
        print(f"gpu-fabric: stack {stack}: {error}", file=sys.stderr)
    return EXIT_USAGE


def stand_in_warning(result) -> str | None:
    """The warning of a stack whose GPUStack operator is newer than every mirrored line (``0.12.0+as-0.11``):
    printed on stderr by every render, check and verify of it, ``--quiet`` or not. Read from what the components
    registered, without the policy layer (a render need not import the pack)."""
    from gpu_fabric.gpustack.profiles import components_operator, stand_in_findings

    profile, _ = components_operator(_named_operators(result))
    found = stand_in_findings(profile) if profile is not None else []
    return "; ".join(f"{finding.path}: {finding.message} {finding.rule_tag}" for finding in found) or None


def _named_operators(result) -> list[str]:
    """The ``gpustackOperator`` every gpu-fabric component of a render was given."""
    return [version for r in result.resources if r.type.startswith("gpu-fabric:index:")
            if isinstance(version := r.inputs.get("gpustackOperator"), str) and version]


def manifest_text(manifest: dict[str, Any]) -> str:
    """YAML of one manifest: ``apiVersion``, ``kind``, ``metadata``, ``spec`` first, then sorted keys."""
    from gpu_fabric.cli.yaml_text import yaml_text  # here, not at module level: ``gpu-fabric --help`` registers this command

    head = ("apiVersion", "kind", "metadata", "spec")
    ordered = {key: manifest[key] for key in head if key in manifest}
    ordered.update({key: manifest[key] for key in sorted(manifest) if key not in head})
    return yaml_text(_sorted(ordered, top=True))


def _sorted(value: Any, top: bool = False) -> Any:
    if isinstance(value, dict):
        keys = list(value) if top else sorted(value)
        return {key: _sorted(value[key]) for key in keys}
    if isinstance(value, list):
        return [_sorted(item) for item in value]
    return value


def manifest_path(manifest: dict[str, Any]) -> str:
    """``<namespace or _cluster>/<kind>-<name>.yaml`` (lowercase kind), relative to ``k8s/``."""
    metadata = manifest.get("metadata") or {}
    scope = metadata.get("namespace") or "_cluster"
    return f"{scope}/{str(manifest['kind']).lower()}-{metadata.get('name', 'unnamed')}.yaml"


def rendered_files(result) -> dict[str, str]:
    """Every file a render writes (path relative to ``--out`` -> text): the manifests and ``resources.json``."""
    # Secret values (Pulumi secrets in the configuration) are written as "[secret]", never in clear.
    files = {f"{MANIFEST_DIR}/{manifest_path(r.inputs)}": manifest_text(r.public_inputs)
             for r in result.resources if r.is_kubernetes_object}
    listing = [
        {"urn": r.urn, "type": r.type, "name": r.name, "parent": r.parent, "custom": r.custom, "inputs": r.public_inputs}
        for r in result.resources
    ]
    files[RESOURCES_FILE] = json.dumps(listing, indent=2, sort_keys=True) + "\n"
    return files


def write_render(result, out: Path) -> None:
    """Write the render under ``out``; the previous render's files are replaced, nobody else's touched.

    Raises :class:`gpu_fabric.cli.render_output.OutputError` (before writing anything) when a file is in
    the way that gpu-fabric did not write, or a name would place a file outside ``out``.
    """
    from gpu_fabric.cli.render_output import write_output

    write_output(out, rendered_files(result))


def summary(result, out: Path) -> str:
    """A short human summary: objects per kind, queue ownership, where files went."""
    lines = [f"stack {result.stack}: {len(result.resources)} resources, {len(result.kubernetes_objects())} Kubernetes objects"]
    for kind, count in result.kinds().items():
        lines.append(f"  {kind:<22} {count}")
    # Tenant namespaces are patches too (created or adopted, never deleted: docs/stacks.md#tenant-namespaces),
    # but not objects the GPUStack operator shares with the stack, so they get their own line.
    namespaces = [r.inputs["metadata"]["name"] for r in result.resources
                  if r.is_kubernetes_object and r.inputs["kind"] == "Namespace"]
    patches = sum(1 for r in result.resources if r.is_kubernetes_object and r.is_patch and r.inputs["kind"] != "Namespace")
    if patches:
        lines.append(f"  ({patches} adopted with server-side apply: the GPUStack operator owns them too)")
    if namespaces:
        lines.append(f"namespaces: {', '.join(namespaces)}: created when absent, adopted when present, "
                     "kept on destroy (retain_on_delete)")
    owner = next((r.inputs.get("queueOwner") for r in result.resources if r.type == "gpu-fabric:index:GpuFabric"), None)
    if owner == "gpustack":
        lines.append("queues: owned by the GPUStack operator; Kueue does not meter fabric keys "
                     "(set queueOwner: standalone to meter them)")
    elif owner == "standalone":
        lines.append("queues: owned by this stack; ClusterQueues meter accelerators and fabric keys")
    lines.extend(domain_lines(result.resources))
    lines.extend(local_queue_lines(result))
    lines.extend(operator_warning_lines(result))
    lines.extend(unreferenced_warning_lines(result))
    lines.append(f"wrote {out / MANIFEST_DIR}/ and {out / RESOURCES_FILE}")
    return "\n".join(lines)


def local_queue_lines(result) -> list[str]:
    """Each namespace's LocalQueue per pool, as rendered: the value of a workload's ``kueue.x-k8s.io/queue-name``."""
    from gpu_fabric.kube.kueue import local_queue_table

    return local_queue_table(result.kubernetes_objects())


def operator_warning_lines(result) -> list[str]:
    """What ``gpu-fabric lint`` warns about in the rendered GPUStack objects, under the stack's operator line:
    fields whose fate the operator's docs leave open (``not confirmed for 0.10.0``) and objects the operator
    admits with a warning. The same analysis the render's validation ran; only its warnings are new here."""
    from gpu_fabric.gpustack.admission_pipeline import analyze
    from gpu_fabric.gpustack.profiles import components_operator

    profile, _ = components_operator(_named_operators(result))
    if profile is None:  # disagreeing or unknown versions were refused before anything rendered
        return []
    report = analyze(result.kubernetes_objects(), operator=profile)
    return [f"warning: {finding}" for finding in report.warnings]


def unreferenced_warning_lines(result) -> list[str]:
    """KV-cache objects nothing references (:func:`gpu_fabric.plan.kv_cache_references.unreferenced_findings`, what the
    advisory ``kv-cache-unreferenced`` policy reports at ``check``): a warning each, naming it; and each RDMA or EFA
    ``kvTransfer`` without a router (:func:`gpu_fabric.plan.kv_cache_references.router_findings`, the same policy)."""
    from gpu_fabric.plan.kv_cache_references import router_findings, unreferenced_findings
    from gpu_fabric.plan.resource_view import pool_facts

    pools = pool_facts([r.policy_resource() for r in result.resources])
    objects = result.kubernetes_objects()
    return [f"warning: {finding} {finding.rule_tag}"
            for finding in [*unreferenced_findings(objects, pools), *router_findings(objects)]]


def domain_lines(rendered_resources) -> list[str]:
    """Each fabric domain as a path (role -> pool -> node group <-> members -> pool -> node group)."""
    from gpu_fabric.plan.efa_domains.from_resources import describe_stack_domains

    resources = [r.policy_resource() for r in rendered_resources]
    return describe_stack_domains(resources)
