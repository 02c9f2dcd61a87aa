"""The package's folders are layers: imports run downward only, and no module imports itself back.

A static scan of every ``import`` under ``components/gpu_fabric`` -- at module level, inside
functions and under ``TYPE_CHECKING`` alike -- so a cycle cannot come back as a deferred import
inside a validator. Each folder has a rank; a module may import from its own folder or from a
folder of lower rank, never upward. ``kubelet_agent`` runs on nodes with the standard library only
and imports nothing else of the package.
"""

import ast
from pathlib import Path

import pytest

import gpu_fabric
from support.source_trees import parse_file

PACKAGE_DIR = Path(gpu_fabric.__file__).parent

# Bottom to top. Folders of one rank may not import each other (cli, diff and verify are the commands).
LAYERS: dict[str, int] = {
    "findings": 0,    # the one shape of every verdict: Finding, Rule, field paths, severities
    "interpreter": 0,  # what a gpu-fabric process does to its own interpreter (the cyclic collector)
    "config": 1,      # what the user writes: stack files, syntax, quantities, the models
    "gpustack": 2,    # the operator's mirror: schemas, admission, transfer analysis, GPUStack objects
    "kube": 3,        # node-side Kubernetes: topology rendering, device plugins, Kueue, coverage
    "aws": 4,         # EC2 instance facts, the EFA planner, node-group inputs, user data
    "plan": 5,        # what crosses domains: EFA domains, the fabric plan
    "validation": 6,  # load_config: every rule, the pack's mandatory verdicts included; the rule registry
    "policies": 7,    # CrossGuard policies: adapters from the engine's resources to the same rules
    "resources": 8,   # thin Pulumi components
    "": 9,            # the package root: the public API (lazy names)
    "program": 10,    # the stack program, the offline render under mocks, the component provider
    "diff": 11,
    "verify": 11,
    "cli": 12,
}
ISOLATED = {"kubelet_agent"}
MAX_ROOT_MODULES = 3  # besides __init__.py


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _package_of(path: Path) -> str:
    name = _module_name(path)
    return name if path.name == "__init__.py" else name.rsplit(".", 1)[0]


def imported_modules(path: Path, package: str) -> list[tuple[int, str]]:
    """``(line, dotted name)`` for every import in ``path``; ``from m import n`` yields ``m`` and ``m.n``."""
    tree = parse_file(path)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.append((node.lineno, module))
            found.extend((node.lineno, f"{module}.{alias.name}") for alias in node.names)
    return [(line, name) for line, name in found if name == "gpu_fabric" or name.startswith("gpu_fabric.")]


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted(PACKAGE_DIR.rglob("*.py"))}


def _resolve(name: str, modules: dict[str, Path]) -> str:
    """The module an imported dotted name lands in (``gpu_fabric.config.syntax.dns_label`` -> the module)."""
    while name not in modules and "." in name:
        name = name.rsplit(".", 1)[0]
    return name


