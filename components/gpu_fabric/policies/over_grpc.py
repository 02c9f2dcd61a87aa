"""The pack served over the analyzer gRPC protocol in this process, driven as the engine drives it.

``gpu-fabric check --preview`` uses this so a preview is checked along the engine's own path: every
resource's inputs go out as a protobuf ``Struct`` (every number a double, each unknown value as the
engine's sentinel string, pulumi/runtime/rpc.py ``UNKNOWN``), pulumi_policy's servicer decodes them
(``json_format.MessageToDict`` -> ``deserialize_properties`` -> ``unknown_checking_proxy``), runs
``Analyze`` once per resource and ``AnalyzeStack`` once, and answers diagnostics. A policy that
raises fails the call (``grpc.StatusCode.UNKNOWN``), exactly what makes a real preview error.

The servicer is pulumi_policy's own (``pulumi_policy/policy.py``: ``PolicyPack.__init__`` builds a
``_PolicyAnalyzerServicer`` from its arguments, serves it on ``127.0.0.1:0`` and then blocks
forever, so it cannot be called here), reached through the engine-wire boundary
(:data:`gpu_fabric.policies.engine_wire.AnalyzerServicer`); it is built from
:data:`gpu_fabric.policies.PACK_SETTINGS`, the very arguments ``policy/__main__.py`` passes to ``PolicyPack``.
"""

from __future__ import annotations

import contextlib
from concurrent import futures
from dataclasses import dataclass
from typing import Any, Iterator, Mapping, Optional, Sequence

import grpc
from google.protobuf import empty_pb2, struct_pb2
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc
from pulumi_policy import EnforcementLevel

from gpu_fabric.plan.resource_view import Resource
from gpu_fabric.policies.runner import NotApplicable, Violation

CALL_TIMEOUT_SECONDS = 120.0
"""Deadline of one ``Analyze``/``AnalyzeStack`` call (the pack runs in this process: a stuck policy must not hang check)."""

PACK_FAILURE = "(pack)"
"""``Violation.policy`` of a call the pack failed (a policy raised): the engine fails the preview then."""

_ENFORCEMENT = {
    analyzer_pb2.ADVISORY: EnforcementLevel.ADVISORY,
    analyzer_pb2.MANDATORY: EnforcementLevel.MANDATORY,
    analyzer_pb2.REMEDIATE: EnforcementLevel.MANDATORY,
    analyzer_pb2.DISABLED: EnforcementLevel.DISABLED,
}
_SEVERITY = {
    analyzer_pb2.POLICY_SEVERITY_LOW: "low",
    analyzer_pb2.POLICY_SEVERITY_MEDIUM: "medium",
    analyzer_pb2.POLICY_SEVERITY_HIGH: "high",
    analyzer_pb2.POLICY_SEVERITY_CRITICAL: "critical",
}


@dataclass(frozen=True)
class Outcome:
    """What the pack answered for one stack."""

    violations: list[Violation]
    not_applicable: list[NotApplicable]


@contextlib.contextmanager
def served_pack(policies: Optional[Sequence[Any]] = None, display_name: str = "gpu-fabric") -> Iterator[analyzer_pb2_grpc.AnalyzerStub]:
    """The pack's analyzer on 127.0.0.1 (an ephemeral port), as a stub; stopped on exit.

    ``policies``: default :data:`gpu_fabric.policies.ALL_POLICIES`; ``display_name``: what
    ``GetAnalyzerInfo`` answers (:func:`gpu_fabric.policies.pack_display_name`).
    """
    from gpu_fabric.policies import ALL_POLICIES, PACK_SETTINGS
    from gpu_fabric.policies.engine_wire import AnalyzerServicer, decode_non_finite_numbers, share_decoding_per_call

    decode_non_finite_numbers()
    share_decoding_per_call()
    settings = PACK_SETTINGS
    # PolicyPack passes the version "0.0.1" (the engine reads the real one from PulumiPolicy.yaml).
    servicer = AnalyzerServicer(
        settings["name"], "0.0.1", list(policies if policies is not None else ALL_POLICIES),
        settings["enforcement_level"], None, settings["description"], display_name,
        None, settings["provider"], list(settings["tags"]), None)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=1))
    analyzer_pb2_grpc.add_AnalyzerServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        stub = analyzer_pb2_grpc.AnalyzerStub(channel)
        # Ready when it answers. Not grpc.channel_ready_future: its connectivity poller wakes every 0.2 s
        # (grpc/_channel.py, _poll_connectivity), and channel.close() waited for it -- 125 ms of every
        # `check --preview`.
        stub.GetPluginInfo(empty_pb2.Empty(), wait_for_ready=True, timeout=CALL_TIMEOUT_SECONDS)
        yield stub
    finally:
        channel.close()
        server.stop(None)


