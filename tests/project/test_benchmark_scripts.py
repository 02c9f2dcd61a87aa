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


PLAIN_REGISTRATION = PROJECT_DIR / "benchmarks" / "plain_registration.py"


def _registered(listing, *options: str) -> int:
    done = subprocess.run([sys.executable, str(PLAIN_REGISTRATION), str(listing), *options], cwd=PROJECT_DIR,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])["resources"]


def test_the_render_lower_bound_registers_every_resource_of_a_render_through_the_sdk_classes(tmp_path):
    # The figure "lower bound: the SDK registering" is only a bound if its program registers what the render did.
    import importlib

    from gpu_fabric.cli.render import RESOURCES_FILE, rendered_files
    from gpu_fabric.program.render import render_stack

    result = render_stack("aws-efa", PROJECT_DIR)
    listing = tmp_path / RESOURCES_FILE
    listing.write_text(rendered_files(result)[RESOURCES_FILE])  # the file the benchmark reads, as a render writes it
    assert _registered(listing, "--typed") == len(result.resources)
    class_path = runpy.run_path(str(PLAIN_REGISTRATION), run_name="benchmark_under_test")["class_path"]
    paths = {class_path(r.type) for r in result.resources if r.custom}
    assert "pulumi_aws.ec2.LaunchTemplate" in paths, "AWS resources are made from their SDK classes"
    for path in paths:
        module, _, name = path.rpartition(".")
        assert hasattr(importlib.import_module(module), name), path


def test_the_fleet_floor_is_a_plain_program_that_registers_every_resource(tmp_path):
    listing = tmp_path / "resources.json"
    listing.write_text(json.dumps([
        {"urn": "urn:c", "type": "test:index:Group", "name": "group", "parent": "", "custom": False, "inputs": {}},
        {"urn": "urn:r", "type": "kubernetes:core/v1:ConfigMap", "name": "map", "parent": "urn:c", "custom": True,
         "inputs": {"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "b"}}},
    ]))
    assert _registered(listing) == 2
    assert _registered(listing, "--paused") == 2