def _folder(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return ""
    return parts[1] if (PACKAGE_DIR / parts[1]).is_dir() else ""


def import_graph() -> dict[str, set[tuple[int, str]]]:
    """Module -> the package modules it imports (with the line of each import)."""
    modules = _modules()
    graph: dict[str, set[tuple[int, str]]] = {}
    for name, path in modules.items():
        targets = {(line, _resolve(imported, modules)) for line, imported in imported_modules(path, _package_of(path))}
        graph[name] = {(line, target) for line, target in targets if target != name}
    return graph


def upward_imports(graph: dict[str, set[tuple[int, str]]]) -> list[str]:
    offences = []
    for module, targets in sorted(graph.items()):
        source = _folder(module)
        for line, target in sorted(targets):
            destination = _folder(target)
            if source == destination:
                continue
            if source in ISOLATED or destination in ISOLATED:
                offences.append(f"{module}:{line} imports {target} ({source or 'root'} -> {destination or 'root'}: "
                                "kubelet_agent stands apart)")
            elif source not in LAYERS or destination not in LAYERS:
                offences.append(f"{module}:{line} imports {target}: folder without a layer in LAYERS")
            elif LAYERS[destination] >= LAYERS[source]:
                offences.append(f"{module}:{line} imports {target} ({source or 'root'} -> {destination or 'root'}: "
                                "not downward)")
    return offences


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(node: str) -> None:
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(edges.get(node, ())):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_every_folder_has_a_layer() -> None:
    folders = {path.name for path in PACKAGE_DIR.iterdir() if path.is_dir() and (path / "__init__.py").exists()}
    assert folders - ISOLATED == set(LAYERS) - {""}


def test_imports_run_downward_only() -> None:
    graph = import_graph()
    assert len(graph) > 80  # the scan really sees the package
    assert upward_imports(graph) == []


def test_no_import_cycle_between_modules_or_folders() -> None:
    graph = import_graph()
    module_edges = {module: {target for _, target in targets} for module, targets in graph.items()}
    assert cycles(module_edges) == []
    folder_edges: dict[str, set[str]] = {}
    for module, targets in module_edges.items():
        folder_edges.setdefault(_folder(module), set()).update(
            _folder(target) for target in targets if _folder(target) != _folder(module))
    assert cycles(folder_edges) == []


def test_the_root_holds_the_public_api_and_few_modules() -> None:
    loose = sorted(path.name for path in PACKAGE_DIR.glob("*.py") if path.name != "__init__.py")
    assert len(loose) <= MAX_ROOT_MODULES, loose


def test_the_node_agent_uses_the_standard_library_only() -> None:
    agent = PACKAGE_DIR / "kubelet_agent"
    for path in sorted(agent.glob("*.py")):
        tree = parse_file(path)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                assert node.module.split(".")[0] in __import__("sys").stdlib_module_names, (path.name, node.module)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    assert alias.name.split(".")[0] in __import__("sys").stdlib_module_names, (path.name, alias.name)


def test_the_scan_sees_deferred_relative_and_package_imports(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text("def check():\n    from gpu_fabric.kube.kueue import pool_quotas\n"
                       "from gpu_fabric import policies\nfrom ..plan import fabric_plan\n"
                       "if TYPE_CHECKING:\n    import gpu_fabric.validation.configuration\n")
    assert sorted(imported_modules(planted, "gpu_fabric.config")) == [
        (2, "gpu_fabric.kube.kueue"), (2, "gpu_fabric.kube.kueue.pool_quotas"),
        (3, "gpu_fabric"), (3, "gpu_fabric.policies"),
        (4, "gpu_fabric.plan"), (4, "gpu_fabric.plan.fabric_plan"),
        (6, "gpu_fabric.validation.configuration")]


@pytest.mark.parametrize("graph, offence", [
    ({"gpu_fabric.config.pool": {(3, "gpu_fabric.gpustack.transfer")}}, "config -> gpustack: not downward"),
    ({"gpu_fabric.kube.coverage": {(9, "gpu_fabric.aws.efa")}}, "kube -> aws: not downward"),
    ({"gpu_fabric.diff.compare": {(1, "gpu_fabric.verify.checks")}}, "diff -> verify: not downward"),
    ({"gpu_fabric.kubelet_agent.reconcile": {(4, "gpu_fabric.config.syntax")}}, "kubelet_agent stands apart"),
])
def test_an_upward_import_is_named_with_its_line(graph, offence) -> None:
    [message] = upward_imports(graph)
    assert offence in message and ":" in message


def test_a_planted_cycle_is_found() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def reachable(graph: dict[str, set[tuple[int, str]]], start: str) -> set[str]:
    """Every package module ``start`` may import, directly or through others (deferred imports included),
    with the ``__init__`` of each package on the way."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        todo.extend(target for _, target in graph.get(module, ()))
        parts = module.split(".")
        todo.extend(".".join(parts[:end]) for end in range(2, len(parts)))
    return seen


def test_render_reaches_no_policy_module() -> None:
    # render summarises a stack from the view the pack reads (plan.resource_view), not from the pack; the
    # policies (and pulumi_policy under them) are check's and lint's to load (issue 37).
    reached = reachable(import_graph(), "gpu_fabric.cli.render")
    assert "gpu_fabric.program.render" in reached and "gpu_fabric.plan.efa_domains.from_resources" in reached
    assert sorted(m for m in reached if m == "gpu_fabric.policies" or m.startswith("gpu_fabric.policies.")) == []


def test_reachability_follows_deferred_imports_and_packages() -> None:
    graph = {"gpu_fabric.cli.render": {(3, "gpu_fabric.plan.a")}, "gpu_fabric.plan.a": {(9, "gpu_fabric.policies.b")}}
    assert {"gpu_fabric.plan", "gpu_fabric.policies", "gpu_fabric.policies.b"} <= reachable(graph, "gpu_fabric.cli.render")
