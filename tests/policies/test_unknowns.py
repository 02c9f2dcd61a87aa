"""The engine's unknowns: the pack served over gRPC survives the sentinel anywhere and still refuses what it can decide.

At ``pulumi preview`` the engine sends a value it does not know yet as the sentinel string
pulumi/runtime/rpc.py ``UNKNOWN`` (pulumi_policy/proxy.py ``UNKNOWN_STRING_VALUE``). Here it is
placed at every property path of the example stacks' resources (a leaf, a whole list, a whole
object), the pack is driven as the engine drives it (``Analyze`` of that resource, ``AnalyzeStack``
of the stack), and a planted mistake no unknown touches must still be refused.
"""

from __future__ import annotations

import copy
import functools

import grpc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pulumi.runtime.proto import analyzer_pb2
from pulumi.runtime.rpc import UNKNOWN as ENGINE_UNKNOWN
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE

from gpu_fabric.config.shapes import UNKNOWN, is_unknown, list_at, mapping_at
from gpu_fabric.gpustack.transfer_legs import MSG_NO_FABRIC_LEG
from gpu_fabric.policies.engine_wire import plain
from gpu_fabric.plan.resource_view import Resource
from gpu_fabric.policies.over_grpc import PACK_FAILURE, analyze_over_grpc, analyze_request, analyze_stack_request, served_pack
from support.policy_helpers import PROJECT_DIR
from test_policy_grpc import TRANSFER_POLICY, analyzer, seed_deployment  # noqa: F401 - the pack fixture

from gpu_fabric.program.render import example_stacks  # noqa: E402 - beside the names it gives

EXAMPLES = tuple(example_stacks(PROJECT_DIR))


def test_the_sentinel_is_the_engines():
    assert ENGINE_UNKNOWN == UNKNOWN_STRING_VALUE == "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
    assert plain({"a": [ENGINE_UNKNOWN], "b": ENGINE_UNKNOWN})["b"] is UNKNOWN


def test_the_unknown_value_reads_as_any_shape_and_matches_nothing():
    assert UNKNOWN.get("metadata").get("name") is UNKNOWN and UNKNOWN["spec"] is UNKNOWN
    assert list(UNKNOWN) == [] and [*UNKNOWN] == [] and "key" not in UNKNOWN and len(UNKNOWN) == 0
    assert UNKNOWN != {} and UNKNOWN != "" and UNKNOWN == UNKNOWN and bool(UNKNOWN) and is_unknown(UNKNOWN)
    assert mapping_at({"spec": UNKNOWN}, "spec") is UNKNOWN and list_at({"roles": UNKNOWN}, "roles") == []


@functools.lru_cache(maxsize=None)
def example(stack: str) -> tuple[Resource, ...]:
    """One render per example per session, as the analyzer would receive it."""
    from gpu_fabric.program.render import render_stack

    return tuple(Resource(r.type, r.name, r.urn, r.policy_inputs, r.parent, r.dependencies)
                 for r in render_stack(stack, PROJECT_DIR).resources)


def property_paths(value, prefix=()):
    """Every path below ``value``: each object, list and leaf."""
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            found += property_paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += property_paths(item, (*prefix, index))
    return found


PLACEMENTS = [(stack, index, path) for stack in EXAMPLES for index, r in enumerate(example(stack))
              for path in property_paths(dict(r.props))]


def with_sentinel(stack: str, index: int, path: tuple) -> list[Resource]:
    resources = list(example(stack))
    target = resources[index]
    props = copy.deepcopy(dict(target.props))
    node = props
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = ENGINE_UNKNOWN
    resources[index] = Resource(target.type, target.name, target.urn, props, target.parent, target.property_dependencies)
    return resources


