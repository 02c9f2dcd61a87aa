"""``gpu-fabric lint FILE...``: the operator's schema and admission over manifests you already have.

Every ``worker.gpustack.ai`` object is checked against the operator's CRD schema (both ``v1alpha1`` and
``v1`` are accepted) and then through its admission rules (:func:`gpu_fabric.transfer.analyze`); each
finding names the object and the file it came from.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

from gpu_fabric.cli import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE
from gpu_fabric.operator_schema import is_namespaced
from gpu_fabric.transfer import TransferReport, analyze, is_gpustack_object


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``lint`` sub-command."""
    parser = subparsers.add_parser(
        "lint", help="validate GPUStack objects against the operator's schema and decide them as its admission does")
    parser.add_argument("files", nargs="+", type=Path, help="YAML manifests (multi-document files welcome)")
    parser.set_defaults(func=run)


def read_manifests(paths: list[Path]) -> list[dict[str, Any]]:
    """Every mapping document of every file; ``List`` objects are unpacked."""
    manifests: list[dict[str, Any]] = []
    for path in paths:
        for document in yaml.safe_load_all(path.read_text()):
            if isinstance(document, dict) and document.get("kind", "").endswith("List") and "items" in document:
                manifests.extend(item for item in document["items"] if isinstance(item, dict))
            elif isinstance(document, dict):
                manifests.append(document)
    return manifests


def run(args: argparse.Namespace) -> int:
    """Print findings and grants; exit 1 when the operator would refuse anything."""
    manifests: list[dict[str, Any]] = []
    sources: dict[str, str] = {}
    try:
        for path in args.files:
            for manifest in read_manifests([path]):
                manifests.append(manifest)
                sources.setdefault(_object_ref(manifest), str(path))
    except OSError as error:
        print(f"gpu-fabric lint: cannot read {error.filename}: {error.strerror}", file=sys.stderr)
        return EXIT_USAGE
    except yaml.YAMLError as error:
        print(f"gpu-fabric lint: not valid YAML: {error}", file=sys.stderr)
        return EXIT_USAGE
    read = sum(1 for m in manifests if is_gpustack_object(m))
    report = analyze(manifests)
    print(format_report(report, read, len(manifests) - read, sources))
    return EXIT_FINDINGS if report.errors else EXIT_OK


def _object_ref(manifest: dict[str, Any]) -> str:
    meta = manifest.get("metadata") if isinstance(manifest.get("metadata"), dict) else {}
    namespace, name = meta.get("namespace"), meta.get("name", "")
    if not namespace and is_namespaced(str(manifest.get("kind", ""))):
        namespace = "default"  # where kubectl (and analyze) put a namespaced object that names none
    return f"{manifest.get('kind')} {namespace}/{name}" if namespace else f"{manifest.get('kind')} {name}"


def format_report(report: TransferReport, read: int, skipped: int, sources: dict[str, str] | None = None) -> str:
    """Findings first (each naming its object and, when known, its file), then the grants."""
    lines = [f"read {read} GPUStack objects ({skipped} other objects passed over)"]
    for finding in report.findings:
        source = (sources or {}).get(finding.object_ref)
        where = f" ({source})" if source else ""
        lines.append(f"{finding.severity.upper()} {finding.object_ref} {finding.path}: {finding.message}{where}")
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
