"""The conformance corpus's engine subset: ``pulumi preview --policy-pack policy`` reaching each case's verdict.

Every case of ``tests/conformance/cases`` marked ``engine: true`` (at least one refusing case per policy the real
engine can reach here: ``tests/conformance/test_conformance.py``) runs under the real engine against a throwaway
control plane: a stack-file case as its own stack of a copy of this project, a manifests case as a team's program
that runs the same stack and registers each of the team's objects as its typed resource (the SDK's class, or a
``CustomResource`` for a CRD's kind), so the pack sees them as the engine registers a program's own resources. The preview must fail, and
its output must carry the rule's ``[id]`` and the case's field path, as ``render``, ``check`` and ``lint`` do.

All cases share one control plane and one project (each case is a stack of its own), so the subset costs one
control-plane start and one preview per case.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from e2e.engine import ROOT, ControlPlane, PulumiWorkspace, output_of

sys.path.insert(0, str(ROOT / "tests" / "conformance"))
from corpus import Case, load_cases  # noqa: E402

ENGINE_CASES = [case for case in load_cases() if case.engine]

TEAM_PROGRAM = '''\
"""The stack, plus the objects a team registers beside it (workloads-<stack>.json, when the stack has one)."""
import json
import re
from pathlib import Path

import pulumi
import pulumi_kubernetes as k8s

from gpu_fabric.program.stack import build_stack


def resource_class(api_version, kind):
    """The SDK's typed class of a kind (``core/v1`` Pod, ``apps/v1`` DaemonSet), or ``None`` for a CRD's kind."""
    group, _, version = api_version.rpartition("/")
    module = getattr(k8s, group.split(".")[0] if group else "core", None)
    return getattr(getattr(module, version, None), kind, None)


build_stack()
objects = Path(__file__).parent / f"workloads-{pulumi.get_stack()}.json"
for index, manifest in enumerate(json.loads(objects.read_text()) if objects.exists() else []):
    # Each object registered as its typed resource by this program, as a team's own program would: its inputs
    # are serialized by the SDK (a non-finite number stays a number), and the pack sees its type and fields.
    fields = {re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower(): value for key, value in manifest.items()
              if key not in ("apiVersion", "kind")}
    cls = resource_class(manifest["apiVersion"], manifest["kind"])
    if cls is None:
        k8s.apiextensions.CustomResource(f"team-{index}", api_version=manifest["apiVersion"], kind=manifest["kind"],
                                         **fields)
    else:
        cls(f"team-{index}", **fields)
'''


def program_crashed(text: str) -> bool:
    """A traceback through gpu-fabric or the program: a crash, not a refusal. (When a mandatory policy fails the
    preview, the engine may stop the Python language host while its executor winds down, which prints a traceback of
    the host's own ``pulumi-language-python-exec``: that is Pulumi's shutdown, not the program's failure.)"""
    for block in text.split("Traceback (most recent call last):")[1:]:
        frames = [line for line in block.splitlines() if 'File "' in line]
        if any("gpu_fabric" in frame or "__main__.py" in frame for frame in frames):
            return True
    return False


@pytest.fixture(scope="module")
def project(engine_bin: Path, tmp_path_factory):
    """One copy of this project, its program extended to register a team's objects, on one control plane."""
    scratch = tmp_path_factory.mktemp("conformance")
    plane = ControlPlane.start(scratch / "plane", engine_bin)
    try:
        workspace = PulumiWorkspace.copy_of(ROOT, scratch / "project", engine_bin, plane.kubeconfig, scratch)
        (workspace.project / "stacks" / "__main__.py").write_text(TEAM_PROGRAM)
        yield workspace
    finally:
        plane.stop()


@pytest.mark.parametrize("case", [pytest.param(case, id=case.id) for case in ENGINE_CASES])
def test_pulumi_preview_with_the_pack_reaches_the_cases_verdict(project: PulumiWorkspace, case: Case) -> None:
    stack = f"case-{ENGINE_CASES.index(case)}"
    stacks = project.project / "stacks"
    (stacks / f"Pulumi.{stack}.yaml").write_text(yaml.safe_dump(case.stack_document(), sort_keys=False))
    if case.manifests:
        (stacks / f"workloads-{stack}.json").write_text(json.dumps(list(case.manifests)))
    project.stack_init(stack)
    done = project.pulumi("preview", "--stack", stack, "--policy-pack", str(project.project / "policy"))
    text = done.stdout + done.stderr
    assert not program_crashed(text), output_of(done)
    if case.verdict == "refuses":
        assert done.returncode != 0, output_of(done)
        assert f"[{case.rule}]" in text, output_of(done)
        if case.path:
            assert case.path in text, output_of(done)
    else:
        assert done.returncode == 0, output_of(done)
        assert (f"[{case.rule}]" in text) == (case.verdict == "warns"), output_of(done)