def planted_mistake() -> Resource:
    """A ModelDeployment that requests interfaces with no fabric leg: refused whatever else is unknown."""
    manifest = seed_deployment(router=None, kvTransfer=None)
    manifest["metadata"] = {**manifest["metadata"], "name": "planted"}
    type_ = "kubernetes:worker.gpustack.ai/v1alpha1:ModelDeployment"
    return Resource(type_, "planted", f"urn:pulumi:test::gpu-fabric::{type_}::planted", manifest)


def assert_survives_and_still_refuses(analyzer, resources: list[Resource], index: int) -> None:
    try:
        analyzer.Analyze(analyze_request(resources[index]), timeout=60)
        response = analyzer.AnalyzeStack(analyze_stack_request([*resources, planted_mistake()]), timeout=60)
    except grpc.RpcError as error:
        pytest.fail(f"the pack failed on {resources[index].urn}: {error.details()}")
    planted = [d for d in response.diagnostics if d.policyName == TRANSFER_POLICY and d.urn == planted_mistake().urn]
    assert planted and all(d.enforcementLevel == analyzer_pb2.MANDATORY for d in planted)
    assert all(MSG_NO_FABRIC_LEG in d.message for d in planted)


# Placements that once crashed the pack at preview: a KVCacheBackend's members, a DaemonSet's metadata and volumes.
SEEN_CRASHING = [
    ("aws-efa", "kv-cache-backend-mooncake-efa", ("spec", "connection", "managed", "members")),
    ("aws-efa", "kv-cache-backend-mooncake-efa", ("spec", "transport")),
    ("aws-efa", "efa-device-plugin-daemonset", ("metadata",)),
    ("aws-efa", "efa-device-plugin-daemonset", ("metadata", "annotations", "gpu-fabric.io/advertises")),
    ("aws-efa", "efa-device-plugin-daemonset", ("spec", "template", "spec", "tolerations")),
    ("seed-rdma", "topology-agent-daemonset", ("spec", "template", "spec", "volumes")),
    ("seed-rdma", "topology-agent-daemonset", ("spec", "template", "spec", "containers")),
]


@pytest.mark.parametrize("stack, name_part, path", SEEN_CRASHING)
def test_the_placements_that_crashed_the_pack(analyzer, stack, name_part, path):  # noqa: F811
    index = next(i for i, r in enumerate(example(stack)) if r.name.endswith(name_part))
    assert_survives_and_still_refuses(analyzer, with_sentinel(stack, index, path), index)


@pytest.mark.slow
@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.sampled_from(PLACEMENTS))
def test_the_sentinel_at_any_property_path(analyzer, placement):  # noqa: F811
    stack, index, path = placement
    assert_survives_and_still_refuses(analyzer, with_sentinel(stack, index, path), index)


def test_check_preview_reports_a_policy_that_raises_as_the_engine_would():
    from pulumi_policy import ResourceValidationPolicy

    def boom(args, report):
        raise RuntimeError("policy bug")

    raising = ResourceValidationPolicy(name="raises", description="a policy that raises on every resource", validate=boom)
    resource = example("seed-rdma")[0]
    with served_pack([raising]) as stub:
        outcome = analyze_over_grpc(stub, [resource])
    assert [v.policy for v in outcome.violations] == [PACK_FAILURE]
    failure = outcome.violations[0]
    assert failure.mandatory and failure.urn == resource.urn and "policy bug" in failure.message


# -- a refusal that rests on an unknown waits; the others are still made ---------------------------------


def launch_template(stack: str = "aws-efa") -> int:
    return next(i for i, r in enumerate(example(stack)) if r.type == "aws:ec2/launchTemplate:LaunchTemplate"
                and "h100" in r.name)


@pytest.mark.parametrize("path", [("networkInterfaces", 1), ("networkInterfaces", 0, "deviceIndex"),
                                  ("networkInterfaces", 2, "interfaceType"), ("instanceType",)])
