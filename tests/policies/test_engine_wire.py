"""The engine-wire boundary: one module touches pulumi_policy's internals, at the versions it was written for."""

from __future__ import annotations

import ast
from importlib.metadata import version
from pathlib import Path

import gpu_fabric
from gpu_fabric.policies.engine_wire import PULUMI_POLICY_VERSIONS
from support.source_trees import parse_file

PACKAGE_DIR = Path(gpu_fabric.__file__).parent
TESTS_DIR = Path(__file__).resolve().parents[1]


def _release(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".")[:2] if part.isdigit())


def test_the_installed_pulumi_policy_is_one_the_boundary_was_written_against():
    lowest, below = PULUMI_POLICY_VERSIONS
    installed = _release(version("pulumi-policy"))
    assert lowest <= installed < below, (
        f"pulumi-policy {version('pulumi-policy')} is outside {lowest}..{below}: re-read pulumi_policy/proxy.py and "
        "pulumi_policy/policy.py, adapt gpu_fabric/policies/engine_wire.py, then widen PULUMI_POLICY_VERSIONS")


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(parse_file(path)):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_only_the_boundary_reaches_into_pulumi_policy_internals():
    reaching = sorted(str(path.relative_to(PACKAGE_DIR)) for path in PACKAGE_DIR.rglob("*.py")
                      if any(name.startswith(("pulumi_policy.proxy", "pulumi_policy.policy")) for name in _imports(path)))
    assert reaching == ["policies/analyzer_calls.py", "policies/engine_wire.py"]  # the boundary, in two modules


def test_no_module_or_test_imports_a_private_policies_module():
    private = sorted(str(path) for path in [*PACKAGE_DIR.rglob("*.py"), *TESTS_DIR.rglob("*.py")]
                     if any(name.startswith("gpu_fabric.policies._") for name in _imports(path)))
    assert private == []


def test_the_analyzer_still_decodes_properties_through_its_json_format_module():
    """decode_non_finite_numbers replaces ``pulumi_policy.policy.json_format``: the servicer must still read it."""
    import inspect

    import pulumi_policy.policy as analyzer_module

    assert "json_format.MessageToDict(request.properties)" in inspect.getsource(analyzer_module._PolicyAnalyzerServicer)
