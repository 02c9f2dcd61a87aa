"""The ``dra-device-claims`` policy: the DRA rules over a stack's Kubernetes objects."""

from __future__ import annotations

from support.dra_objects import aligned_spec, claim_template, job, pod
from support.policy_helpers import assert_metadata, assert_no_violations, assert_violation, k8s, run

from gpu_fabric.policies import dra_device_claims


def test_metadata_and_example_stacks_pass(seed, aws_efa):
    assert_metadata(dra_device_claims)
    assert_no_violations(dra_device_claims, seed)
    assert_no_violations(dra_device_claims, aws_efa)


def test_a_host_network_job_with_a_dranet_claim_is_refused_on_the_job():
    workload = k8s(job(host_network=True))
    violation = assert_violation(dra_device_claims, [k8s(claim_template("gpu-efa", aligned_spec())), workload],
                                 "Job team-a/train: spec.template.spec.hostNetwork: hostNetwork: true", urn=workload.urn)
    assert "can not claim host devices" in violation.message


def test_a_claim_naming_a_template_the_stack_does_not_render_is_refused_only_when_it_renders_templates():
    template = k8s(claim_template("gpu-efa", aligned_spec()))
    workload = k8s(pod(templates=("gpu-efa-typo",)))
    assert_violation(dra_device_claims, [template, workload], "names ResourceClaimTemplate gpu-efa-typo", urn=workload.urn)
    assert run(dra_device_claims, [workload]) == []  # the stack renders no template: another program may
    assert run(dra_device_claims, [template, k8s(pod())]) == []


def test_the_pack_reads_the_dra_pools_layout_and_queues_from_the_stack():
    """Over the dra-efa render: a template over two GPUs' roots in a queued namespace is refused twice over."""
    from support.dra_objects import aligned_spec, claim_template

    from gpu_fabric.policies.dra import findings_of
    from gpu_fabric.plan.resource_view import Resource
    from gpu_fabric.program.render import render_stack
    from support.stack_configs import PROJECT_DIR

    stack = [Resource(r.type, r.name, r.urn, r.policy_inputs, r.parent, r.dependencies)
             for r in render_stack("dra-efa", PROJECT_DIR).resources]
    assert findings_of(stack) == []
    wide = claim_template("wide", aligned_spec(gpus=2, efas=4))
    # All takes no count (validation.go validateDeviceAllocationMode): with one it is a malformed shape.
    wide["spec"]["spec"]["devices"]["requests"][0]["exactly"]["allocationMode"] = "All"
    del wide["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"]
    planted = Resource("kubernetes:resource.k8s.io/v1:ResourceClaimTemplate", "wide",
                       "urn:pulumi:dra-efa::gpu-fabric::kubernetes:resource.k8s.io/v1:ResourceClaimTemplate::wide", wide)
    rules = sorted(finding.rule_id for _, finding in findings_of([*stack, planted]))
    assert rules == ["dra-kueue-request-mode", "dra-pcie-root-capacity"]
