"""Static types: mypy passes over the package, and catches mistakes in a consumer's component arguments.

Both run ``python -m mypy`` from the environment the README's install created (an editable install
that is a plain path entry), so they also prove that type checkers resolve ``gpu_fabric`` there.
Both share one cache in the checkout (``.mypy_cache``, ignored by git): nearly all of either check is
the analysis of pulumi, pulumi_aws and pulumi_kubernetes, which mypy caches per module and reuses across
the two runs (their options are the same in both), so on a fresh clone only the first run pays for it
(about 80 s on two cores; the second then takes seconds).
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT_DIR = Path(__file__).resolve().parents[2]
MYPY_CACHE = PROJECT_DIR / ".mypy_cache"
"""mypy's default cache of the package check (run in the checkout); the consumer check names it."""


def mypy(*arguments: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    try:
        import mypy as _  # noqa: F401
    except ImportError:
        pytest.fail("mypy is not installed: pip install -e '.[dev]'")
    return subprocess.run([sys.executable, "-m", "mypy", *arguments], cwd=cwd, capture_output=True, text=True,
                          timeout=600)


@pytest.mark.slow
@pytest.mark.xdist_group("mypy-cache")  # one worker, one after the other: the second reuses the cache
def test_the_package_type_checks() -> None:
    result = mypy(cwd=PROJECT_DIR)  # files and options from [tool.mypy] in pyproject.toml
    assert result.returncode == 0, result.stdout + result.stderr


CONSUMER = '''\
import pulumi
import pulumi_aws as aws
from gpu_fabric import EfaNodeGroup, EfaNodeGroupArgs, GpuFabric, KueuePool

role = aws.iam.Role("nodes", assume_role_policy="{}")
subnet = aws.ec2.Subnet("subnet", vpc_id="vpc-1", cidr_block="10.0.0.0/24")
args: EfaNodeGroupArgs = {
    "cluster_name": "ml", "vpc_id": subnet.vpc_id, "subnet_id": subnet.id, "availability_zone": "us-east-1a",
    "node_role_arn": role.arn, "instance_types": ["p5.48xlarge"], "scaling": {"min_size": 1, "max_size": 2},
}
group = EfaNodeGroup("ok", args)
name: pulumi.Output[str] = group.node_group_name
EfaNodeGroup("camel", {**args, "clusterName": "ml"})  # MISTAKE: camelCase key
EfaNodeGroup("missing", {"cluster_name": "ml", "vpc_id": "vpc-1", "instance_types": ["p5.48xlarge"], "availability_zone": "us-east-1a", "node_role_arn": "arn", "scaling": {"min_size": 1, "max_size": 2}})  # MISTAKE: no subnet_id
EfaNodeGroup("scaling", {**args, "scaling": {"min_size": "1", "max_size": 2}})  # MISTAKE: str for int
EfaNodeGroup("plain", {**args, "instance_types": [subnet.id]})  # MISTAKE: Output where plain is required
EfaNodeGroup("output-type", {**args, "cluster_name": pulumi.Output.from_input(3)})  # MISTAKE: Output[int] for Input[str]
KueuePool("queues", {"pool": {"name": "p", "fabric": "efa", "accelerators_per_node": 8, "node_count": 2}, "namespaces": [1]})  # MISTAKE: int namespace
GpuFabric("fabric", {"namespaces": ["team-a"], "pools": [], "queueOwner": "standalone"})  # MISTAKE: camelCase key
count: pulumi.Output[int] = group.node_group_name  # MISTAKE: the name is a str
group.node_group_nam  # MISTAKE: no such output
'''


@pytest.mark.slow
@pytest.mark.xdist_group("mypy-cache")  # one worker, one after the other: the second reuses the cache
def test_mypy_reports_each_mistake_in_a_consumers_component_arguments(tmp_path: Path) -> None:
    program = tmp_path / "consumer.py"
    program.write_text(CONSUMER)
    planted = {number for number, line in enumerate(CONSUMER.splitlines(), start=1) if "# MISTAKE" in line}
    # Outside the checkout: no project configuration, only what the installed package tells mypy.
    result = mypy("--cache-dir", str(MYPY_CACHE), "--no-error-summary", str(program), cwd=tmp_path)
    reported = {int(m.group(1)) for m in re.finditer(r"^consumer\.py:(\d+): error", result.stdout, re.M)}
    assert "Cannot find implementation or library stub" not in result.stdout, result.stdout
    assert reported == planted, result.stdout
