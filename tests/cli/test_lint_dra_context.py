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


TEAM_A_QUEUE = "gpustack-fnv64-8a2d51703a4ae24e"
"""team-a's LocalQueue of the p5en-h200 pool."""


def on_the_pool(manifest):
    """``manifest`` tolerating the pool's taint and naming team-a's LocalQueue, as a fabric workload must."""
    manifest["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": TEAM_A_QUEUE}
    manifest["spec"]["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    return manifest


def test_the_stacks_own_template_and_an_aligned_one_pass(capsys, tmp_path):
    code, out = lint(capsys, tmp_path, on_the_pool(pod(templates=("p5en-h200-8gpu",))))
    assert code == 0, out
    code, out = lint(capsys, tmp_path, claim_template("one-root", aligned_spec(gpus=1, efas=2)),
                     on_the_pool(pod(templates=("one-root",))))
    assert code == 0, out


def test_a_pod_naming_a_template_nobody_renders_is_refused(capsys, tmp_path):
    code, out = lint(capsys, tmp_path, pod(templates=("p5en-h200-4gpu",)))
    assert code == 1 and "[dra-claim-template-rendered]" in out and "p5en-h200-4gpu" in out


def test_first_available_and_unmapped_classes_are_refused_where_kueue_admits(capsys, tmp_path):
    prioritized = {"devices": {"requests": [{"name": "gpu", "firstAvailable": [
        {"name": "eight", "deviceClassName": GPU_CLASS, "count": 8},
        {"name": "four", "deviceClassName": GPU_CLASS, "count": 4}]}]}}
    code, out = lint(capsys, tmp_path, claim_template("fallback", prioritized), pod(templates=("fallback",)))
    assert code == 2 and "[dra-kueue-request-mode]" in out  # Kueue refuses it anyway: unusable input, as the registry has it
    unmapped = claim_spec([request("nic", "dranet.net", 1)])
    code, out = lint(capsys, tmp_path, claim_template("nic", unmapped), pod(templates=("nic",)))
    assert code == 1 and "[dra-kueue-device-class-mapped]" in out and "dranet.net" in out


def test_outside_the_queued_namespaces_kueue_rules_do_not_decide(capsys, tmp_path):
    unmapped = claim_spec([request("nic", "dranet.net", 1)])
    code, out = lint(capsys, tmp_path, claim_template("nic", unmapped, namespace="batch"),
                     pod(templates=("nic",), namespace="batch"))
    assert "[dra-kueue-device-class-mapped]" not in out


# -- issue 36: a workload judged against the stack it lands on, with the stack's own templates -----------------


def test_a_host_network_pod_on_the_stacks_own_template_is_refused_with_the_stack_alone(capsys, tmp_path):
    code, out = lint(capsys, tmp_path, on_the_pool(pod(templates=("p5en-h200-1gpu",), host_network=True)))
    assert code == 1 and "[dra-dranet-host-network]" in out and "Pod team-a/trainer: spec.hostNetwork" in out


def test_a_job_claiming_through_the_stacks_template_without_a_queue_is_refused(capsys, tmp_path):
    from support.dra_objects import job

    unqueued = job(templates=("p5en-h200-8gpu",))
    unqueued["spec"]["template"]["spec"]["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists"}]
    code, out = lint(capsys, tmp_path, unqueued)
    assert code == 1 and "[kueue-fabric-workload-queue]" in out
    assert "requests efa.networking.k8s.aws, gpu.nvidia.com but has no kueue.x-k8s.io/queue-name" in out
    assert TEAM_A_QUEUE in out


def test_two_whole_node_claims_in_one_pod_never_fit_a_node(capsys, tmp_path):
    code, out = lint(capsys, tmp_path, on_the_pool(pod(templates=("p5en-h200-8gpu", "p5en-h200-8gpu"))))
    assert code == 1 and "[workload-node-capacity]" in out
    assert "asks for 16 gpu.nvidia.com in all" in out and "one node of pool p5en-h200 (p5en.48xlarge) has 8" in out


def test_a_claiming_deployment_without_the_pools_toleration_is_a_finding_not_a_pass(capsys, tmp_path):
    template = pod(templates=("p5en-h200-8gpu",))
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment",
                  "metadata": {"name": "vllm", "namespace": "team-a",
                               "labels": {"kueue.x-k8s.io/queue-name": TEAM_A_QUEUE}},
                  "spec": {"selector": {"matchLabels": {"app": "vllm"}},
                           "template": {"metadata": {"labels": {"app": "vllm"}}, "spec": template["spec"]}}}
    code, out = lint(capsys, tmp_path, deployment)
    assert code == 1 and "NOT JUDGED" not in out
    assert ("Deployment team-a/vllm spec.template.spec.tolerations: asks for the fabric (claim 'claim-0' "
            "(ResourceClaimTemplate p5en-h200-8gpu: efa.networking.k8s.aws, gpu.nvidia.com), LocalQueue "
            f"{TEAM_A_QUEUE}) but lands on no pool of the stack (pool p5en-h200: taint nvidia.com/gpu:NoSchedule is not "
            "tolerated)") in out
