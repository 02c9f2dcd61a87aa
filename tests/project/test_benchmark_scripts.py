"""Every benchmark script still loads: its imports (the test helpers it reuses) resolve as the test tree is laid out.

The figures themselves are the scripts' to print (python benchmarks/<name>.py); a test only guards that a move in
tests/ (helpers into tests/support, tests into folders) does not leave a benchmark that cannot start.
"""

from __future__ import annotations

import json
import runpy
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


def _benchmark(name: str):
    return runpy.run_path(str(PROJECT_DIR / "benchmarks" / f"{name}.py"), run_name="benchmark_under_test")


def test_the_render_lower_bound_registers_every_resource_of_a_render_through_the_sdk_classes(tmp_path):
    # The figure "lower bound: the SDK registering" is only a bound if its program registers what the render did.
    from gpu_fabric.program.render import render_stack

    result = render_stack("aws-efa", PROJECT_DIR)
    listing = tmp_path / "resources.json"
    listing.write_text(json.dumps([{"urn": r.urn, "type": r.type, "name": r.name, "parent": r.parent,
                                    "custom": r.custom, "inputs": r.public_inputs} for r in result.resources]))
    program = tmp_path / "register.py"
    program.write_text(_benchmark("startup_and_render")["sdk_registration_code"](listing))
    done = subprocess.run([sys.executable, str(program), str(listing)], cwd=PROJECT_DIR, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == [str(len(result.resources)), "registered"]
    assert "pulumi_aws.ec2.LaunchTemplate" in program.read_text(), "AWS resources are made from their SDK classes"


def test_the_fleet_floor_is_a_plain_program_that_registers_every_resource(tmp_path):
    listing = tmp_path / "resources.json"
    listing.write_text(json.dumps([
        {"urn": "urn:c", "type": "test:index:Group", "name": "group", "parent": "", "custom": False, "inputs": {}},
        {"urn": "urn:r", "type": "kubernetes:core/v1:ConfigMap", "name": "map", "parent": "urn:c", "custom": True,
         "inputs": {"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "b"}}},
    ]))
    done = subprocess.run([sys.executable, str(PROJECT_DIR / "benchmarks" / "render_fleet.py"), "--bare", str(listing),
                           "--json"], cwd=PROJECT_DIR, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1])["resources"] == 2