def test_an_interface_plan_not_known_at_preview_is_not_applicable_not_refused(path):
    from gpu_fabric.policies import POLICIES_BY_NAME
    from gpu_fabric.policies.runner import NotApplicable, run_policy

    index = launch_template()
    resources = with_sentinel("aws-efa", index, path)
    skipped: list[NotApplicable] = []
    assert run_policy(POLICIES_BY_NAME["efa-launch-template-interfaces"], [resources[index]], not_applicable=skipped) == []
    assert [s.reason for s in skipped] and "not known at preview" in skipped[0].reason


def test_a_wrong_plan_beside_unknown_security_groups_is_still_refused():
    from gpu_fabric.policies import POLICIES_BY_NAME
    from gpu_fabric.policies.runner import run_policy

    index = launch_template()
    resources = with_sentinel("aws-efa", index, ("networkInterfaces", 3, "securityGroups"))
    broken = copy.deepcopy(dict(resources[index].props))
    broken["networkInterfaces"] = broken["networkInterfaces"][:-1]  # one EFA short
    template = Resource(resources[index].type, resources[index].name, resources[index].urn, broken)
    violations = run_policy(POLICIES_BY_NAME["efa-launch-template-interfaces"], [template])
    assert violations and any("needs 32" in v.message for v in violations)


@pytest.mark.parametrize("name_part, path", [
    ("kv-cache-backend-mooncake-efa", ("metadata",)),
    ("kv-cache-backend-mooncake-efa", ("metadata", "name")),
    ("kv-cache-binding-team-a-shared", ("metadata", "namespace")),
    ("kv-cache-pool-efa-cache", ("metadata",)),
    ("team-a-llama-pd-deployment", ("metadata", "name")),
    ("kv-cache-backend-mooncake-efa", ("kind",)),
    ("kv-cache-pool-efa-cache", ("kind",)),
])
def test_a_gpustack_object_whose_identity_is_unknown_is_not_refused_for_it(name_part, path):
    from gpu_fabric.policies import POLICIES_BY_NAME
    from gpu_fabric.policies.runner import run_policy

    index = next(i for i, r in enumerate(example("aws-efa")) if r.name.endswith(name_part))
    assert run_policy(POLICIES_BY_NAME[TRANSFER_POLICY], with_sentinel("aws-efa", index, path)) == []


def test_a_finding_resting_on_an_unknown_is_withheld_and_the_others_pass():
    from pulumi_policy import ResourceValidationPolicy

    from gpu_fabric.config.shapes import rests_on_unknown
    from gpu_fabric.findings import Finding, Rule
    from gpu_fabric.policies.engine_wire import resource_of
    from gpu_fabric.policies.reporting import report_finding
    from gpu_fabric.policies.runner import run_policy

    rule = Rule("quotes", "refuses the image and the name", "tests")

    def validate(args, report):
        props = resource_of(args).props
        image = Finding.of(rule, "image", f"image {props.get('image')} is refused",
                           rests_on_unknown=rests_on_unknown(props, ("image",)))
        report_finding(report, image, image.message)
        name = Finding.of(rule, "name", "name is always refused")
        report_finding(report, name, name.message)

    policy = ResourceValidationPolicy(name="quotes", description="quotes the image", validate=validate)
    resource = Resource("kubernetes:core/v1:Pod", "p", "urn:p", {"image": ENGINE_UNKNOWN})
    assert [v.message for v in run_policy(policy, [resource])] == ["name is always refused [quotes]"]


@pytest.mark.parametrize("field", ["policy", "scope", "cpuManagerPolicy"])
def test_a_pool_topology_not_known_at_preview_is_not_refused(field):
    from gpu_fabric.policies import POLICIES_BY_NAME
    from gpu_fabric.policies.runner import run_policy

    index = next(i for i, r in enumerate(example("aws-efa")) if r.type == "gpu-fabric:index:KueuePool")
    resources = with_sentinel("aws-efa", index, ("pool", "topology", field))
    assert run_policy(POLICIES_BY_NAME["fabric-pool-topology"], resources) == []


