"""The command line's shared conventions, the same for every sub-command.

Exit 0 success, 1 policy violations or failed verification, 2 input the tool cannot use; ``--quiet``
everywhere; ``--help`` with examples and no reStructuredText markup; "did you mean" for unknown
keys, enum values and instance types; ``check --list-policies``.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml

from support.bad_input import run_cli
from support.stack_configs import PROJECT_DIR

from gpu_fabric.cli import COMMAND_MODULES
from gpu_fabric.cli.conventions import plain_text

COMMANDS = [module.rsplit(".", 1)[-1].replace("_", "-") for module in COMMAND_MODULES]
MARKUP = re.compile(r"``|:(func|class|mod|meth|data|attr):`")


@pytest.mark.parametrize("command", COMMANDS)
def test_help_has_examples_exit_codes_quiet_and_no_markup(command):
    outcome = run_cli(command, "--help")
    assert outcome.code == 0, outcome.describe()
    text = outcome.out
    assert "\nexamples:\n  gpu-fabric " + command in text
    assert "exit status: 0 success, 1 policy violations or failed verification, 2 input" in text
    assert "--quiet" in text
    assert not MARKUP.search(text), text


def test_top_level_help_lists_every_command_with_an_example():
    text = run_cli("--help").out
    assert all(command in text for command in COMMANDS) and "examples:" in text


def test_plain_text_removes_restructured_text_markup():
    assert plain_text("``a`` uses :func:`gpu_fabric.x.analyze` and :class:`~pkg.Name`, *really*") == \
        "a uses analyze and Name, really"


def test_list_policies_names_every_policy_with_its_enforcement_level_and_rules():
    from gpu_fabric.policies import ALL_POLICIES
    from gpu_fabric.validation.rule_registry import rules_of_policy

    outcome = run_cli("check", "--list-policies")
    assert outcome.code == 0, outcome.describe()
    lines = [line for line in outcome.out.splitlines() if not line.startswith(" ")]
    assert len(lines) == len(ALL_POLICIES)
    for line, policy in zip(lines, ALL_POLICIES):
        name, level, summary = line.split(None, 2)
        assert name == policy.name and level == policy.enforcement_level.value and summary
        assert summary.rstrip(".") in " ".join(policy.description.split())
    # Under each policy, one indented line per rule it reports: id, then summary.
    blocks = outcome.out.split("\n" + ALL_POLICIES[1].name)[0].splitlines()[1:]
    assert [line.split()[0] for line in blocks] == [entry.id for entry in rules_of_policy(ALL_POLICIES[0].name)]


def _project(tmp_path: Path, change) -> Path:
    (tmp_path / "stacks").mkdir(parents=True)
    shutil.copy(PROJECT_DIR / "stacks" / "__main__.py", tmp_path / "stacks" / "__main__.py")
    document = yaml.safe_load((PROJECT_DIR / "stacks" / "Pulumi.aws-efa.yaml").read_text())
    change(document["config"])
    (tmp_path / "stacks" / "Pulumi.x.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
    return tmp_path


@pytest.mark.parametrize("change, expected", [
    (lambda c: c.update({"gpu-fabric:queueOwner": "standalon"}), "queueOwner: Input should be 'gpustack' or 'standalone'; did you mean 'standalone'?"),
    (lambda c: c.update({"gpu-fabric:namespace": c.pop("gpu-fabric:namespaces")}), "namespace: unknown configuration key"),
    (lambda c: c["gpu-fabric:pools"][0].update(nodeCont=c["gpu-fabric:pools"][0].pop("nodeCount")), "pools[0].nodeCont: unknown field (check the spelling; fields are camelCase); did you mean 'nodeCount'?"),
    (lambda c: c["gpu-fabric:pools"][0]["aws"].update(instanceTypes=["p5.48xlarg"]), "p5.48xlarg (did you mean 'p5.48xlarge'?)"),
], ids=["enum-value", "top-level-key", "nested-field", "instance-type"])
def test_did_you_mean(tmp_path, change, expected):
    outcome = run_cli("render", "--project", str(_project(tmp_path, change)), "--stack", "x", "--out", str(tmp_path / "out"))
    assert outcome.code == 2 and not outcome.crashed, outcome.describe()
    assert expected in outcome.err, outcome.describe()
    if "namespace:" in expected:
        assert "did you mean 'namespaces'?" in outcome.err


def test_did_you_mean_for_instance_types_in_efa_info():
    outcome = run_cli("efa-info", "--offline", "p5.48xlarg")
    assert outcome.code == 2 and "did you mean 'p5.48xlarge'?" in outcome.err, outcome.describe()


def test_quiet_leaves_out_the_domain_listing():
    loud, quiet = run_cli("check", "--stack", "aws-efa"), run_cli("check", "--stack", "aws-efa", "--quiet")
    assert loud.code == quiet.code == 0
    assert "EFA domain " in loud.out and "EFA domain " not in quiet.out
    assert quiet.out.splitlines() == [loud.out.splitlines()[0], loud.out.splitlines()[-1]]
    info = run_cli("efa-info", "--offline", "--quiet", "p5.48xlarge")
    assert info.code == 0 and "bundled instance table" not in info.out and info.out.startswith("p5.48xlarge\n")


def test_a_mandatory_policys_refusal_exits_1_and_unusable_input_2(tmp_path):
    refused = _project(tmp_path / "refused", lambda c: c["gpu-fabric:pools"][0]["topology"].update(policy="none"))
    for command in ("render", "check"):
        outcome = run_cli(command, "--project", str(refused), "--stack", "x")
        assert outcome.code == 1, outcome.describe()
        assert "(policy fabric-pool-topology)" in outcome.err
    unusable = _project(tmp_path / "unusable", lambda c: c["gpu-fabric:pools"][0].update(fabric="infiniband"))
    for command in ("render", "check"):
        assert run_cli(command, "--project", str(unusable), "--stack", "x").code == 2


def test_did_you_mean_for_commands_and_stack_names():
    command = run_cli("rendr")
    assert command.code == 2 and "did you mean 'render'?" in command.err, command.describe()
    stack = run_cli("render", "--stack", "aws-ef", "--out", "/nonexistent/never-written")
    assert stack.code == 2 and "did you mean 'aws-efa'?" in stack.err, stack.describe()
