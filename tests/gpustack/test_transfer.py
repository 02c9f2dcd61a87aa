"""The transfer-path analysis decides as the GPUStack operator's admission decides
(gpustack/gpustack-operator ``pkg/worker/controllers/worker/model_deployment_fabric.go``, run by the validating webhook in
``pkg/worker/webhooks/worker/model_deployment.go``)."""

import copy

import pytest
from hypothesis import given, strategies as st

from gpu_fabric.gpustack import admission_pipeline, transfer_legs
from gpu_fabric.config.instance_type_names import manufacturer_of
from gpu_fabric.gpustack.transfer_legs import (
    EFA_KEY,
    MSG_BACKEND_UNRESOLVED,
    MSG_BINDING_UNRESOLVED,
    MSG_NO_FABRIC_LEG,
    MSG_NOT_POSITIVE,
    MSG_NOT_WHOLE,
    MSG_POOL_UNRESOLVED,
    RDMA_EXCLUSIVE_KEY,
    RDMA_SHARED_KEY,
    effective_protocol,
    fabric_resources,
)

from gpu_fabric.gpustack.profiles import pin_profile

A10G = "gpustack--nvidia-a10g-linux-amd64"
PIN = pin_profile()


def analyze(objects, **kwargs):
    """The analysis at the pin, whose engine.version deployments these cases write (tests/gpustack/test_operator_versions.py
    holds the release lines' cases)."""
    return admission_pipeline.analyze(objects, operator=PIN, **kwargs)


def deployment(*, router=True, protocol="RDMA", engine="vLLM", interface="2", kinds=("Prefill", "Decode"),
               instance_type=A10G, kv_cache=None, command=None, name="qwen-pd"):
    """The seed's qwen-pd, with one knob per admission rule."""
    roles = []
    for kind in kinds:
        role = {"name": kind.lower(), "kind": kind, "replicas": 1, "instanceType": instance_type,
                "resources": {"accelerator": "2", "interface": interface}}
        if command:
            role["command"] = command
        roles.append(role)
    spec = {"model": {"name": "Qwen/Qwen2.5-7B-Instruct"}, "engine": {"name": engine, "version": "0.29.0"}, "roles": roles}
    if router:
        spec["router"] = {"name": "llm-d-router"}
    if protocol:
        spec["kvTransfer"] = {"protocol": protocol}
    if kv_cache:
        spec["kvCache"] = {"poolRef": {"name": kv_cache}}
    return {"apiVersion": "worker.gpustack.ai/v1", "kind": "ModelDeployment",
            "metadata": {"name": name, "namespace": "team-a"}, "spec": spec}


def backend(name="mooncake", protocol="RDMA", member_protocols=(None,), fabric_interface_count=2):
    members = []
    for member_protocol in member_protocols:
        member = {"nodeSelector": {"kubernetes.io/os": "linux"}, "medium": "DRAM", "capacityPerMember": "8Gi",
                  "fabricInterfaceCount": fabric_interface_count}
        if member_protocol:
            member["transport"] = {"protocol": member_protocol}
        members.append(member)
    spec = {"type": "Mooncake", "connection": {"managed": {"leader": {}, "members": members}}}
    if protocol:
        spec["transport"] = {"protocol": protocol}
    return {"apiVersion": "worker.gpustack.ai/v1", "kind": "KVCacheBackend", "metadata": {"name": name}, "spec": spec}


def cache_chain(backend_name="mooncake"):
    """A KVCachePool over ``backend_name`` and a binding ``shared`` in team-a."""
    return [
        {"apiVersion": "worker.gpustack.ai/v1", "kind": "KVCachePool", "metadata": {"name": "pool"},
         "spec": {"backends": [backend_name], "quota": {"total": "1Ti"}}},
        {"apiVersion": "worker.gpustack.ai/v1", "kind": "KVCachePoolBinding",
         "metadata": {"name": "shared", "namespace": "team-a"},
         "spec": {"poolRef": {"name": "pool"}, "quota": {"ceiling": "8Gi"}, "domain": {"blockSize": 64, "dtype": "bfloat16"}}},
    ]


def messages(report):
    return [(f.path, operator_words(f.message)) for f in report.errors]

def operator_words(message: str) -> str:
    """The operator's own message of a refusal: gpu-fabric adds the cause and the fix after it (issue 36)."""
    return message.split(": ", 1)[0] if message.startswith(MSG_NO_FABRIC_LEG + ": ") else message



def test_seed_qwen_pd_is_admitted_with_exclusive_rdma_keys():
    report = analyze([deployment()])
    assert report.ok
    assert [dict(g.resources) for g in report.role_grants] == [{RDMA_EXCLUSIVE_KEY: 2}, {RDMA_EXCLUSIVE_KEY: 2}]
    assert {g.fabric for g in report.role_grants} == {"rdma"}


