"""Running gpu-fabric as a user does, and telling a clean refusal from an acceptance or a crash.

The table test (``test_bad_input.py``) and the fuzz test (``test_fuzz_inputs.py``) share this: a
stack file or a manifest goes in, the command line runs in-process, and the outcome is one of
``ok`` (exit 0), ``refused`` (the expected exit code, one message naming what is wrong, no
traceback) or ``crash`` (an exception escaped, or a traceback was printed).
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from support.stack_configs import PROJECT_DIR, stack_document  # noqa: F401 - stack_document: tests import it from here too


@dataclass(frozen=True)
class Outcome:
    """What one run of the command line did."""

    code: int | None
    """Exit code, or ``None`` when an exception escaped ``main``."""
    out: str
    err: str

    @property
    def crashed(self) -> bool:
        return self.code is None or "Traceback" in self.out + self.err

    def describe(self) -> str:
        return f"exit {self.code}\n--- stdout\n{self.out[-3000:]}\n--- stderr\n{self.err[-3000:]}"


def run_cli(*args: str, cwd: Path | str | None = None) -> Outcome:
    """``gpu-fabric ARGS`` in this process (from ``cwd`` when given); an escaping exception becomes
    ``code=None`` with its traceback.

    The exit code is the one the console script's process would end with: ``main``'s return value, or
    a ``SystemExit``'s code as Python turns it into one (``None`` is 0; any other object is printed to
    stderr and is 1). Tests of the console script itself (start-up, a closed pipe, two processes
    rendering byte-identical files) start it as a process instead.
    """
    from gpu_fabric.cli import main

    out, err = io.StringIO(), io.StringIO()
    code: int | None
    previous = os.getcwd()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            if cwd is not None:
                os.chdir(cwd)
            code = main(list(args))
        except SystemExit as exit_:
            code = _exit_status(exit_.code, err)
        except Exception:  # noqa: BLE001 - a crash is exactly what we are looking for
            code = None
            err.write(traceback.format_exc())
        finally:
            os.chdir(previous)
    return Outcome(code, out.getvalue(), err.getvalue())


def _exit_status(code: object, stderr: io.StringIO) -> int:
    """The status a process ends with on ``SystemExit(code)`` (Python's own rules, ``Py_Exit``)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=stderr)
    return 1


def project_with(tmp: Path, stack_file: bytes | str, name: str = "x") -> Path:
    """A project folder holding the stack program and one stack file with these exact bytes."""
    stacks = tmp / "stacks"
    stacks.mkdir(parents=True, exist_ok=True)
    shutil.copy(PROJECT_DIR / "stacks" / "__main__.py", stacks / "__main__.py")
    data = stack_file.encode() if isinstance(stack_file, str) else stack_file
    (stacks / f"Pulumi.{name}.yaml").write_bytes(data)
    return tmp


def render_file(tmp: Path, stack_file: bytes | str, command: str = "render") -> Outcome:
    """``gpu-fabric render`` (or ``check``) of a project whose only stack file has these bytes."""
    project = project_with(tmp, stack_file)
    extra = ["--out", str(tmp / "out")] if command == "render" else []
    return run_cli(command, "--project", str(project), "--stack", "x", *extra)


def dump(document: Any) -> str:
    """YAML text of a stack document (keys in insertion order)."""
    # libyaml's emitter where PyYAML has it: a third of the time, and the text only has to carry the data
    # (rows that test the text itself are written out by hand).
    return yaml.dump(document, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), sort_keys=False)