@pytest.mark.parametrize("path", [("spec",), ("spec", "template", "spec", "nodeSelector"), ("kind",)])
def test_a_device_plugin_not_known_at_preview_leaves_coverage_undecided(path):
    from gpu_fabric.policies import POLICIES_BY_NAME
    from gpu_fabric.policies.runner import run_policy

    index = next(i for i, r in enumerate(example("aws-efa")) if r.name.endswith("efa-device-plugin-daemonset"))
    assert run_policy(POLICIES_BY_NAME["device-plugin-coverage"], with_sentinel("aws-efa", index, path)) == []


def test_a_pool_without_any_device_plugin_is_still_refused_at_preview():
    from gpu_fabric.policies import POLICIES_BY_NAME
    from gpu_fabric.policies.runner import run_policy

    without_plugin = [r for r in example("aws-efa") if not r.name.endswith("efa-device-plugin-daemonset")]
    found = run_policy(POLICIES_BY_NAME["device-plugin-coverage"], without_plugin)
    assert found and all(v.mandatory for v in found)


# -- false refusals: a mandatory refusal that appears only because a value is unknown ---------------------
#
# A refusal present with the sentinel at one path and absent from the same stack without it is a false
# refusal: the unknown may resolve to the very value it replaced, which passes. The measurement runs every
# mandatory policy in process, exactly as the analyzer would (pulumi_policy's argument objects and
# unknown-checking proxy, see gpu_fabric.policies.runner); resource policies run only over the resource
# that changed, since every other resource's outcome is the baseline's.
#
#   Measure every placement of the example stacks (about 3 minutes on one core):
#     PYTHONPATH=components:tests python tests/policies/test_unknowns.py --measure

Refusal = tuple  # (policy, urn, message)


def _mandatory(violations) -> set[Refusal]:
    return {(v.policy, v.urn, v.message) for v in violations if v.mandatory}


@functools.lru_cache(maxsize=None)
def baseline_refusals(stack: str) -> frozenset[Refusal]:
    from gpu_fabric.policies import ALL_POLICIES
    from gpu_fabric.policies.runner import run_policies

    return frozenset(_mandatory(run_policies(ALL_POLICIES, list(example(stack)))))


def refusals_with_sentinel(stack: str, index: int, path: tuple) -> set[Refusal]:
    """The mandatory refusals of ``stack`` with the engine's sentinel at ``path`` of resource ``index``."""
    from pulumi_policy import ResourceValidationPolicy

    from gpu_fabric.policies import ALL_POLICIES
    from gpu_fabric.policies.runner import run_policy

    resources = with_sentinel(stack, index, path)
    found: set[Refusal] = set()
    for policy in ALL_POLICIES:
        scope = [resources[index]] if isinstance(policy, ResourceValidationPolicy) else resources
        found |= _mandatory(run_policy(policy, scope))
    return found


def false_refusals(placements) -> list[tuple[tuple, list[Refusal]]]:
    """``(placement, refusals)`` for every placement whose sentinel alone makes a mandatory refusal."""
    found = []
    for stack, index, path in placements:
        new = sorted(refusals_with_sentinel(stack, index, path) - baseline_refusals(stack))
        if new:
            found.append(((stack, index, path), new))
    return found


def one_per_shape(placements):
    """The first placement of each (stack, resource, path with list indices folded) shape."""
    seen, kept = set(), []
    for stack, index, path in placements:
        shape = (stack, index, tuple("#" if isinstance(step, int) else step for step in path))
        if shape not in seen:
            seen.add(shape)
            kept.append((stack, index, path))
    return kept


# The resources where false refusals were measured before their rules learned to wait (100 of 1675
# placements): the kubelet topology agent, the EFA device plugin, the pool components, the EFA
# security-group rules, launch templates and the Karpenter NodeClass/NodePool.
WATCHED = ("topology-agent-daemonset", "efa-device-plugin-daemonset", "-sg-self-ingress", "-sg-self-egress",
           "-nodes-lt", "-nodes-nodeclass", "-nodes-nodepool")


