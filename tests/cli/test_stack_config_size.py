"""A stack file too large for Pulumi to hand its program (rule ``stack-config-size``) is refused by ``diff`` too.

render, check, check --preview and lint --stack are the conformance corpus's (tests/conformance/cases/
stack-config-size.yaml); ``diff`` renders both ends through the same loader, and refuses the end that is too large.
"""

from __future__ import annotations

import shutil

from support.bad_input import dump, run_cli
from support.stack_configs import PROJECT_DIR, fleet_config, stack_document
from support.git_repo import commit_everything



def test_diff_refuses_a_head_whose_configuration_pulumi_could_not_pass_to_the_program(tmp_path):
    stacks = tmp_path / "stacks"
    stacks.mkdir()
    shutil.copy(PROJECT_DIR / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    shutil.copy(PROJECT_DIR / "stacks" / "__main__.py", stacks / "__main__.py")
    (stacks / "Pulumi.x.yaml").write_text(dump(stack_document("seed-rdma")))
    commit_everything(tmp_path)
    (stacks / "Pulumi.x.yaml").write_text(dump({"config": fleet_config(4)}))

    outcome = run_cli("diff", "--base", "main", "--stack", "x", "--project", str(tmp_path))

    assert outcome.code == 2 and not outcome.crashed, outcome.describe()
    assert outcome.err.count("\n") == 1, outcome.err
    assert "Pulumi.x.yaml: config: PULUMI_CONFIG would be 169,330 bytes" in outcome.err
    assert outcome.err.rstrip().endswith("[stack-config-size]")
