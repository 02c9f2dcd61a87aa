"""``gpu-fabric lint FILE...``: the operator's schema and admission over manifests you already have.

Every ``worker.gpustack.ai`` object is checked against the CRD schema of the operator line ``--operator``
names (default 0.10.0; both ``v1alpha1`` and ``v1`` are accepted) and then through its admission rules (:func:`gpu_fabric.gpustack.admission_pipeline.analyze`); each
finding names the object and the file it came from.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpu_fabric.cli.conventions import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, add_command
from gpu_fabric.config.constants import DEFAULT_GPUSTACK_OPERATOR
from gpu_fabric.config.shapes import mapping_at

if TYPE_CHECKING:
    from gpu_fabric.gpustack.admission_pipeline import TransferReport

# The schema, the admission pipeline and the profiles are imported where they are used: ``gpu-fabric
# --help`` registers this command and must stay light (no pydantic; tests/test_startup_imports.py).


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``lint`` sub-command."""
    from gpu_fabric.gpustack.profiles import known_versions

    parser = add_command(
        subparsers, "lint", summary="validate GPUStack objects against the operator's schema and decide them as its admission does",
        description=__doc__, examples=["gpu-fabric lint manifests/*.yaml", "gpu-fabric lint --quiet out/seed-rdma/k8s/team-a/*.yaml"])
    parser.add_argument("files", nargs="+", type=Path, help="YAML manifests (multi-document files welcome)")
    parser.add_argument("--operator", metavar="VERSION", default=None,
                        help=f"the GPUStack operator release the cluster runs, as `helm list` shows it "
                             f"(default: the --stack's gpustackOperator, else {DEFAULT_GPUSTACK_OPERATOR}; known: {', '.join(known_versions())})")
    parser.add_argument("--stack", default=None, metavar="NAME",
                        help="also judge workloads and device plugins against this stack's pools "
                             "(Pulumi.NAME.yaml in the project's stackConfigDir; see docs/workloads.md)")
    parser.add_argument("--project", type=Path, default=Path("."), help="project folder holding Pulumi.yaml (default .)")
    parser.set_defaults(func=run)


class ManifestError(ValueError):
    """A file cannot be linted: unreadable, not YAML, or a document that is not a Kubernetes object."""


def _documents(path: Path) -> list[tuple[int, Any]]:
    from gpu_fabric.config.stack_file import decode_text, parse_yaml_documents, read_input

    if path.is_dir():
        raise ManifestError(f"{path}: is a folder; name the files (for example {path}/*.yaml)")
    try:
        return parse_yaml_documents(decode_text(read_input(path)), finite_only=False)
    except OSError as error:
        raise ManifestError(f"{path}: cannot read: {error.strerror}") from None
    except ValueError as error:
        raise ManifestError(f"{path}: {error}") from None


def _objects(path: Path, line: int, document: Any) -> list[dict[str, Any]]:
    """The Kubernetes objects one document holds: itself, or the items of a ``List`` / top-level list."""
    where = f"{path}: document at line {line}"
    if document is None:
        return []
    items: list[Any]
    if isinstance(document, list):
        items = document  # linted item by item, as a kind: List is
    elif isinstance(document, dict) and isinstance(document.get("kind"), str) and document["kind"].endswith("List") \
            and "items" in document:
        if not isinstance(document["items"], list):
            raise ManifestError(f"{where}: {document['kind']}.items is not a list")
        items = document["items"]
    else:
        items = [document]
    objects = []
    for index, item in enumerate(items):
        label = where if item is document else f"{where}, item {index}"
        if not isinstance(item, dict):
            raise ManifestError(f"{label}: not a Kubernetes object (a mapping with apiVersion and kind), but {_kind(item)}")
        for field in ("apiVersion", "kind"):
            if not isinstance(item.get(field), str) or not item[field]:
                raise ManifestError(f"{label}: {field} is missing or not a string")
        for field in ("metadata", "spec"):
            if field in item and not isinstance(item[field], dict):
                raise ManifestError(f"{label}: {item['kind']} {field} must be a mapping, not {_kind(item[field])}")
        objects.append(item)
    return objects