def wire_struct(props: Mapping[str, Any]) -> struct_pb2.Struct:
    """``props`` as the engine sends them: a protobuf ``Struct`` (numbers become doubles)."""
    message = struct_pb2.Struct()
    message.update(dict(props))
    return message


def _options(resource: Resource) -> analyzer_pb2.AnalyzerResourceOptions:
    return analyzer_pb2.AnalyzerResourceOptions(parent=resource.parent)


def analyze_request(resource: Resource) -> analyzer_pb2.AnalyzeRequest:
    """The ``Analyze`` request of one resource."""
    return analyzer_pb2.AnalyzeRequest(type=resource.type, properties=wire_struct(resource.props), urn=resource.urn,
                                       name=resource.name, options=_options(resource))


def analyze_stack_request(resources: Sequence[Resource]) -> analyzer_pb2.AnalyzeStackRequest:
    """The ``AnalyzeStack`` request of a stack: parents and property dependencies as the engine sends them."""
    return analyzer_pb2.AnalyzeStackRequest(resources=[
        analyzer_pb2.AnalyzerResource(
            type=r.type, properties=wire_struct(r.props), urn=r.urn, name=r.name, parent=r.parent,
            options=_options(r),
            propertyDependencies={key: analyzer_pb2.AnalyzerPropertyDependencies(urns=list(urns))
                                  for key, urns in r.property_dependencies.items()},
        )
        for r in (resource.stack_view for resource in resources)
    ])


def _violations(response: analyzer_pb2.AnalyzeResponse, default_urn: str) -> list[Violation]:
    found = []
    for diagnostic in response.diagnostics:
        message = diagnostic.message
        # pulumi_policy prefixes each reported message with the policy's description (report_violation).
        prefix = f"{diagnostic.description}\n"
        if diagnostic.description and message.startswith(prefix):
            message = message[len(prefix):]
        found.append(Violation(diagnostic.policyName, _ENFORCEMENT.get(diagnostic.enforcementLevel, EnforcementLevel.MANDATORY),
                               _SEVERITY.get(diagnostic.severity), message, diagnostic.urn or default_urn))
    return found


def _not_applicable(response: analyzer_pb2.AnalyzeResponse, urn: str) -> list[NotApplicable]:
    return [NotApplicable(item.policy_name, item.reason, urn) for item in response.not_applicable]


def _failure(error: grpc.RpcError, call: str, urn: str) -> Violation:
    code = error.code() if hasattr(error, "code") else None
    details = error.details() if hasattr(error, "details") else str(error)
    where = f"{call} of {urn}" if urn else call
    return Violation(PACK_FAILURE, EnforcementLevel.MANDATORY, None,
                     f"the pack failed {where} ({getattr(code, 'name', code)}): {details}", urn)


def analyze_over_grpc(stub: analyzer_pb2_grpc.AnalyzerStub, resources: Sequence[Resource]) -> Outcome:
    """``Analyze`` each resource and ``AnalyzeStack`` the whole, as the engine does at preview."""
    violations: list[Violation] = []
    skipped: list[NotApplicable] = []
    for resource in resources:
        try:
            response = stub.Analyze(analyze_request(resource), timeout=CALL_TIMEOUT_SECONDS)
        except grpc.RpcError as error:
            violations.append(_failure(error, "Analyze", resource.urn))
            continue
        violations.extend(_violations(response, resource.urn))
        skipped.extend(_not_applicable(response, resource.urn))
    try:
        response = stub.AnalyzeStack(analyze_stack_request(resources), timeout=CALL_TIMEOUT_SECONDS)
    except grpc.RpcError as error:
        violations.append(_failure(error, "AnalyzeStack", ""))
    else:
        violations.extend(_violations(response, ""))
        skipped.extend(_not_applicable(response, ""))
    return Outcome(violations, skipped)
