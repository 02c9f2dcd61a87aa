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


def _a_mistake_of_each_severity():
    wrong = pod_spec()
    del wrong["containers"][0]["resources"]["limits"]["hugepages-2Mi"]
    dead = with_container(env=[{"name": "NCCL_IB_HCA", "value": "x"}])
    return [*_kueue_pools(), k8s(wrap("Deployment", wrong), name="wrong"), k8s(wrap("StatefulSet", dead), name="dead")]


def _counting_judgements(monkeypatch) -> list[int]:
    from gpu_fabric.policies import workloads

    judged: list[int] = []
    original = workloads.workload_findings
    monkeypatch.setattr(workloads, "workload_findings", lambda resources: judged.append(len(resources)) or original(resources))
    return judged


def _seen(violations):
    return [(v.policy, v.enforcement, v.message, v.urn) for v in violations]


def test_both_policies_report_one_judgement_of_a_run(monkeypatch):
    """The mandatory and the advisory policy report the errors and the warnings of one judgement per run."""
    from gpu_fabric.policies import runner

    resources = _a_mistake_of_each_severity()
    alone = _seen(runner.run_policy(fabric_workloads, resources) + runner.run_policy(fabric_workloads_advisory, resources))
    assert {v[0] for v in alone} == {"fabric-workloads", "fabric-workloads-advisory"}
    judged = _counting_judgements(monkeypatch)
    assert _seen(runner.run_policies([fabric_workloads, fabric_workloads_advisory], resources)) == alone
    assert judged == [len(resources)]
    # The next run, over other resources, is judged again: nothing outlives a run.
    fewer = resources[:-1]
    assert _seen(runner.run_policies([fabric_workloads, fabric_workloads_advisory], fewer)) == _seen(
        runner.run_policy(fabric_workloads, fewer) + runner.run_policy(fabric_workloads_advisory, fewer))
    assert judged[:2] == [len(resources), len(fewer)]


def test_the_served_pack_judges_the_workloads_once_per_analyze_stack_call(monkeypatch):
    from gpu_fabric.policies.analyzer_calls import share_decoding_per_call
    from gpu_fabric.policies.over_grpc import analyze_stack_request, served_pack

    resources = _a_mistake_of_each_severity()
    share_decoding_per_call()
    judged = _counting_judgements(monkeypatch)
    with served_pack() as stub:
        first = stub.AnalyzeStack(analyze_stack_request(resources))
        second = stub.AnalyzeStack(analyze_stack_request(resources))
    assert judged == [len(resources), len(resources)]
    assert {d.policyName for d in first.diagnostics} >= {"fabric-workloads", "fabric-workloads-advisory"}
    assert list(first.diagnostics) == list(second.diagnostics)
