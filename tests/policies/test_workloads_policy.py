"""The ``fabric-workloads`` policies (mandatory and advisory): the workload rules of ``lint --stack`` over a stack's workload resources."""

import copy

from gpu_fabric.policies.workloads import fabric_workloads, fabric_workloads_advisory

from support.policy_helpers import assert_metadata, assert_no_violations, assert_violation, component, k8s
from support.stack_configs import stack_values
from support.workloads import pod_spec, wrap, with_container


def _kueue_pools():
    return [component("gpu-fabric:index:KueuePool", {"pool": pool}, pool["name"]) for pool in stack_values("aws-efa")["pools"]]


def test_the_pack_applies_the_same_rules_to_workload_resources():
    assert_metadata(fabric_workloads)
    assert_metadata(fabric_workloads_advisory, enforcement=fabric_workloads_advisory.enforcement_level)
    wrong = pod_spec()
    del wrong["containers"][0]["resources"]["limits"]["hugepages-2Mi"]
    deployment = k8s(wrap("Deployment", wrong))
    assert_violation(fabric_workloads, [*_kueue_pools(), deployment], "without hugepages-2Mi", urn=deployment.urn)
    assert_no_violations(fabric_workloads, [*_kueue_pools(), k8s(wrap("Deployment", pod_spec()))])
    dead = k8s(wrap("StatefulSet", with_container(env=[{"name": "NCCL_IB_HCA", "value": "x"}])))
    assert_violation(fabric_workloads_advisory, [*_kueue_pools(), dead], "does not configure NixlConnector")
    assert_no_violations(fabric_workloads, [*_kueue_pools(), copy.deepcopy(dead)])


def test_the_pack_judges_a_programs_workload_against_the_dra_stack_it_lands_on():
    """Issue 36 over the dra-efa render: claimed devices against a node, no pool tolerated, the queue over claims."""
    from support.dra_objects import pod
    from support.stack_configs import PROJECT_DIR

    from gpu_fabric.policies import kueue as kueue_policy
    from gpu_fabric.plan.resource_view import Resource
    from gpu_fabric.policies.workloads import workload_findings
    from gpu_fabric.program.render import render_stack

    stack = [Resource(r.type, r.name, r.urn, r.policy_inputs, r.parent, r.dependencies)
             for r in render_stack("dra-efa", PROJECT_DIR).resources]

    def planted(manifest):
        return Resource("kubernetes:core/v1:Pod", manifest["metadata"]["name"],
                        f"urn:pulumi:dra-efa::gpu-fabric::kubernetes:core/v1:Pod::{manifest['metadata']['name']}", manifest)

    two = pod("two", templates=("p5en-h200-8gpu", "p5en-h200-8gpu"))
    two["spec"]["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists"}]
    untolerated = pod("untolerated", templates=("p5en-h200-1gpu",))
    found = sorted({(f.subject.name, f.rule_id) for _, f in workload_findings([*stack, planted(two), planted(untolerated)])})
    assert found == [("two", "workload-node-capacity"), ("untolerated", "workload-lands-on-no-pool")]
    queue = sorted(f.subject.name for _, f in kueue_policy.workload_findings([*stack, planted(two)]))
    assert queue == ["two"]
