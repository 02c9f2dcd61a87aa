"""``finite-numbers``: a NaN or an infinity in any resource's inputs is refused at its path, over the engine's wire.

Before, pulumi_policy's analyzer turned every resource's properties to JSON with protobuf's
``MessageToDict``, which raises on NaN: one NaN failed the whole preview with a pack error.
"""

from __future__ import annotations

import math

import grpc
import pytest
from pulumi.runtime.proto import analyzer_pb2

from gpu_fabric.config.base import non_finite_numbers
from gpu_fabric.findings import FieldPath
from gpu_fabric.policies.over_grpc import analyze_request, analyze_stack_request, served_pack
from gpu_fabric.plan.resource_view import Resource
from support.policy_pack import analyzer, struct  # noqa: F401 - the pack as the engine starts it

DEPLOYMENT_TYPE = "kubernetes:apps/v1:Deployment"


def deployment(replicas: float) -> Resource:
    props = {"metadata": {"name": "web"}, "spec": {"replicas": replicas, "template": {"spec": {"containers": [
        {"name": "c", "image": "busybox", "resources": {"limits": {"cpu": 1}}}]}}}}
    return Resource(DEPLOYMENT_TYPE, "web", f"urn:pulumi:dev::p::{DEPLOYMENT_TYPE}::web", props)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_a_non_finite_number_is_a_finding_at_its_path(value):
    findings = list(non_finite_numbers({"spec": {"ports": [{"port": 80}, {"port": value}]}}))
    assert [f.path for f in findings] == [FieldPath.of("spec", "ports", 1, "port")]
    assert findings[0].rule.policy == "finite-numbers"


def test_finite_numbers_and_booleans_are_no_finding():
    assert list(non_finite_numbers({"a": 1, "b": 2.5, "c": True, "d": [0, -1e300], "e": "nan"})) == []


@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_the_served_pack_refuses_a_nan_instead_of_failing(value):
    with served_pack() as stub:
        resource = deployment(value)
        response = stub.Analyze(analyze_request(resource), timeout=60)
        stub.AnalyzeStack(analyze_stack_request([resource]), timeout=60)
    refusals = [d for d in response.diagnostics if d.policyName == "finite-numbers"]
    assert refusals and refusals[0].enforcementLevel == analyzer_pb2.MANDATORY
    assert "spec.replicas" in refusals[0].message


def test_the_pack_as_the_engine_starts_it_survives_a_nan(analyzer):  # noqa: F811
    resource = deployment(math.nan)
    try:
        response = analyzer.Analyze(analyzer_pb2.AnalyzeRequest(
            type=resource.type, properties=struct(dict(resource.props)), urn=resource.urn, name=resource.name),
            timeout=60)
    except grpc.RpcError as error:
        pytest.fail(f"the pack failed on a NaN: {error.details()}")
    assert any(d.policyName == "finite-numbers" and "spec.replicas" in d.message for d in response.diagnostics)


def test_a_finite_deployment_is_not_refused_for_its_numbers():
    with served_pack() as stub:
        response = stub.Analyze(analyze_request(deployment(2)), timeout=60)
    assert not [d for d in response.diagnostics if d.policyName == "finite-numbers"]
