"""Data flows down: spec -> planning -> builders. The spec package must never import the builders.

A static scan of every ``import`` (top-level or inside a function) under ``gpu_fabric/spec``, so an
import cycle between the configuration models and the manifest builders cannot come back, not even
as a deferred import inside a validator.
"""

import ast
from pathlib import Path

import gpu_fabric.spec

SPEC_DIR = Path(gpu_fabric.spec.__file__).parent
# What the builders are, and what reaches them (the planning modules and the loader build manifests).
FORBIDDEN = ("gpu_fabric.builders", "gpu_fabric.fabric_plan", "gpu_fabric.efa_domains", "gpu_fabric.configuration",
             "gpu_fabric.pack_verdicts")


def _imported_modules(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    package = "gpu_fabric.spec"  # every scanned module sits directly in the spec package
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the spec package
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            found.append((node.lineno, module))
            # ``from gpu_fabric import builders`` names the package in the alias, not the module.
            found.extend((node.lineno, f"{module}.{alias.name}") for alias in node.names)
    return found


def _offences(path: Path) -> list[str]:
    return [f"{path.name}:{line} imports {module}" for line, module in sorted(_imported_modules(path))
            if any(module == bad or module.startswith(bad + ".") for bad in FORBIDDEN)]


def test_spec_package_never_imports_the_builders() -> None:
    modules = sorted(SPEC_DIR.rglob("*.py"))
    assert len(modules) > 5  # the scan really looks at the spec package
    offences = [offence for path in modules for offence in _offences(path)]
    assert offences == []


def test_the_scan_sees_deferred_and_package_imports(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text("def check():\n    from gpu_fabric.builders.kueue import pool_quotas\n"
                       "from gpu_fabric import builders\nfrom ..builders import gpustack\n")
    assert _offences(planted) == ["planted.py:2 imports gpu_fabric.builders.kueue",
                                  "planted.py:2 imports gpu_fabric.builders.kueue.pool_quotas",
                                  "planted.py:3 imports gpu_fabric.builders",
                                  "planted.py:4 imports gpu_fabric.builders",
                                  "planted.py:4 imports gpu_fabric.builders.gpustack"]
