"""End to end: the pack in ``policy/`` served over the analyzer gRPC protocol, driven as the engine drives it.

The engine starts the pack's program with the pack folder as working directory, reads the port it
prints on stdout, then calls ``GetAnalyzerInfo``, ``Analyze`` (one resource, its inputs as a
protobuf ``Struct``: every number a double, unknowns as sentinel strings) and ``AnalyzeStack``.
"""

from __future__ import annotations

import copy

import yaml
from google.protobuf import empty_pb2
from pulumi.runtime.proto import analyzer_pb2

from gpu_fabric.aws.node_group import launch_template_inputs
from gpu_fabric.gpustack.objects import model_deployment
from gpu_fabric.aws.catalog.bundled import BundledInstanceCatalog
from gpu_fabric.aws.efa import PlannedInterface, plan_interfaces
from gpu_fabric.config.serving import ModelDeploymentSpec
from gpu_fabric.gpustack.transfer_legs import MSG_NO_FABRIC_LEG

from support.policy_helpers import PROJECT_DIR, urn
from support.policy_pack import analyzer, struct  # noqa: F401  (analyzer: the pack served over gRPC, a module fixture)

UNKNOWN_STRING = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"  # the engine's "unknown string" sentinel
TRANSFER_POLICY = "gpustack-transfer-path-consistency"
INTERFACES_POLICY = "efa-launch-template-interfaces"


def seed_deployment(**changes) -> dict:
    """The seed's qwen-pd as the stack's builder renders it, with top-level spec changes applied."""
    config = yaml.safe_load((PROJECT_DIR / "stacks" / "Pulumi.seed-rdma.yaml").read_text())["config"]
    spec = copy.deepcopy(config["gpu-fabric:modelDeployments"][0])
    for key, value in changes.items():
        if value is None:
            spec.pop(key, None)
        else:
            spec[key] = value
    return model_deployment(ModelDeploymentSpec.model_validate(spec), "v1")


def stack_request(resources) -> analyzer_pb2.AnalyzeStackRequest:
    return analyzer_pb2.AnalyzeStackRequest(resources=[
        analyzer_pb2.AnalyzerResource(type=r.type, properties=struct(r.inputs), urn=r.urn, name=r.name, parent=r.parent)
        for r in resources
    ])


def test_get_analyzer_info_lists_the_policies(analyzer):
    info = analyzer.GetAnalyzerInfo(empty_pb2.Empty())
    assert info.name == "gpu-fabric"
    policies = {p.name: p for p in info.policies}
    assert policies[TRANSFER_POLICY].enforcementLevel == analyzer_pb2.MANDATORY
    assert policies[TRANSFER_POLICY].policy_type == analyzer_pb2.POLICY_TYPE_STACK
    assert policies[INTERFACES_POLICY].policy_type == analyzer_pb2.POLICY_TYPE_RESOURCE
    for policy in info.policies:
        assert policy.description and policy.remediation_steps
        assert policy.severity != analyzer_pb2.POLICY_SEVERITY_UNSPECIFIED


def test_seed_stack_has_no_transfer_violations(analyzer):
    from gpu_fabric.program.render import render_stack

    result = render_stack("seed-rdma", PROJECT_DIR)
    response = analyzer.AnalyzeStack(stack_request(result.resources))
    assert [d.message for d in response.diagnostics if d.policyName == TRANSFER_POLICY] == []


def test_seed_deployment_without_router_and_kv_transfer_is_refused(analyzer):
    from gpu_fabric.program.render import render_stack

    result = render_stack("seed-rdma", PROJECT_DIR)
    failing = seed_deployment(router=None, kvTransfer=None)
    resources = []
    for r in result.resources:
        if r.inputs.get("kind") == "ModelDeployment":
            r = type(r)(r.type, r.name, r.parent, r.custom, failing, r.urn)
            deployment_urn = r.urn
        resources.append(r)
    response = analyzer.AnalyzeStack(stack_request(resources))
    transfer = [d for d in response.diagnostics if d.policyName == TRANSFER_POLICY]
    assert len(transfer) == 2  # prefill and decode both request interfaces
    for diagnostic in transfer:
        assert diagnostic.enforcementLevel == analyzer_pb2.MANDATORY
        assert diagnostic.urn == deployment_urn
        assert MSG_NO_FABRIC_LEG in diagnostic.message
        assert "ModelDeployment team-a/qwen-pd" in diagnostic.message


