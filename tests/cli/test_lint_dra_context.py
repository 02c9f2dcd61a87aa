"""``gpu-fabric lint --stack dra-efa``: the DRA rules that need what the stack states (layouts, queues, templates).

The context comes from the configuration (:func:`gpu_fabric.plan.dra_pools.config_dra_context`): the p5en pool's
PCIe layout (1 GPU and 2 EFA per root), team-a's LocalQueue and Kueue's mapping of the standalone ClusterQueues,
and the templates the stack renders (``p5en-h200-1gpu``, ``p5en-h200-8gpu``).
"""

from __future__ import annotations

import yaml
from support.dra_objects import EFA_CLASS, GPU_CLASS, aligned_spec, claim_spec, claim_template, pod, request

from gpu_fabric.cli import main
from gpu_fabric.plan.dra_pools import config_dra_context
from support.stack_configs import PROJECT_DIR


def lint(capsys, tmp_path, *documents, stack="dra-efa"):
    path = tmp_path / "dra.yaml"
    path.write_text(yaml.safe_dump_all(documents))
    code = main(["lint", "--stack", stack, "--project", str(PROJECT_DIR), str(path)])
    return code, capsys.readouterr().out


def test_the_stack_states_layout_queues_mapping_and_templates():
    context = config_dra_context(_dra_efa())("team-a")
    assert dict(context.per_root_counts) == {GPU_CLASS: 1, EFA_CLASS: 2}
    assert context.kueue_managed and context.mapped_device_classes == {GPU_CLASS, EFA_CLASS}
    assert ("team-a", "p5en-h200-8gpu") in context.rendered_templates
    elsewhere = config_dra_context(_dra_efa())("no-queue-here")
    assert not elsewhere.kueue_managed and elsewhere.mapped_device_classes is None


def _dra_efa():
    from gpu_fabric.cli.lint_workloads import _stack_config

    return _stack_config("dra-efa", PROJECT_DIR)


def test_a_pcie_root_constraint_over_more_than_a_root_holds_is_refused(capsys, tmp_path):
    code, out = lint(capsys, tmp_path, claim_template("two-gpus", aligned_spec(gpus=2, efas=4)), pod(templates=("two-gpus",)))
    assert code == 1 and "[dra-pcie-root-capacity]" in out and "ResourceClaimTemplate team-a/two-gpus" in out


def test_the_stacks_own_template_and_an_aligned_one_pass(capsys, tmp_path):
    code, out = lint(capsys, tmp_path, pod(templates=("p5en-h200-8gpu",)))
    assert code == 0, out
    code, out = lint(capsys, tmp_path, claim_template("one-root", aligned_spec(gpus=1, efas=2)), pod(templates=("one-root",)))
    assert code == 0, out


def test_a_pod_naming_a_template_nobody_renders_is_refused(capsys, tmp_path):
    code, out = lint(capsys, tmp_path, pod(templates=("p5en-h200-4gpu",)))
    assert code == 1 and "[dra-claim-template-rendered]" in out and "p5en-h200-4gpu" in out


def test_first_available_and_unmapped_classes_are_refused_where_kueue_admits(capsys, tmp_path):
    prioritized = {"devices": {"requests": [{"name": "gpu", "firstAvailable": [
        {"name": "eight", "deviceClassName": GPU_CLASS, "count": 8},
        {"name": "four", "deviceClassName": GPU_CLASS, "count": 4}]}]}}
    code, out = lint(capsys, tmp_path, claim_template("fallback", prioritized), pod(templates=("fallback",)))
    assert code == 1 and "[dra-kueue-request-mode]" in out
    unmapped = claim_spec([request("nic", "dranet.net", 1)])
    code, out = lint(capsys, tmp_path, claim_template("nic", unmapped), pod(templates=("nic",)))
    assert code == 1 and "[dra-kueue-device-class-mapped]" in out and "dranet.net" in out


def test_outside_the_queued_namespaces_kueue_rules_do_not_decide(capsys, tmp_path):
    unmapped = claim_spec([request("nic", "dranet.net", 1)])
    code, out = lint(capsys, tmp_path, claim_template("nic", unmapped, namespace="batch"),
                     pod(templates=("nic",), namespace="batch"))
    assert "[dra-kueue-device-class-mapped]" not in out
