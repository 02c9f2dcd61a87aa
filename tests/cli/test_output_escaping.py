"""Strings from the input or a server cannot act on a terminal or a CI log, and a failed write is one line.

Issue 40, round 5: an object or pod name holding ``::error file=...::`` (a GitHub Actions workflow command),
terminal escapes in an instance type or a pcieRoot, a stack name holding a newline; ``schema``, ``render``
and ``check --list-policies`` writing to a full disk or a closed stdout.
"""

import subprocess
import sys
from pathlib import Path

import pytest

from gpu_fabric.findings.printable import escape_output, one_line
from gpu_fabric.findings.subject import ObjectRef
from support.bad_input import run_cli

COMMAND = "::error file=a.py,line=1::pwned"


def _no_line_is_a_command(text: str) -> None:
    for line in text.splitlines():
        assert not line.lstrip(" \t").startswith("::"), line
    assert "\x1b" not in text and "##[" not in text and "##vso[" not in text


def test_one_line_shows_every_control_character_as_an_escape():
    assert one_line("a\nb\r\tc\x1b[2Jd\u202e") == "a\\nb\\r\\tc\\x1b[2Jd\\u202e"
    assert one_line("p5.48xlarge") == "p5.48xlarge"
    assert one_line("x ##vso[task.setvariable]y") == "x #\\#vso[task.setvariable]y"


@pytest.mark.parametrize("writes", [
    [COMMAND + "\n"],
    ["  " + COMMAND + "\n"],
    ["ok\n" + COMMAND],
    [":", ":error::x\n"],
    ["  ", COMMAND, "\n"],
])
def test_no_written_line_starts_a_workflow_command_however_it_is_split(writes):
    head, out = "", []
    for text in writes:
        escaped, head = escape_output(text, head)
        out.append(escaped)
    _no_line_is_a_command("".join(out))


def test_output_keeps_its_own_lines_and_tabs():
    assert escape_output("a\tb\nc: d\n", "") == ("a\tb\nc: d\n", "")
    assert escape_output("pcieRoot pci0000:\x1b[31m00\n", "")[0] == "pcieRoot pci0000:\\x1b[31m00\n"


def test_an_object_reference_is_one_line():
    assert str(ObjectRef("Pod", f"x\n{COMMAND}", "team-a")) == f"Pod team-a/x\\n{COMMAND}"


def test_lint_prints_an_object_name_holding_a_workflow_command_inert(tmp_path):
    manifest = tmp_path / "m.yaml"
    manifest.write_text("apiVersion: worker.gpustack.ai/v1alpha1\nkind: ModelDeployment\nmetadata:\n"
                        f'  name: "x\\n{COMMAND}"\n  namespace: team-a\nspec: {{}}\n')
    outcome = run_cli("lint", str(manifest))
    assert outcome.code == 2 and "pwned" in outcome.out, outcome.describe()
    _no_line_is_a_command(outcome.out + outcome.err)


def test_an_instance_type_holding_terminal_escapes_is_printed_escaped():
    outcome = run_cli("efa-info", "--offline", "p5.48xlarge\x1b[2J")
    assert outcome.code == 2 and "p5.48xlarge\\x1b[2J" in outcome.err, outcome.describe()
    _no_line_is_a_command(outcome.err)


def test_a_stack_name_holding_a_newline_stays_on_its_line():
    outcome = run_cli("render", "--stack", f"x\n{COMMAND}")
    assert outcome.code == 2, outcome.describe()
    _no_line_is_a_command(outcome.out + outcome.err)


def test_a_stack_file_whose_name_holds_a_command_is_reported_inert(tmp_path):
    (tmp_path / "Pulumi.yaml").write_text("name: p\nruntime: python\nmain: stacks/\nstackConfigDir: stacks\n")
    (tmp_path / "stacks").mkdir()
    (tmp_path / "stacks" / f"Pulumi.x\n{COMMAND}.yaml").write_text("config: {}\n")
    outcome = run_cli("check", "--project", str(tmp_path))
    assert outcome.code == 2, outcome.describe()
    _no_line_is_a_command(outcome.out + outcome.err)


@pytest.mark.parametrize("command", [["schema"], ["check", "--list-policies"], ["render"]])
@pytest.mark.parametrize("stdout", ["full", "closed"])
def test_output_that_cannot_be_written_is_one_line_and_no_traceback(command, stdout, tmp_path):
    if stdout == "full" and not Path("/dev/full").exists():
        pytest.skip("no /dev/full on this system")
    project = Path(__file__).resolve().parents[2]
    script = ("import sys; from gpu_fabric.cli import console_main; sys.exit(console_main())")
    args = [sys.executable, "-c", script, *command]
    if command == ["render"]:
        args += ["--stack", "seed-rdma", "--project", str(project), "--out", str(tmp_path / "out")]
    if stdout == "full":
        with open("/dev/full", "w") as full:
            done = subprocess.run(args, stdout=full, stderr=subprocess.PIPE, text=True, timeout=300)
    else:
        done = subprocess.run(["sh", "-c", '"$@" >&-', "sh", *args], stderr=subprocess.PIPE, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr, done.stderr
    reason = "No space left on device" if stdout == "full" else "closed"
    assert done.stderr.strip().splitlines()[-1].startswith("gpu-fabric: cannot write standard output:"), done.stderr
    assert reason in done.stderr
