"""``gpu-fabric efa-info`` through the installed console script, against moto's server on loopback."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


def _load_moto_helper():
    spec = importlib.util.spec_from_file_location("_gpu_fabric_tests_moto_server", Path(__file__).resolve().parents[1] / "support" / "moto_server.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


moto_helper = _load_moto_helper()

# The console script installed next to the interpreter running the tests (the project venv).
CONSOLE_SCRIPT = Path(sys.executable).with_name("gpu-fabric")
if not CONSOLE_SCRIPT.exists():
    CONSOLE_SCRIPT = Path(shutil.which("gpu-fabric") or CONSOLE_SCRIPT)


@pytest.fixture(scope="module")
def moto_endpoint():
    with moto_helper.start_moto_server() as endpoint:
        yield endpoint


def run_cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([str(CONSOLE_SCRIPT), "efa-info", *args], env=env, capture_output=True, text=True, timeout=120)


def efa_interface_counts(stdout: str) -> dict[str, str]:
    """``{instance type: "EFA interfaces" value}`` from the printed tables."""
    counts: dict[str, str] = {}
    current = None
    for line in stdout.splitlines():
        if line and not line.startswith(" ") and re.fullmatch(r"[a-z0-9.-]+", line):
            current = line
        match = re.match(r"\s+EFA interfaces\s+(\d+)", line)
        if match and current:
            counts[current] = match.group(1)
    return counts


def test_efa_info_against_ec2(moto_endpoint, tmp_path):
    env = moto_helper.isolated_aws_environment(tmp_path, credentials=True, endpoint_url=moto_endpoint)
    result = run_cli("p5.48xlarge", "p6-b300.48xlarge", "g5.xlarge", env=env)
    assert result.returncode == 0, result.stderr
    assert "Source: EC2 DescribeInstanceTypes (us-east-1)" in result.stdout
    assert "bundled" not in result.stdout
    assert efa_interface_counts(result.stdout) == {"p5.48xlarge": "32", "p6-b300.48xlarge": "16", "g5.xlarge": "0"}
    g5_section = result.stdout.split("g5.xlarge", 1)[1]
    assert re.search(r"EFA supported\s+no", g5_section)
    assert "Planned layout" not in g5_section
    b300_section = result.stdout.split("p6-b300.48xlarge", 1)[1].split("g5.xlarge", 1)[0]
    rows = re.findall(r"^\s+(\d+)\s+(\d+)\s+(interface|efa|efa-only)$", b300_section, flags=re.MULTILINE)
    assert rows[0] == ("0", "0", "interface")
    assert [row for row in rows if row[0] == "0"] == [("0", "0", "interface")]
    assert len([row for row in rows if row[2] == "efa-only"]) == 16


def test_unknown_type_exits_2_naming_it(moto_endpoint, tmp_path):
    env = moto_helper.isolated_aws_environment(tmp_path, credentials=True, endpoint_url=moto_endpoint)
    result = run_cli("p5.48xlarge", "p9.imaginary", env=env)
    assert result.returncode == 2
    assert "p9.imaginary" in result.stderr
    assert result.stdout == ""


def test_without_credentials_falls_back_to_the_bundled_table(tmp_path):
    env = moto_helper.isolated_aws_environment(tmp_path, credentials=False)
    result = run_cli("p5.48xlarge", "hpc6id.32xlarge", env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Using the bundled instance table: no AWS credentials found")
    assert efa_interface_counts(result.stdout) == {"p5.48xlarge": "32", "hpc6id.32xlarge": "2"}


def test_offline_unknown_type_exits_2(tmp_path):
    env = moto_helper.isolated_aws_environment(tmp_path, credentials=False)
    result = run_cli("--offline", "nope.large", env=env)
    assert result.returncode == 2
    assert "nope.large" in result.stderr
