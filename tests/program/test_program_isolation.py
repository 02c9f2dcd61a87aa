"""A stack program run offline cannot end the command early, check nothing, or write on its stdout.

render, check and verify run the team's program in their own process: a program that stops early
(``sys.exit``, ``os._exit``, in the program or in an ``apply`` callback) or registers nothing is an
error naming the program file (exit 2, one line), never a vacuous success; what the program prints,
and what the processes it starts print, goes to stderr.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gpu_fabric.program.isolation import stdout_to_stderr
from gpu_fabric.program.errors import StackProgramError
from gpu_fabric.program.render import render_stack
from support.bad_input import run_cli
from support.team_program import PROGRAM, SUBPROCESS_ENV, project


def command_args(command: str, folder: Path) -> list[str]:
    extra = {"render": ["--out", str(folder / "out")], "check": [], "verify": ["--kubeconfig", str(folder / "none")]}
    return [command, "--project", str(folder), "--stack", "seed-rdma", *extra[command]]


EARLY_EXITS = {
    "sys.exit(0) first": ("import sys\nsys.exit(0)\n" + PROGRAM, "sys.exit(0)", 2),
    "sys.exit(3) after the fabric": (PROGRAM + "import sys\nsys.exit(3)\n", "sys.exit(3)", None),
    "raise SystemExit": ("raise SystemExit\n" + PROGRAM, "sys.exit(None)", 1),
    "sys.exit in an apply callback": (
        PROGRAM + "import pulumi, sys\npulumi.Output.from_input(1).apply(lambda _: sys.exit(0))\n", "sys.exit(0)", None),
}


@pytest.mark.parametrize("command", ["render", "check", "verify"])
@pytest.mark.parametrize("case", list(EARLY_EXITS))
def test_a_program_that_exits_early_is_an_error_naming_its_file(tmp_path, command, case):
    text, how, line = EARLY_EXITS[case]
    folder, program = project(tmp_path, text)
    outcome = run_cli(*command_args(command, folder))
    assert outcome.code == 2 and not outcome.crashed, outcome.describe()
    assert outcome.err.count("\n") == 1 and outcome.out == ""
    assert f"the stack program {program} exited early ({how}" in outcome.err
    if line is not None:
        assert f"at {program}:{line})" in outcome.err
    assert not (folder / "out").exists()


@pytest.mark.parametrize("command", ["render", "check", "verify"])
def test_a_program_that_registers_nothing_is_an_error_and_never_no_violations(tmp_path, command):
    folder, program = project(tmp_path, "import pulumi\n\npulumi.export('nothing', 1)\n")
    outcome = run_cli(*command_args(command, folder))
    assert outcome.code == 2 and not outcome.crashed, outcome.describe()
    assert outcome.err == f"gpu-fabric: stack seed-rdma: the stack program {program} registered no resources: " \
                          "there is nothing to render or check; a gpu-fabric stack program calls build_stack() " \
                          "(or creates its own resources) and runs to its end\n"
    assert "no policy violations" not in outcome.out + outcome.err and outcome.out == ""


FAILING_REGISTRATIONS = {
    "an apply callback that raises": (
        "import pulumi\n\ndef owner(_):\n    raise KeyError('team')\n\n"
        "pulumi.CustomResource('kubernetes:core/v1:ConfigMap', 'owners', {'apiVersion': 'v1', 'kind': 'ConfigMap', "
        "'data': {'owner': pulumi.Output.from_input(1).apply(owner)}})\n",
        "raised KeyError at {program}:4: 'team'"),
    "an input Pulumi cannot serialize": (
        "import pulumi\n\npulumi.CustomResource('kubernetes:core/v1:ConfigMap', 'owners', "
        "{'apiVersion': 'v1', 'kind': 'ConfigMap', 'data': {'owner': object()}})\n",
        "raised ValueError while registering kubernetes:core/v1:ConfigMap 'owners': unexpected input of type object"),
}


@pytest.mark.parametrize("command", ["render", "check", "verify"])
@pytest.mark.parametrize("case", list(FAILING_REGISTRATIONS))
def test_a_registration_that_fails_after_the_program_returned_is_one_line_naming_the_resource(tmp_path, command, case):
    # Pulumi raises these from its event loop after the program's body returned, wrapped in "While processing
    # resource" layers; they once left the command as a traceback.
    text, expected = FAILING_REGISTRATIONS[case]
    folder, program = project(tmp_path, text)
    outcome = run_cli(*command_args(command, folder))
    assert outcome.code == 2 and not outcome.crashed, outcome.describe()
    assert outcome.err.count("\n") == 1 and outcome.out == "", outcome.describe()
    assert f"the stack program {program} " in outcome.err, outcome.describe()
    assert expected.format(program=program) in outcome.err, outcome.describe()
    assert not (folder / "out").exists()


def test_a_refusal_of_gpu_fabric_inside_an_apply_is_one_line_naming_the_resource_and_the_path(tmp_path):
    # Pulumi keeps only the text of an error raised in an apply (wait_for_rpcs re-raises the registration's
    # ValueError from itself), so the refusal arrives as that text, on one line.
    folder, program = project(tmp_path, PROGRAM + (
        "import pulumi\nfrom gpu_fabric.config.base import ConfigError\n\n"
        "def refuse(_):\n    raise ConfigError([('pools[0].name', 'no such pool')])\n\n"
        "pulumi.CustomResource('kubernetes:core/v1:ConfigMap', 'late', "
        "{'apiVersion': 'v1', 'kind': 'ConfigMap', 'data': {'a': pulumi.Output.from_input(1).apply(refuse)}})\n"))
    outcome = run_cli(*command_args("render", folder))
    assert outcome.code == 2 and not outcome.crashed, outcome.describe()
    assert outcome.err == (f"gpu-fabric: stack seed-rdma: the stack program {program} raised ValueError while registering "
                           "kubernetes:core/v1:ConfigMap 'late': invalid gpu-fabric configuration: pools[0].name: "
                           "no such pool [configuration]\n"), outcome.describe()


def test_a_program_function_that_exits_is_refused_too():
    import sys as _sys

    with pytest.raises(StackProgramError, match=r"exited early \(sys.exit\(4\)\)"):
        render_stack("x", config={}, program=lambda: _sys.exit(4))


@pytest.mark.parametrize("command", ["render", "check", "verify"])
def test_os_exit_cannot_end_the_command(tmp_path, command):
    # In a child process: were the program run in the command's own process, os._exit would end the test run.
    folder, program = project(tmp_path, "import os\nos._exit(0)\n" + PROGRAM)
    run = subprocess.run([sys.executable, "-m", "gpu_fabric.cli", *command_args(command, folder)],
                         capture_output=True, text=True, timeout=300, env=SUBPROCESS_ENV)
    assert run.returncode == 2, run.stdout + run.stderr
    assert run.stdout == "" and run.stderr.count("\n") == 1 and "Traceback" not in run.stderr
    assert f"the stack program {program} exited early (its process ended: exit code 0)" in run.stderr


NOISY = ("print('from the program')\nimport subprocess, sys\n"
         "subprocess.run(['sh', '-c', 'echo from a child process'], check=True)\n"
         "sys.stdout.write('written on sys.stdout\\n')\n") + PROGRAM


@pytest.mark.parametrize("command", ["render", "check"])
def test_what_the_program_prints_goes_to_stderr(tmp_path, command):
    folder, _ = project(tmp_path, NOISY)
    run = subprocess.run([sys.executable, "-m", "gpu_fabric.cli", *command_args(command, folder), "--quiet"],
                         capture_output=True, text=True, timeout=300, env=SUBPROCESS_ENV)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.startswith("stack seed-rdma: ") and "from" not in run.stdout and "written" not in run.stdout
    assert run.stderr.splitlines() == ["from the program", "from a child process", "written on sys.stdout"]


def test_stdout_to_stderr_moves_python_and_descriptor_1_and_restores_them(capfd):
    print("before", flush=True)
    with stdout_to_stderr():
        print("python level")
        subprocess.run(["sh", "-c", "echo descriptor level"], check=True)
    print("after", flush=True)
    captured = capfd.readouterr()
    assert captured.out == "before\nafter\n"
    assert captured.err == "python level\ndescriptor level\n"


def test_an_exit_leaves_nothing_behind_for_the_rest_of_the_process(tmp_path, caplog):
    # The exit's task is never reported as "never retrieved" when collected, and the process parses
    # Python afterwards (Python 3.11's ast bookkeeping broke on that report: "recursion depth mismatch").
    import ast
    import gc

    for index, text in enumerate(["import sys\nsys.exit(0)\n" + PROGRAM, EARLY_EXITS["sys.exit in an apply callback"][0]]):
        folder, _ = project(tmp_path / str(index), text)
        for command in ("render", "check"):
            assert run_cli(*command_args(command, folder)).code == 2
    gc.collect()
    ast.parse(Path(pytest.__file__).with_name("__init__.py").read_text() + PROGRAM * 50)
    ast.parse((Path(ast.__file__)).read_text())
    assert not [record for record in caplog.records if "never retrieved" in record.getMessage()]
