"""The ready pack describes its policies before importing them (issue 39), and says exactly what the policies say."""

from __future__ import annotations

import subprocess
import sys

from google.protobuf import empty_pb2

from gpu_fabric.policies import ALL_POLICIES, PACK_SETTINGS
from gpu_fabric.policies.engine_wire import AnalyzerServicer
from gpu_fabric.policies.served_pack import POLICIES_FILE, policies_file_text, served_policies

from support.policy_helpers import PROJECT_DIR


def _analyzer_info(policies):
    settings = dict(PACK_SETTINGS)
    servicer = AnalyzerServicer(settings.pop("name"), "0.0.1", list(policies), settings.pop("enforcement_level"),
                                None, settings.pop("description"), "gpu-fabric", None, settings.pop("provider"),
                                settings.pop("tags"), None)
    return servicer.GetAnalyzerInfo(empty_pb2.Empty(), None)


def test_the_committed_policies_file_is_what_the_policies_say():
    assert POLICIES_FILE.read_text(encoding="utf-8") == policies_file_text(list(ALL_POLICIES)), (
        "stale: run python scripts/generate_pack_policies.py")


def test_the_engine_is_told_the_same_of_the_served_policies_as_of_the_real_ones():
    served, real = _analyzer_info(served_policies()), _analyzer_info(ALL_POLICIES)
    assert [policy.name for policy in served.policies] == [policy.name for policy in ALL_POLICIES]
    assert served == real


def _modules_of(probe: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", probe], cwd=PROJECT_DIR / "policy", capture_output=True, text=True,
                         check=True, timeout=120).stdout
    return out.split()


RULE_MODULES = ("gpu_fabric.policies.all_policies", "gpu_fabric.policies.dra", "gpu_fabric.config.fabric",
                "gpu_fabric.kube.workloads", "gpu_fabric.plan.resource_view")


def test_the_pack_serves_before_it_imports_any_rule():
    # policy/__main__.py as the engine runs it, up to PolicyPack (which would serve forever), with the
    # background import held back: what is imported then is what the handshake waits for.
    served = _modules_of(
        "import sys, runpy, pulumi_policy, gpu_fabric.policies.served_pack as served\n"
        "served.import_policies_in_background = lambda: None\n"
        "pulumi_policy.PolicyPack = lambda **kwargs: print(*sorted(sys.modules))\n"
        "runpy.run_path('__main__.py', run_name='__main__')\n")
    assert "gpu_fabric.policies.served_pack" in served
    assert not [name for name in RULE_MODULES if name in served]


def test_the_background_import_brings_every_policy():
    imported = _modules_of(
        "import sys\n"
        "from gpu_fabric.policies.served_pack import import_policies_in_background\n"
        "import_policies_in_background().join()\n"
        "print(*sorted(sys.modules))\n")
    assert all(name in imported for name in RULE_MODULES)
