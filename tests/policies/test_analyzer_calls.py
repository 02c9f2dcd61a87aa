"""Each analyzer call runs with the cyclic collector paused (issue 39: its full passes made a stack's check superlinear)."""

from __future__ import annotations

import gc

from google.protobuf import struct_pb2
from pulumi.runtime.proto import analyzer_pb2
from pulumi_policy import EnforcementLevel, StackValidationPolicy

from gpu_fabric.policies.analyzer_calls import current_scope, decode_non_finite_numbers, share_decoding_per_call
from gpu_fabric.policies.engine_wire import AnalyzerServicer


def test_an_analyzer_call_pauses_the_collector_and_gives_it_back():
    decode_non_finite_numbers()  # as the pack's entry point does: the shared decode is the native one
    share_decoding_per_call()
    seen = []

    def validate(args, report_violation):
        seen.append((gc.isenabled(), current_scope() is not None))

    servicer = AnalyzerServicer("probe", "0.0.1", [StackValidationPolicy("probe", "records", validate)],
                                EnforcementLevel.ADVISORY, None, "d", "probe", None, None, None, None)
    resource = analyzer_pb2.AnalyzerResource(type="kubernetes:core/v1:ConfigMap", properties=struct_pb2.Struct(),
                                             urn="urn:pulumi:s::p::kubernetes:core/v1:ConfigMap::c", name="c")
    was_enabled = gc.isenabled()
    gc.enable()
    try:
        AnalyzerServicer.AnalyzeStack(servicer, analyzer_pb2.AnalyzeStackRequest(resources=[resource]), None)
        assert seen == [(False, True)]
        assert gc.isenabled() and current_scope() is None
    finally:
        if not was_enabled:
            gc.disable()


def test_every_policy_of_a_call_reads_one_proxy_per_resource_and_a_new_call_makes_its_own():
    decode_non_finite_numbers()  # as the pack's entry point does: the shared decode is the native one
    share_decoding_per_call()
    seen = []

    def record(args, report_violation):
        seen.append(id(args.resources[0].props))

    policies = [StackValidationPolicy(name, "records", record) for name in ("first", "second")]
    servicer = AnalyzerServicer("probe", "0.0.1", policies, EnforcementLevel.ADVISORY, None, "d", "probe", None, None,
                                None, None)
    properties = struct_pb2.Struct()
    properties.update({"data": {"key": "value"}})
    request = analyzer_pb2.AnalyzeStackRequest(resources=[analyzer_pb2.AnalyzerResource(
        type="kubernetes:core/v1:ConfigMap", properties=properties, urn="urn:pulumi:s::p::kubernetes:core/v1:ConfigMap::c",
        name="c")])
    first = AnalyzerServicer.AnalyzeStack(servicer, request, None)
    second = AnalyzerServicer.AnalyzeStack(servicer, request, None)
    assert seen[0] == seen[1] and seen[2] == seen[3]
    assert first == second
    unshared = AnalyzerServicer.AnalyzeStack.__wrapped__(servicer, request, None)
    assert unshared == first and seen[4] != seen[5]