def _p6_b300_launch_template(efa_on_card_zero: bool) -> dict:
    info = BundledInstanceCatalog().describe(["p6-b300.48xlarge"])["p6-b300.48xlarge"]
    plan = plan_interfaces(info)
    if efa_on_card_zero:
        plan = [PlannedInterface(0, 0, "efa"), *plan[1:]]
    # The security group id is another resource's output: unknown at preview.
    return launch_template_inputs("gpu", "p6-b300.48xlarge", plan, [UNKNOWN_STRING], "dXNlci1kYXRh")


def _analyze_launch_template(analyzer, props: dict):
    type_ = "aws:ec2/launchTemplate:LaunchTemplate"
    return analyzer.Analyze(analyzer_pb2.AnalyzeRequest(
        type=type_, properties=struct(props), urn=urn(type_, "gpu-lt"), name="gpu-lt",
        options=analyzer_pb2.AnalyzerResourceOptions(),
    ))


def test_p6_b300_launch_template_with_efa_on_card_zero_is_refused(analyzer):
    response = _analyze_launch_template(analyzer, _p6_b300_launch_template(efa_on_card_zero=True))
    found = [d for d in response.diagnostics if d.policyName == INTERFACES_POLICY]
    assert found, [d.message for d in response.diagnostics]
    assert all(d.enforcementLevel == analyzer_pb2.MANDATORY for d in found)
    text = "\n".join(d.message for d in found)
    assert "network card 0 of p6-b300.48xlarge does not support EFA" in text
    assert "needs 16" in text


def test_p6_b300_planned_launch_template_passes(analyzer):
    response = _analyze_launch_template(analyzer, _p6_b300_launch_template(efa_on_card_zero=False))
    assert [d.message for d in response.diagnostics if d.enforcementLevel == analyzer_pb2.MANDATORY] == []
    # Unknown security group ids count as present: no "can't run during preview" downgrade either.
    assert [d.message for d in response.diagnostics] == []


def _in_process_servicer():
    from gpu_fabric.policies import ALL_POLICIES, PACK_SETTINGS
    from gpu_fabric.policies.engine_wire import AnalyzerServicer, decode_non_finite_numbers, share_decoding_per_call

    decode_non_finite_numbers()
    share_decoding_per_call()
    return AnalyzerServicer(PACK_SETTINGS["name"], "0.0.1", list(ALL_POLICIES), PACK_SETTINGS["enforcement_level"],
                            None, PACK_SETTINGS["description"], "gpu-fabric", None, PACK_SETTINGS["provider"],
                            list(PACK_SETTINGS["tags"]), None)


def test_one_decoding_per_call_answers_as_a_decoding_per_policy(monkeypatch):
    """share_decoding_per_call (issue 39): each resource is made plain once per AnalyzeStack call, not once per
    stack policy, and the response (findings, messages, URNs, levels) is the unshared servicer's, byte for byte."""
    from gpu_fabric.policies import analyzer_calls, engine_wire
    from gpu_fabric.program.render import render_stack
    from gpu_fabric.policies.engine_wire import AnalyzerServicer

    servicer = _in_process_servicer()
    result = render_stack("seed-rdma", PROJECT_DIR)
    failing = seed_deployment(router=None, kvTransfer=None)
    resources = [type(r)(r.type, r.name, r.parent, r.custom, failing, r.urn) if r.inputs.get("kind") == "ModelDeployment"
                 else r for r in result.resources]
    request = stack_request(resources)
    made = []
    real = engine_wire._stack_resource
    monkeypatch.setattr(engine_wire, "_stack_resource", lambda r: made.append(r.urn) or real(r))
    shared = servicer.AnalyzeStack(request, None)
    assert sorted(made) == sorted(r.urn for r in resources)
    unshared = AnalyzerServicer.AnalyzeStack.__wrapped__(servicer, request, None)
    assert any(d.policyName == TRANSFER_POLICY for d in shared.diagnostics)
    assert shared.SerializeToString(deterministic=True) == unshared.SerializeToString(deterministic=True)
    for r in resources:  # Analyze: the same, one resource at a time
        one = analyzer_pb2.AnalyzeRequest(type=r.type, properties=struct(r.inputs), urn=r.urn, name=r.name)
        assert (servicer.Analyze(one, None).SerializeToString(deterministic=True)
                == AnalyzerServicer.Analyze.__wrapped__(servicer, one, None).SerializeToString(deterministic=True))
    assert analyzer_calls.current_scope() is None