def _kind(value: Any) -> str:
    return {list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(type(value), f"a {type(value).__name__}")


def _identity(manifest: dict[str, Any]) -> tuple[str, str, str, str]:
    group = manifest["apiVersion"].rpartition("/")[0]
    metadata = manifest.get("metadata") or {}
    return group, manifest["kind"], str(metadata.get("namespace") or ""), str(metadata.get("name") or "")


def read_manifests(paths: list[Path]) -> list[tuple[dict[str, Any], str]]:
    """``(object, file)`` for every Kubernetes object of every file; ``ManifestError`` names each problem.

    ``List`` objects and top-level lists are unpacked; the same object (group, kind, namespace,
    name) declared twice is refused, since only one of the two could exist in the cluster.
    """
    found: list[tuple[dict[str, Any], str]] = []
    first_seen: dict[tuple[str, str, str, str], str] = {}
    problems: list[str] = []
    for path in paths:
        try:
            for line, document in _documents(path):
                for manifest in _objects(path, line, document):
                    identity = _identity(manifest)
                    if identity[3] and identity in first_seen:
                        problems.append(f"{path}: {_object_ref(manifest)} is declared twice (also in {first_seen[identity]})")
                        continue
                    first_seen[identity] = str(path)
                    found.append((manifest, str(path)))
        except ManifestError as error:
            problems.append(str(error))
    if problems:
        raise ManifestError("\n".join(problems))
    return found


def run(args: argparse.Namespace) -> int:
    """Print findings and grants; exit 2 when the API server or the operator would refuse an object (1 when only
    a policy of the pack would: a privileged Mooncake member group) or for unreadable input."""
    from gpu_fabric.gpustack.admission_pipeline import analyze, is_gpustack_object
    from gpu_fabric.gpustack.privilege_rules import privilege_findings
    from gpu_fabric.gpustack.profiles import UnknownOperatorVersion, profile_for, stand_in_findings

    try:
        operator = getattr(args, "operator", None)
        if operator is None and getattr(args, "stack", None):
            from gpu_fabric.cli.lint_workloads import stack_operator_version

            operator = stack_operator_version(args.stack, args.project)  # the operator that stack's cluster runs
        # None only means "not given": an empty --operator "" (an unset shell variable) is refused by profile_for.
        profile = profile_for(operator if operator is not None else DEFAULT_GPUSTACK_OPERATOR)
    except UnknownOperatorVersion as error:
        print(f"gpu-fabric lint: --operator {error}", file=sys.stderr)
        return EXIT_USAGE
    for finding in stand_in_findings(profile):
        print(f"gpu-fabric lint: warning: {finding.message} {finding.rule_tag}", file=sys.stderr)
    try:
        read = read_manifests(args.files)
    except ManifestError as error:
        for line in str(error).splitlines():
            print(f"gpu-fabric lint: {line}", file=sys.stderr)
        return EXIT_USAGE
    manifests = [manifest for manifest, _ in read]
    sources = {_object_ref(manifest): source for manifest, source in read}
    gpustack = sum(1 for m in manifests if is_gpustack_object(m))
    report = analyze(manifests, operator=profile)
    # The pack's privilege rules over the same objects (mooncake-members-unprivileged, model-deployment-unprivileged-roles).
    report = replace(report, findings=(*report.findings, *privilege_findings(manifests)))
    text = format_report(report, gpustack, len(manifests) - gpustack, sources)
    if getattr(args, "quiet", False):  # findings and the verdict line only
        text = "\n".join(line for line in text.splitlines()[1:] if not line.startswith("grant "))
    else:
        print(f"GPUStack operator {profile.assumed} assumed ({profile.line} line, {profile.schema_basis} schema)")
    print(text)
    if getattr(args, "stack", None):
        from gpu_fabric.cli.lint_workloads import lint_against_stack

        stack_verdict = lint_against_stack(args.stack, args.project, read)
        if stack_verdict == EXIT_USAGE:
            return EXIT_USAGE
        if stack_verdict == EXIT_FINDINGS:
            return max(EXIT_FINDINGS, report_exit_code(report))
    return report_exit_code(report)


def report_exit_code(report: TransferReport) -> int:
    """The registry's exit status of the report's refusals (docs/rules.md): 2 for what the API server or the
    operator's webhook refuses anyway (a schema, an admission rule), 1 for a policy's refusal, 0 for none.
    Exit 2 is said on stderr in one line, as every command says it."""
    code = max((finding.exit_code for finding in report.errors), default=EXIT_OK)
    if code == EXIT_USAGE:
        refused = sum(1 for finding in report.errors if finding.exit_code == EXIT_USAGE)
        print(f"gpu-fabric lint: {refused} finding{'s' if refused != 1 else ''} the API server or the GPUStack "
              "operator would refuse at apply (exit 2)", file=sys.stderr)
    return code


def _object_ref(manifest: dict[str, Any]) -> str:
    from gpu_fabric.gpustack.schema import is_namespaced

    meta = mapping_at(manifest, "metadata")
    namespace, name = meta.get("namespace"), meta.get("name", "")
    if not namespace and is_namespaced(str(manifest.get("kind", ""))):
        namespace = "default"  # where kubectl (and analyze) put a namespaced object that names none
    return f"{manifest.get('kind')} {namespace}/{name}" if namespace else f"{manifest.get('kind')} {name}"


def format_report(report: TransferReport, read: int, skipped: int, sources: dict[str, str] | None = None) -> str:
    """Findings first (each naming its object and, when known, its file), then the grants."""
    lines = [f"read {read} GPUStack objects ({skipped} other objects passed over)"]
    for finding in report.findings:
        source = (sources or {}).get(str(finding.subject))
        where = f" ({source})" if source else ""
        lines.append(f"{finding.severity.upper()} {finding.subject} {finding.path}: {finding.message}{where} "
                     f"{finding.rule_tag}")
    for grant in report.role_grants:
        keys = ", ".join(f"{key}: {value}" for key, value in grant.resources.items())
        lines.append(f"grant ModelDeployment {grant.namespace}/{grant.deployment} role {grant.role} "
                     f"({grant.fabric}, {grant.interfaces} interfaces): {keys}")
    for member in report.member_grants:
        keys = ", ".join(f"{key}: {value}" for key, value in member.resources.items()) or "no fabric devices"
        lines.append(f"grant KVCacheBackend {member.backend} members[{member.group_index}] ({member.protocol}): {keys}")
    errors, warnings = len(report.errors), len(report.warnings)
    lines.append(f"{errors} error{'s' if errors != 1 else ''}, {warnings} warning{'s' if warnings != 1 else ''}")
    return "\n".join(lines)
