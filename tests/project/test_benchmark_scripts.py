"""Every benchmark script still loads: its imports (the test helpers it reuses) resolve as the test tree is laid out.

The figures themselves are the scripts' to print (python benchmarks/<name>.py); a test only guards that a move in
tests/ (helpers into tests/support, tests into folders) does not leave a benchmark that cannot start.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from support.policy_helpers import PROJECT_DIR

SCRIPTS = sorted((PROJECT_DIR / "benchmarks").glob("*.py"))

# Loads the script as a module that is not __main__: its imports run, its main() does not.
LOAD = "import runpy, sys; runpy.run_path(sys.argv[1], run_name='benchmark_import_check')"


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda path: Path(path).stem)
def test_the_benchmark_script_loads(script):
    done = subprocess.run([sys.executable, "-c", LOAD, str(script)], cwd=PROJECT_DIR, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def test_every_benchmark_is_checked():
    assert {path.stem for path in SCRIPTS} >= {"startup_and_render", "render_fleet", "verify_fleet", "bad_input_census"}