def _watched(stack: str, index: int) -> bool:
    resource = example(stack)[index]
    return resource.type in ("gpu-fabric:index:KueuePool",) or resource.name.endswith(WATCHED)


# The fields those refusals rested on (a whole list or object above them counts too).
DECIDING = ("metadata", "securityContext", "volumes", "fabric", "name", "ipProtocol", "networkInterfaces",
            "requirements")


def _deciding(path: tuple) -> bool:
    return len(path) <= 1 or any(step in DECIDING for step in path[-2:])


WATCHED_PLACEMENTS = one_per_shape([p for p in PLACEMENTS if _watched(p[0], p[1]) and _deciding(p[2])])


def test_the_example_stacks_have_no_mandatory_refusal_without_the_sentinel():
    # The measurement's premise: each difference is the sentinel's alone.
    assert all(not baseline_refusals(stack) for stack in EXAMPLES)


@pytest.mark.slow
def test_no_false_refusal_where_an_unknown_used_to_refuse():
    found = false_refusals(WATCHED_PLACEMENTS)
    assert not found, "\n".join(f"{stack} {example(stack)[index].name} {path}: {refusals}"
                                for (stack, index, path), refusals in found)


@pytest.mark.slow
@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(PLACEMENTS))
def test_no_false_refusal_at_any_property_path(placement):
    assert not false_refusals([placement])


@pytest.mark.parametrize("stack, name_part, path, policy", [
    ("seed-rdma", "topology-agent-daemonset", ("spec", "template", "spec", "containers", 0, "securityContext"),
     "kubelet-host-access"),
    ("aws-efa", "efa-device-plugin-daemonset", ("spec", "template", "spec", "volumes", 0), "fabric-workloads"),
    ("aws-efa", "-sg-self-ingress", ("ipProtocol",), "efa-security-group-self-rules"),
    ("karpenter-efa", "-nodes-nodeclass", ("spec", "networkInterfaces", 3), "karpenter-efa-pool"),
])
def test_a_rule_the_known_values_decide_still_refuses_beside_the_sentinel(stack, name_part, path, policy):
    """A real mistake planted in the same resource, on fields no unknown touches, is still refused."""
    from gpu_fabric.policies import POLICIES_BY_NAME
    from gpu_fabric.policies.runner import run_policy

    index = next(i for i, r in enumerate(example(stack)) if r.name.endswith(name_part))
    resources = with_sentinel(stack, index, path)
    target = resources[index]
    props = copy.deepcopy(dict(target.props))
    if policy == "kubelet-host-access":
        props["spec"]["template"]["spec"]["hostNetwork"] = True  # excess the agent never needs
    elif policy == "fabric-workloads":
        container = props["spec"]["template"]["spec"]["containers"][0]
        container["resources"] = {"limits": {"vpc.amazonaws.com/efa": 1, "rdma/hca": 1}}  # EFA and RDMA at once
    elif policy == "efa-security-group-self-rules":
        props.pop("referencedSecurityGroupId", None)
        props["cidrIpv4"] = "0.0.0.0/0"  # EFA interfaces open to the world
    else:
        props["spec"]["associatePublicIPAddress"] = True  # a public IP beside many EFA interfaces
    resources[index] = Resource(target.type, target.name, target.urn, props, target.parent, target.property_dependencies)
    assert run_policy(POLICIES_BY_NAME[policy], resources if policy != "kubelet-host-access" else [resources[index]])


if __name__ == "__main__":
    import sys

    if "--measure" in sys.argv:
        found = false_refusals(PLACEMENTS)
        for (stack, index, path), refusals in found:
            for policy, _, message in refusals:
                print(f"{stack} {example(stack)[index].name} {path} | {policy} | {message}")
        print(f"false refusals: {len(found)} of {len(PLACEMENTS)} placements")
