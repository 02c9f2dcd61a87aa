"""``run_policies`` hands every policy of one run the same arguments, as one analyzer call does: same findings."""

from __future__ import annotations

import pytest
from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, StackValidationPolicy

from gpu_fabric.policies import ALL_POLICIES
from gpu_fabric.policies import runner
from gpu_fabric.policies.analyzer_calls import current_scope
from gpu_fabric.policies.engine_wire import stack_resources
from gpu_fabric.program.render import render_stack

from support.policy_helpers import PROJECT_DIR, k8s

STACKS = ("seed-rdma", "aws-efa", "dra-efa", "karpenter-efa")


def seen(violations):
    return [(v.policy, v.enforcement, v.message, v.urn) for v in violations]


@pytest.mark.parametrize("stack", STACKS)
def test_every_policy_finds_in_one_run_what_it_finds_run_alone(stack):
    resources = [r.policy_resource() for r in render_stack(stack, PROJECT_DIR).resources]
    alone = [finding for policy in ALL_POLICIES for finding in seen(runner.run_policy(policy, resources))]
    if stack == "seed-rdma":
        assert alone, "seed-rdma draws a warning, so the runs have a finding to agree on"
    assert seen(runner.run_policies(ALL_POLICIES, resources)) == alone


def test_each_resource_is_copied_once_for_every_policy_of_a_run(monkeypatch):
    resources = [r.policy_resource() for r in render_stack("seed-rdma", PROJECT_DIR).resources]
    copied: list[object] = []
    original = runner._copy
    monkeypatch.setattr(runner, "_copy", lambda value: copied.append(value) or original(value))
    runner.run_policies(ALL_POLICIES, resources)
    stack_policies = sum(isinstance(p, StackValidationPolicy) for p in ALL_POLICIES)
    resource_policies = sum(isinstance(p, ResourceValidationPolicy) for p in ALL_POLICIES)
    assert stack_policies > 1 and resource_policies > 1
    views = [r.props for r in resources] + [r.stack_view.props for r in resources]
    top_level = [value for value in copied if any(value is view for view in views)]
    # once for the stack policies' view and once for the resource policies' view, whatever the number of policies
    assert len(top_level) == 2 * len(resources)


def test_resources_sharing_a_urn_are_each_judged_on_their_own():
    decoded: list[list[str]] = []

    def names(args, report):
        assert current_scope() is None, "a URN twice: no scope keyed by URN is opened"
        decoded.append([r.props["metadata"]["name"] for r in stack_resources(args)])

    policy = StackValidationPolicy("names", "reads every resource's name", names, EnforcementLevel.MANDATORY)
    first = k8s({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "one"}}, name="same")
    second = k8s({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "two"}}, name="same")
    assert first.urn == second.urn
    runner.run_policies([policy, policy], [first, second])
    assert decoded == [["one", "two"], ["one", "two"]]


def test_a_run_inside_an_analyzer_call_uses_that_calls_scope():
    from gpu_fabric.policies.analyzer_calls import call_scope

    with call_scope() as outer:
        with call_scope() as inner:
            assert inner is outer
        assert current_scope() is outer
    assert current_scope() is None


@pytest.mark.parametrize("stack", ["seed-rdma", "aws-efa"])
def test_the_transfer_analysis_and_the_efa_domains_are_made_once_per_run(monkeypatch, stack):
    """Three policies read the operator's transfer analysis and two the EFA domains: one of each per run, the same
    findings as each policy run alone (test_every_policy_finds_in_one_run_what_it_finds_run_alone)."""
    from gpu_fabric.policies import efa_domains, transfer_report

    resources = [r.policy_resource() for r in render_stack(stack, PROJECT_DIR).resources]
    made: list[str] = []
    analyze, domains = transfer_report.analyze, efa_domains.stack_domains
    monkeypatch.setattr(transfer_report, "analyze", lambda *a, **k: made.append("analysis") or analyze(*a, **k))
    monkeypatch.setattr(efa_domains, "stack_domains", lambda r: made.append("domains") or domains(r))
    runner.run_policies(ALL_POLICIES, resources)
    assert sorted(made) == ["analysis", "domains"]
    made.clear()
    runner.run_policies(ALL_POLICIES, resources)  # a new run decides again
    assert sorted(made) == ["analysis", "domains"]
