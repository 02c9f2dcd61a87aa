"""``gpu-fabric lint --stack seed-rdma`` over the walkthrough's Step 1 Pod: the pack's queue rule on every workload.

The Pod with the walkthrough's literal ``gpustack-fnv64-<hash>``, a hand-typed queue name, no queue label, or
the stack's LocalQueue in another namespace is refused (exit 1) naming the file, the object, the label's field
path and the rule id -- the very finding the pack's ``kueue-fabric-workload-queue`` reports. ``render`` and
``efa-info --stack`` list the LocalQueue to write.
"""

from __future__ import annotations

import pytest
import yaml

from gpu_fabric.cli import main
from gpu_fabric.gpustack.naming import local_queue_name
from gpu_fabric.policies.kueue import workload_findings
from support.policy_helpers import k8s, rendered
from support.stack_configs import PROJECT_DIR
from support.workloads import QUEUE_LABEL, step1_pod

A10G = "gpustack--nvidia-a10g-linux-amd64"
SEED_QUEUE = local_queue_name(A10G)
LABEL = QUEUE_LABEL
RULE = "kueue-fabric-workload-queue"


CASES = {
    "placeholder": step1_pod("gpustack-fnv64-<hash>"),
    "hand-typed": step1_pod("a10g-queue"),
    "no-label": step1_pod(None),
    "wrong-namespace": step1_pod(SEED_QUEUE, "team-b"),
}


@pytest.fixture(scope="module")
def seed():
    """The seed-rdma stack as the pack sees it."""
    return rendered("seed-rdma")


def lint(capsys, path):
    code = main(["lint", "--stack", "seed-rdma", "--project", str(PROJECT_DIR), str(path)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_careless_step1_pod_is_refused_as_the_pack_refuses_it(capsys, tmp_path, seed, case):
    pod = CASES[case]
    path = tmp_path / "trainer.yaml"
    path.write_text(yaml.safe_dump(pod))
    code, out, err = lint(capsys, path)
    assert code == 1, out + err
    subject = f"Pod {pod['metadata']['namespace']}/trainer-0"
    pack = [finding for _, finding in workload_findings([*seed, k8s(pod)])]
    assert len(pack) == 1
    finding = pack[0]
    assert f"ERROR {path}: {subject} metadata.labels[{LABEL}]: {finding.message} [{RULE}]" in out
    assert "1 errors" not in out and "1 error," in out


def test_the_step1_pod_naming_the_stacks_local_queue_passes(capsys, tmp_path):
    path = tmp_path / "trainer.yaml"
    path.write_text(yaml.safe_dump(step1_pod(SEED_QUEUE)))
    code, out, err = lint(capsys, path)
    assert code == 0, out + err
    assert RULE not in out


def test_a_local_queue_the_files_declare_counts_as_the_pack_counts_it(capsys, tmp_path, seed):
    queue = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
             "metadata": {"name": "trainers", "namespace": "team-a"}, "spec": {"clusterQueue": A10G}}
    path = tmp_path / "trainer.yaml"
    path.write_text(yaml.safe_dump_all([queue, step1_pod("trainers")]))
    code, out, err = lint(capsys, path)
    assert code == 0, out + err
    assert workload_findings([*seed, k8s(queue), k8s(step1_pod("trainers"))]) == []


def test_render_and_efa_info_list_the_local_queue_to_paste(capsys, tmp_path):
    row = f"  team-a     {A10G}  {SEED_QUEUE}"
    assert main(["render", "--stack", "seed-rdma", "--project", str(PROJECT_DIR), "--out", str(tmp_path / "out")]) == 0
    rendered_out = capsys.readouterr().out
    assert f"local queues (label pods with {LABEL}: <local-queue>):" in rendered_out and row in rendered_out
    assert main(["render", "--stack", "seed-rdma", "--project", str(PROJECT_DIR), "--out", str(tmp_path / "out")]) == 0
    assert capsys.readouterr().out == rendered_out  # deterministic
    assert main(["efa-info", "--offline", "--stack", "seed-rdma", "--project", str(PROJECT_DIR)]) == 0
    assert row in capsys.readouterr().out

