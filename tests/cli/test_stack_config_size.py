"""A stack file too large for Pulumi to hand its program (rule ``stack-config-size``) is refused by ``diff`` too.

render, check, check --preview and lint --stack are the conformance corpus's (tests/conformance/cases/
stack-config-size.yaml); ``diff`` renders both ends through the same loader, and refuses the end that is too large.
"""

from __future__ import annotations

import shutil
import subprocess

from support.bad_input import dump, run_cli
from support.stack_configs import PROJECT_DIR, fleet_config, stack_document

GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.invalid", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1",
           "PATH": "/usr/bin:/bin:/usr/local/bin"}


def test_diff_refuses_a_head_whose_configuration_pulumi_could_not_pass_to_the_program(tmp_path):
    stacks = tmp_path / "stacks"
    stacks.mkdir()
    shutil.copy(PROJECT_DIR / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    shutil.copy(PROJECT_DIR / "stacks" / "__main__.py", stacks / "__main__.py")
    (stacks / "Pulumi.x.yaml").write_text(dump(stack_document("seed-rdma")))
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "base"]):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True, env=GIT_ENV)
    (stacks / "Pulumi.x.yaml").write_text(dump({"config": fleet_config(4)}))

    outcome = run_cli("diff", "--base", "main", "--stack", "x", "--project", str(tmp_path))

    assert outcome.code == 2 and not outcome.crashed, outcome.describe()
    assert outcome.err.count("\n") == 1, outcome.err
    assert "Pulumi.x.yaml: config: PULUMI_CONFIG would be 169,330 bytes" in outcome.err
    assert outcome.err.rstrip().endswith("[stack-config-size]")