def test_seed_without_router_and_kv_transfer_is_refused_on_every_requesting_role():
    report = analyze([deployment(router=False, protocol=None)])
    assert messages(report) == [
        ("spec.roles[0].resources.interface", MSG_NO_FABRIC_LEG),
        ("spec.roles[1].resources.interface", MSG_NO_FABRIC_LEG),
    ]
    assert operator_words(report.errors[0].message) == "no effective RDMA or EFA transfer leg uses the requested interfaces"


def test_router_without_kv_transfer_means_tcp_and_is_refused():
    assert messages(analyze([deployment(protocol=None)]))[0][1] == MSG_NO_FABRIC_LEG


def test_auto_protocol_is_tcp():
    assert messages(analyze([deployment(protocol="Auto")]))[0][1] == MSG_NO_FABRIC_LEG


def test_sglang_direct_leg_never_earns_a_device():
    assert messages(analyze([deployment(engine="SGLang")]))[0][1] == MSG_NO_FABRIC_LEG


def test_role_with_command_is_unmanaged_and_gets_no_direct_leg():
    assert messages(analyze([deployment(command=["python", "serve.py"])]))[0][1] == MSG_NO_FABRIC_LEG


def test_server_roles_render_no_direct_leg():
    assert messages(analyze([deployment(kinds=("Server",))]))[0][1] == MSG_NO_FABRIC_LEG


def test_ascend_and_unknown_manufacturers_get_no_direct_leg():
    assert not analyze([deployment(instance_type="gpustack--ascend-910b-linux-arm64")]).ok
    assert not analyze([deployment(instance_type="gpustack--generic-linux-amd64")]).ok
    # An explicit observation overrides what the name suggests.
    assert analyze([deployment(instance_type="custom-pool")], manufacturers={"custom-pool": "nvidia"}).ok


def test_cache_only_leg_grants_the_cache_fabric():
    objects = [deployment(kinds=("Server",), router=False, protocol=None, kv_cache="shared"), backend(), *cache_chain()]
    report = analyze(objects)
    assert report.ok
    grant = report.role_grants[0]
    assert (grant.cache_protocol, grant.direct_protocol, grant.fabric) == ("rdma", None, "rdma")


def test_cache_leg_on_tcp_with_no_direct_leg_is_refused():
    objects = [deployment(kinds=("Server",), router=False, protocol=None, kv_cache="shared"),
               backend(protocol="TCP"), *cache_chain()]
    assert messages(analyze(objects))[0][1] == MSG_NO_FABRIC_LEG


def test_conflicting_member_groups_are_refused_even_when_one_is_tcp():
    objects = [deployment(kv_cache="shared"), backend(protocol="TCP", member_protocols=(None, "RDMA")), *cache_chain()]
    assert messages(analyze(objects))[0][1] == "cache member groups use conflicting protocols: tcp, rdma"


def test_two_different_fabrics_are_refused():
    objects = [deployment(protocol="EFA", kv_cache="shared"), backend(protocol="RDMA"), *cache_chain()]
    assert messages(analyze(objects))[0][1] == "cache and direct-transfer legs use rdma and efa"


def test_same_fabric_on_both_legs_is_admitted():
    objects = [deployment(protocol="EFA", kv_cache="shared"), backend(protocol="EFA"), *cache_chain()]
    report = analyze(objects)
    assert report.ok
    assert dict(report.role_grants[0].resources) == {EFA_KEY: 2}


@pytest.mark.parametrize("drop, message", [
    ("KVCachePoolBinding", MSG_BINDING_UNRESOLVED),
    ("KVCachePool", MSG_POOL_UNRESOLVED),
    ("KVCacheBackend", MSG_BACKEND_UNRESOLVED),
])
def test_unresolved_cache_references_are_forbidden_on_the_first_requesting_role(drop, message):
    objects = [o for o in [deployment(kv_cache="shared"), backend(), *cache_chain()] if o["kind"] != drop]
    assert messages(analyze(objects)) == [("spec.roles[0].resources.interface", message)]


def test_binding_in_another_namespace_does_not_resolve():
    chain = cache_chain()
    chain[1]["metadata"]["namespace"] = "team-b"
    assert messages(analyze([deployment(kv_cache="shared"), backend(), *chain]))[0][1] == MSG_BINDING_UNRESOLVED


def test_unresolved_cache_is_not_checked_without_interface_requests():
    assert analyze([deployment(kv_cache="missing", interface=None)]).ok


