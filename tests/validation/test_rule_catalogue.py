"""One rule registry: every rule of the package is in it, every policy reports rules of it, and what is
produced from it (``check --list-policies``, ``docs/rules.md``) is current."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import gpu_fabric
from gpu_fabric.cli.conventions import EXIT_FINDINGS, EXIT_USAGE
from gpu_fabric.findings import EXIT_POLICY_REFUSAL, EXIT_UNUSABLE_INPUT, Rule
from gpu_fabric.validation.rule_registry import BY_ID, REGISTRY, rules_of_policy

PROJECT_DIR = Path(__file__).resolve().parents[2]


def _defined_rules() -> dict[str, Rule]:
    """Every ``Rule`` a module of the package holds at module level, by ``module.NAME``."""
    found: dict[str, Rule] = {}
    for module in pkgutil.walk_packages(gpu_fabric.__path__, "gpu_fabric."):
        if module.name.endswith("__main__") or ".kubelet_agent" in module.name:
            continue
        loaded = importlib.import_module(module.name)
        for name, value in vars(loaded).items():
            if isinstance(value, Rule) and getattr(loaded, "__name__", "") == module.name:
                found[f"{module.name}.{name}"] = value
    return found


def test_every_rule_of_the_package_is_registered_once():
    registered = {id(entry.rule) for entry in REGISTRY}
    missing = sorted(where for where, rule in _defined_rules().items() if id(rule) not in registered)
    assert not missing, f"rules not in gpu_fabric.validation.rule_registry.REGISTRY: {missing}"
    assert len(BY_ID) == len(REGISTRY), "two registry entries share a rule id"


def test_every_policy_reports_registered_rules_and_every_rule_names_a_policy_of_the_pack():
    from gpu_fabric.policies import ALL_POLICIES

    names = {policy.name for policy in ALL_POLICIES}
    assert all(rules_of_policy(name) for name in names), [name for name in names if not rules_of_policy(name)]
    named = {policy for entry in REGISTRY for policy in (entry.rule.policy, entry.rule.warnings_policy) if policy}
    assert named <= names, named - names


def test_a_refusals_exit_status_is_the_command_lines():
    assert (EXIT_POLICY_REFUSAL, EXIT_UNUSABLE_INPUT) == (EXIT_FINDINGS, EXIT_USAGE)


def test_the_committed_rule_catalogue_is_current():
    # The script's own text: the registry, the policies and each rule's examples from the conformance corpus.
    done = subprocess.run([sys.executable, str(PROJECT_DIR / "scripts" / "generate_rule_catalogue.py"), "--check"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_loading_a_configuration_imports_no_policy_engine():
    program = ("import sys\n"
               "from gpu_fabric.validation.configuration import load_config\n"
               "import gpu_fabric.validation.rule_registry\n"
               "try:\n"
               "    load_config({'namespaces': ['team-a'], 'pools': []})\n"
               "except Exception:\n"
               "    pass\n"
               "print('pulumi_policy' in sys.modules)\n")
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"