@pytest.mark.parametrize("value", ["-1", "1500m", -2, "0.5"])
def test_negative_and_fractional_interface_counts_get_the_operators_message(value):
    # validateModelDeploymentRoleResources refuses them on every role, before any translation.
    assert messages(analyze([deployment(interface=value)])) == [
        ("spec.roles[0].resources.interface", "interface count must be a non-negative whole number"),
        ("spec.roles[1].resources.interface", "interface count must be a non-negative whole number"),
    ]


@pytest.mark.parametrize("value", [None, "0", 0])
def test_zero_or_unset_requests_nothing(value):
    report = analyze([deployment(router=False, protocol=None, interface=value)])
    assert report.ok and not report.role_grants


def test_single_interface_gets_the_shared_rdma_key():
    report = analyze([deployment(interface="1")])
    assert dict(report.role_grants[0].resources) == {RDMA_SHARED_KEY: 1}


def test_member_groups_request_devices_from_fabric_interface_count():
    report = analyze([backend(fabric_interface_count=2), backend(name="single", fabric_interface_count=1),
                      backend(name="efa", protocol="EFA"), backend(name="tcp", protocol="TCP", fabric_interface_count=None)])
    grants = {g.backend: dict(g.resources) for g in report.member_grants}
    assert grants == {"mooncake": {RDMA_EXCLUSIVE_KEY: 2}, "single": {RDMA_SHARED_KEY: 1},
                      "efa": {EFA_KEY: 2}, "tcp": {}}


def test_fabric_interface_count_on_a_tcp_group_is_a_warning():
    report = analyze([backend(protocol="TCP", fabric_interface_count=2)])
    assert report.ok
    assert [w.path for w in report.warnings] == ["spec.connection.managed.members[0].fabricInterfaceCount"]


def test_member_override_beats_backend_protocol():
    report = analyze([backend(protocol="TCP", member_protocols=("EFA",))])
    assert report.member_grants[0].protocol == "efa"


def test_other_kinds_and_groups_are_passed_over():
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}
    other = copy.deepcopy(deployment(router=False, protocol=None))
    other["apiVersion"] = "example.com/v1"
    assert analyze([pod, other]).ok


@pytest.mark.parametrize("api, rendered", [
    (None, "tcp"), ("Auto", "tcp"), ("TCP", "tcp"), ("RDMA", "rdma"), ("EFA", "efa"),
    ("CANN", "ascend"), ("ROCM", "hip"), ("rdma", "rdma"),
])
def test_protocol_spelling(api, rendered):
    assert effective_protocol(api) == rendered


@given(st.integers(min_value=1, max_value=64))
def test_translation_rules(count):
    rdma = fabric_resources("rdma", count)
    assert rdma == ({RDMA_SHARED_KEY: 1} if count == 1 else {RDMA_EXCLUSIVE_KEY: count})
    assert fabric_resources("efa", count) == {EFA_KEY: count}
    assert fabric_resources("tcp", count) == {}


@given(st.integers(min_value=1, max_value=64), st.sampled_from(["RDMA", "EFA"]))
def test_admitted_roles_receive_exactly_the_translated_keys(count, protocol):
    report = analyze([deployment(protocol=protocol, interface=str(count))])
    assert report.ok
    for grant in report.role_grants:
        assert dict(grant.resources) == fabric_resources(protocol.lower(), count)


def test_manufacturer_parsing():
    assert manufacturer_of(A10G) == "nvidia"
    assert manufacturer_of("gpustack--intel-xeon-8358--amd-mi300x-linux-amd64") == "amd"
    assert manufacturer_of("gpustack--generic-linux-amd64") is None
    assert manufacturer_of("my-queue") is None


def test_operator_messages_are_verbatim():
    # The operator's exact strings (model_deployment_fabric.go and its webhook); a change here breaks parity with the operator.
    assert transfer_legs.MSG_NOT_POSITIVE == "interface count must be positive"
    assert transfer_legs.msg_conflicting_groups("tcp", "rdma") == "cache member groups use conflicting protocols: tcp, rdma"
    assert transfer_legs.msg_conflicting_legs("rdma", "efa") == "cache and direct-transfer legs use rdma and efa"
    assert MSG_POOL_UNRESOLVED == "cache pool must resolve before requesting interfaces"
    assert MSG_BACKEND_UNRESOLVED == "cache backend must resolve before requesting interfaces"


def test_engine_serialized_counts_are_whole_numbers():
    # The engine sends every number as a double.
    member_backend = backend(fabric_interface_count=2.0)
    report = analyze([member_backend])
    assert report.ok and dict(report.member_grants[0].resources) == {RDMA_EXCLUSIVE_KEY: 2}
