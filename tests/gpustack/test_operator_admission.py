"""The operator's own Go test tables, ported: each case names the Go test (and file) it comes from.

Files are in github.com/gpustack/gpustack-operator (commits in gpu_fabric.gpustack.operator_pin), so every case
runs against the ``main@5cfac77b`` profile, whatever the stack default is. Cases that need
cluster state the offline analysis does not have (update-time identity, InstanceType reads for an
elastic head) are left out; each such omission is listed beside the table it belongs to.
"""

import copy

import pytest

from gpu_fabric.gpustack.admission.model_deployment_elastic import ELASTIC_WIDTH_MAX, ELASTIC_WIDTH_MIN, elastic_findings
from gpu_fabric.gpustack.transfer_legs import (
    EFA_KEY,
    MSG_NO_FABRIC_LEG,
    RDMA_EXCLUSIVE_KEY,
    RDMA_SHARED_KEY,
    InterfaceRefusal,
    direct_interface_protocol,
    interface_resource,
    member_group_protocols,
    validate_binding_transport,
)
from gpu_fabric.gpustack import admission_pipeline
from gpu_fabric.gpustack.profiles import pin_profile

PIN = pin_profile()


def analyze(objects, **kwargs):
    """The operator's admission as mirrored at the pin (the commit these Go tables come from)."""
    return admission_pipeline.analyze(objects, operator=PIN, **kwargs)


A10G = "gpustack--nvidia-a10g-linux-amd64"

# ---- TestModelDeploymentInterfaceResource (pkg/worker/controllers/worker/model_deployment_render_test.go) ----


# One table, run twice: against the pure function here and end to end through manifests below.
INTERFACE_RESOURCE_CASES = [
    ("store RDMA shared", ["rdma"], "", 1, RDMA_SHARED_KEY, None),
    ("store RDMA exclusive", ["rdma"], "", 2, RDMA_EXCLUSIVE_KEY, None),
    ("pure direct EFA", [], "efa", 2, EFA_KEY, None),
    ("same fabric once", ["efa"], "efa", 1, EFA_KEY, None),
    ("TCP group with direct fabric", ["tcp"], "rdma", 1, RDMA_SHARED_KEY, None),
    ("mixed groups", ["tcp", "rdma"], "rdma", 1, None, "cache member groups use conflicting protocols: tcp, rdma"),
    ("mixed legs", ["rdma"], "efa", 1, None, "cache and direct-transfer legs use rdma and efa"),
    ("no fabric", ["tcp"], "tcp", 1, None, MSG_NO_FABRIC_LEG),
]


@pytest.mark.parametrize("name, store, direct, count, want, want_error", INTERFACE_RESOURCE_CASES)
def test_model_deployment_interface_resource(name, store, direct, count, want, want_error):
    """TestModelDeploymentInterfaceResource."""
    if want_error:
        with pytest.raises(InterfaceRefusal) as refused:
            interface_resource(store, direct, count)
        assert str(refused.value) == want_error
    else:
        assert interface_resource(store, direct, count) == want


def test_conflicting_groups_message_lists_every_group_in_order():
    """ModelDeploymentInterfaceResource joins the whole storeProtocols slice, not the first differing pair."""
    with pytest.raises(InterfaceRefusal) as refused:
        interface_resource(["rdma", "rdma", "tcp"], "", 1)
    assert str(refused.value) == "cache member groups use conflicting protocols: rdma, rdma, tcp"


# ---- TestRenderModelDeploymentPod_InterfaceRequest (model_deployment_render_test.go) -------------------------


def prefill_decode(*, protocol="RDMA", interface=None, engine="vLLM", router="llm-d-router", kinds=("Prefill", "Decode"),
                   instance_type=A10G, command=None, kv_cache=None, name="qwen-pd"):
    roles = []
    for kind in kinds:
        role = {"name": kind.lower(), "kind": kind, "instanceType": instance_type}
        if interface is not None:
            role["resources"] = {"interface": interface}
        if command:
            role["command"] = command
        roles.append(role)
    spec = {"model": {"name": "Qwen/Qwen2.5-7B-Instruct"}, "engine": {"name": engine, "version": "0.29.0"}, "roles": roles}
    if router:
        spec["router"] = {"name": router}
    if protocol:
        spec["kvTransfer"] = {"protocol": protocol}
    if kv_cache:
        spec["kvCache"] = {"poolRef": {"name": kv_cache}}
    return {"apiVersion": "worker.gpustack.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": name, "namespace": "team-a"}, "spec": spec}


@pytest.mark.parametrize("name, count, protocol, resource", [
    ("absent", None, "RDMA", None),
    ("one RDMA interface", "1", "RDMA", RDMA_SHARED_KEY),
    ("two RDMA interfaces", "2", "RDMA", RDMA_EXCLUSIVE_KEY),
    ("two EFA interfaces", "2", "EFA", EFA_KEY),
])
def test_render_model_deployment_pod_interface_request(name, count, protocol, resource):
    """TestRenderModelDeploymentPod_InterfaceRequest: the key and count the engine container receives."""
    report = analyze([prefill_decode(interface=count, protocol=protocol)])
    assert report.ok
    if resource is None:
        assert report.role_grants == ()
    else:
        assert dict(report.role_grants[0].resources) == {resource: 1 if resource == RDMA_SHARED_KEY else int(count)}


# ---- TestModelDeploymentDirectInterfaceProtocol (model_deployment_render_test.go) ---------------------------


@pytest.mark.parametrize("name, engine, manufacturer, command, want", [
    ("native vLLM", "vLLM", "nvidia", None, "efa"),
    ("Ascend ignores declaration", "vLLM", "ascend", None, ""),
    ("unobserved manufacturer cannot select device", "vLLM", "", None, ""),
    ("SGLang ignores declaration", "SGLang", "nvidia", None, ""),
    ("user command owns transfer", "vLLM", "nvidia", ["custom"], ""),
])
def test_model_deployment_direct_interface_protocol(name, engine, manufacturer, command, want):
    """TestModelDeploymentDirectInterfaceProtocol: router llm-d, kvTransfer efa, a prefill role plus a decode role."""
    spec = prefill_decode(engine=engine, protocol="EFA", command=command)["spec"]
    assert direct_interface_protocol(spec, spec["roles"][0], manufacturer) == want


def test_direct_leg_needs_both_halves():
    """modelDeploymentUsesKVTransfer: the leg follows the pair (ModelDeploymentDeclaresBothHalves), not the half."""
    lone_prefill = prefill_decode(kinds=("Prefill",), protocol="EFA")["spec"]
    assert direct_interface_protocol(lone_prefill, lone_prefill["roles"][0], "nvidia") == ""
    report = analyze([prefill_decode(kinds=("Prefill",), interface="2")])
    assert [(f.path, operator_words(f.message)) for f in report.errors] == [("spec.roles[0].resources.interface", MSG_NO_FABRIC_LEG)]


def test_direct_leg_on_ascend_needs_the_llm_d_router():
    """modelDeploymentUsesKVTransfer: on Ascend only llm-d-router drives the leg (and Ascend never earns a device)."""
    spec = prefill_decode(router="vllm-router")["spec"]
    assert direct_interface_protocol(spec, spec["roles"][0], "ascend") == ""


# ---- TestMemberProtocols (pkg/worker/kvcache/mooncake/member_workload_test.go) ------------------------------


def kv_backend(protocol=None, groups=(None,), name="mooncake", managed=True):
    spec = {"type": "Mooncake", "connection": {}}
    if protocol:
        spec["transport"] = {"protocol": protocol}
    if managed:
        members = []
        for group_protocol in groups:
            member = {"nodeSelector": {"kubernetes.io/os": "linux"}, "medium": "DRAM", "capacityPerMember": "8Gi"}
            if group_protocol:
                member["transport"] = {"protocol": group_protocol}
            members.append(member)
        spec["connection"]["managed"] = {"leader": {}, "members": members}
    else:
        spec["connection"]["external"] = {"endpoints": [{"name": "Client", "address": "mooncake.example:50051"}]}
    return {"apiVersion": "worker.gpustack.ai/v1alpha1", "kind": "KVCacheBackend", "metadata": {"name": name}, "spec": spec}


@pytest.mark.parametrize("name, backend, want", [
    ("each group's own transport, in declaration order", kv_backend(groups=(None, "RDMA")), ["tcp", "rdma"]),
    ("a group declaring none inherits the backend's", kv_backend(groups=(None, None)), ["tcp", "tcp"]),
    ("a backend with no groups offers the backend-wide value alone", kv_backend("RDMA", managed=False), ["rdma"]),
])
def test_member_protocols(name, backend, want):
    """TestMemberProtocols."""
    assert member_group_protocols(backend) == want


# ---- the binding-transport rule (ValidateBindingTransport, pkg/worker/kvcache/inject/engine.go) -------------
# Ported from TestMatchTransport / TestMatchTransport_MixedOffersMessage (pkg/worker/kvcache/inject/engine_test.go):
# in the engine_test.go stored, MatchTransport itself refused an unconstrained engine's mixed offers; at the
# pinned engine.go that refusal (same words) is ValidateBindingTransport's, run by the webhook for a new binding.
# The constrained-engine rows (vllm-ascend takes the first offer it accepts) are MatchTransport's render-time
# choice, not an admission refusal, and are not ported.


@pytest.mark.parametrize("name, engine, offers, refused", [
    ("an unconstrained engine accepts one effective transport", "vllm", ["rdma", "rdma"], False),
    ("an unconstrained engine refuses mixed offers", "vllm", ["rdma", "tcp"], True),
    ("an unmeasured engine is not refused", "mystery-engine", ["tcp"], False),
    ("no offers is not a transport refusal", "vllm", [], False),
    ("a constrained engine is left to its own check", "vllm-ascend", ["tcp", "ascend"], False),
])
def test_binding_transport(name, engine, offers, refused):
    """TestMatchTransport rows, against ValidateBindingTransport."""
    assert (validate_binding_transport(engine, offers) is not None) is refused


def test_binding_transport_mixed_offers_message():
    """TestMatchTransport_MixedOffersMessage."""
    message = validate_binding_transport("vllm", ["rdma", "", "tcp", "rdma"])
    assert '["rdma" "tcp"]' in message
    for fragment in ("declares no required transport", "only one transport", "NotSupportedTransport",
                     "spec.transport.protocol", "member group's transport.protocol"):
        assert fragment in message


def cache_objects(backend):
    binding = {"apiVersion": "worker.gpustack.ai/v1alpha1", "kind": "KVCachePoolBinding",
               "metadata": {"name": "shared", "namespace": "team-a"},
               "spec": {"poolRef": {"name": "pool"}, "quota": {"ceiling": "8Gi"},
                        "domain": {"blockSize": 16, "dtype": "bfloat16"}}}
    pool = {"apiVersion": "worker.gpustack.ai/v1alpha1", "kind": "KVCachePool", "metadata": {"name": "pool"},
            "spec": {"backends": [backend["metadata"]["name"]], "quota": {"total": "16Gi"}}}
    return [backend, pool, binding]


def test_new_binding_to_a_mixed_transport_pool_is_refused_without_an_interface_request():
    """validateModelDeploymentPoolTransport: runs on every new kvCache reference, interfaces or not."""
    server = prefill_decode(kinds=("Server",), router=None, protocol=None, kv_cache="shared")
    report = analyze([server, *cache_objects(kv_backend("TCP", groups=(None, "RDMA")))])
    [finding] = report.errors
    assert finding.path == "spec.kvCache.poolRef.name"
    assert finding.message.startswith('engine "vllm" declares no required transport and this pool offers ["tcp" "rdma"]')


def test_mixed_transport_pool_is_not_this_rules_refusal_for_vllm_on_ascend():
    """ModelDeploymentInjectEngine: vLLM on Ascend is vllm-ascend, which requires one transport and is exempt here."""
    server = prefill_decode(kinds=("Server",), router=None, protocol=None, kv_cache="shared", instance_type="ascend-pool")
    objects = [server, *cache_objects(kv_backend("TCP", groups=(None, "RDMA")))]
    assert analyze(objects, manufacturers={"ascend-pool": "ascend"}).ok


# ---- TestValidateModelDeploymentElasticSpec (pkg/worker/webhooks/worker/model_deployment_elastic_test.go) ----
# Create cases only. Not ported: the update cases (width decrease, presence removed, headInstanceType change:
# they compare against a stored object) and the head InstanceType lookups (need the cluster; headInstanceType
# is also absent from the schema and webhook gpu-fabric pins).


def elastic_role(**changes):
    role = {"name": "vllm-elastic", "kind": "Server", "replicas": 1, "size": 1, "instanceType": "nvidia-gpu",
            "elasticEp": {"width": 2}}
    role.update(changes)
    return role


def elastic_md(*roles, engine="vLLM"):
    return {"model": {"name": "Qwen/Qwen3-30B-A3B"}, "engine": {"name": engine, "version": "0.29.0"},
            "roles": list(roles) or [elastic_role()]}


@pytest.mark.parametrize("name, spec, want", [
    ("valid minimal elastic profile admitted", elastic_md(), []),
    ("width at upper bound admitted", elastic_md(elastic_role(elasticEp={"width": ELASTIC_WIDTH_MAX})), []),
    ("width below minimum refused", elastic_md(elastic_role(elasticEp={"width": ELASTIC_WIDTH_MIN - 1})), ["width"]),
    ("width above maximum refused", elastic_md(elastic_role(elasticEp={"width": ELASTIC_WIDTH_MAX + 1})), ["width"]),
    ("second elastic role refused", elastic_md(elastic_role(), elastic_role(name="vllm-elastic-2")), ["elasticEp"]),
    ("non-elastic second role refused",
     elastic_md(elastic_role(), {"name": "plain-server", "kind": "Server", "replicas": 1, "instanceType": "nvidia-gpu"}),
     ["elasticEp"]),
    ("replicas above one refused", elastic_md(elastic_role(replicas=2)), ["replicas"]),
    ("size above one refused", elastic_md(elastic_role(size=2)), ["size"]),
    ("non-server kind refused", elastic_md(elastic_role(kind="Prefill")), ["kind"]),
    ("non-vLLM engine refused", elastic_md(engine="SGLang"), ["engine"]),
    ("command take-over refused", elastic_md(elastic_role(command=["python", "-m", "vllm"])), ["command"]),
    ("multi-accelerator request refused", elastic_md(elastic_role(resources={"accelerator": 2})), ["accelerator"]),
    ("sliced accelerator request refused",
     elastic_md(elastic_role(resources={"accelerator": 1, "acceleratorSlicedMemoryPercentage": 50})),
     ["acceleratorSlicedMemoryPercentage"]),
    ("partitioned profile refused",
     elastic_md(elastic_role(resources={"accelerator": 1, "acceleratorPartitionedProfile": "3g.40gb"})),
     ["acceleratorPartitionedProfile"]),
    ("fabric interface request refused", elastic_md(elastic_role(resources={"interface": 1})), ["interface"]),
    ("operator-owned native flag refused", elastic_md(elastic_role(extraArgs=["--data-parallel-size=4"])), ["extraArgs"]),
    ("operator-owned native env refused", elastic_md(elastic_role(env=[{"name": "VLLM_DP_SIZE", "value": "4"}])), ["env"]),
    ("unrelated ray tuning env admitted",
     elastic_md(elastic_role(env=[{"name": "RAY_BACKEND_LOG_LEVEL", "value": "debug"}])), []),
])
def test_validate_model_deployment_elastic_spec(name, spec, want):
    """TestValidateModelDeploymentElasticSpec: every wanted fragment appears in 'field message' of some error."""
    found = [(f.path, f.message) for f in elastic_findings(spec)]
    joined = "\n".join(f"{path} {message}" for path, message in found)
    if not want:
        assert found == [], joined
    for fragment in want:
        assert fragment in joined, joined


@pytest.mark.parametrize("env_name", ["GPUSTACK_ELASTIC_POD_UID", "RAY_OVERRIDE_LABELS", "GPUSTACK_ELASTIC_POD_IP",
                                      "VLLM_RAY_DP_PACK_STRATEGY"])
def test_validate_elastic_node_identity_env(env_name):
    """TestValidateElasticNodeIdentityEnv: exactly one refusal, on the entry's name."""
    found = elastic_findings(elastic_md(elastic_role(env=[{"name": env_name, "value": "override"}])))
    assert [f.path for f in found] == ["spec.roles[0].env[0].name"]


@pytest.mark.parametrize("flag", ["--data-parallel-backend=mp", "--data-parallel-address=127.0.0.1",
                                  "--enable-expert-parallel=false", "-dp=8", "-dpl=0", "-dpb=mp", "-dpa=127.0.0.1"])
def test_elastic_native_bootstrap_flags(flag):
    """TestElasticNativeBootstrapFlags: each renderer-owned flag, in any spelling, is one refusal."""
    found = elastic_findings(elastic_md(elastic_role(extraArgs=[flag])))
    assert [f.path for f in found] == ["spec.roles[0].extraArgs"]


def test_elastic_tensor_parallel_sets_the_card_count():
    """validateModelDeploymentElasticResources: each member takes exactly TP whole accelerators."""
    assert elastic_findings(elastic_md(elastic_role(extraArgs=["--tensor-parallel-size", "4"],
                                                    resources={"accelerator": "4"}))) == []
    [(path, message)] = [(f.path, f.message) for f in
                         elastic_findings(elastic_md(elastic_role(extraArgs=["-tp=4"], resources={"accelerator": "2"})))]
    assert path == "spec.roles[0].resources.accelerator"
    assert message == "each elastic member takes exactly 4 whole accelerators per Pod"


def test_elastic_width_within_the_startup_ceiling():
    found = elastic_findings(elastic_md(elastic_role(elasticEp={"width": 8}, extraArgs=["--elastic-ep-max-dp-size=4"])))
    assert [(f.path, f.message) for f in found] == [("spec.roles[0].elasticEp.width", "must not exceed the startup --elastic-ep-max-dp-size (4)")]


# ---- validateModelDeployment: the object-only rules, end to end through analyze() ---------------------------


def errors(*objects, **kwargs):
    return [(f.path, operator_words(f.message)) for f in analyze(list(objects), **kwargs).errors]

def operator_words(message: str) -> str:
    """The operator's own message of a refusal: gpu-fabric adds the cause and the fix after it (issue 36)."""
    return message.split(": ", 1)[0] if message.startswith(MSG_NO_FABRIC_LEG + ": ") else message



def test_engine_version_is_required_when_a_role_names_no_image():
    """validateModelDeploymentEngineVersion."""
    deployment = prefill_decode(interface="2")
    del deployment["spec"]["engine"]["version"]
    assert errors(deployment) == [("spec.engine.version",
                                   'role "prefill" names no image of its own, so its image is synthesized from the '
                                   "engine and its version, and an empty version assembles a tag naming something "
                                   "never typed. Give the engine a version, or name an image on the role")]
    for role in deployment["spec"]["roles"]:
        role["image"] = "registry.example/runner:efa"
    assert errors(deployment) == []


@pytest.mark.parametrize("router, engine, admitted", [
    ("llm-d-router", "vLLM", True), ("llm-d-router", "SGLang", True),
    ("vllm-router", "vLLM", True), ("vllm-router", "SGLang", False),
    ("sglang-gateway", "SGLang", True), ("sglang-gateway", "vLLM", False),
])
def test_router_must_front_the_engine(router, engine, admitted):
    """validateModelDeploymentRouter / modelDeploymentRouterEngines."""
    found = errors(prefill_decode(router=router, engine=engine, protocol=None))
    if admitted:
        assert found == []
    else:
        accepts = "vLLM" if router == "vllm-router" else "SGLang"
        assert found == [("spec.router.name", f'router "{router}" does not front engine "{engine}"; it accepts {accepts}')]


def test_router_owned_flags_and_threshold():
    deployment = prefill_decode(router="vllm-router", protocol=None)
    deployment["spec"]["router"].update(extraArgs=["--port=9000", "--log-level=debug"], disaggregationThresholdTokens=512)
    assert [path for path, _ in errors(deployment)] == ["spec.router.extraArgs[0]", "spec.router.disaggregationThresholdTokens"]


def test_server_with_prefill_and_repeated_kinds():
    """validateModelDeploymentRoleKinds."""
    mixed = prefill_decode(kinds=("Server", "Prefill"), router=None, protocol=None)
    assert [path for path, _ in errors(mixed)] == ["spec.roles[0].kind", "spec.roles[1].kind"]
    repeated = prefill_decode(kinds=("Prefill", "Decode"), router=None, protocol=None)
    repeated["spec"]["roles"].append({"name": "prefill-2", "kind": "Prefill", "instanceType": A10G})
    [(path, message)] = errors(repeated)
    assert path == "spec.roles[2].kind" and message.startswith('kind "Prefill" is already declared by role "prefill"')


def test_topology_hostname_is_forbidden():
    """validateModelDeploymentRoleTopology."""
    deployment = prefill_decode(protocol=None)
    deployment["spec"]["roles"][0]["topology"] = {"requiredLevel": "kubernetes.io/hostname"}
    assert errors(deployment) == [("spec.roles[0].topology.requiredLevel",
                                   "kubernetes.io/hostname is implicit and cannot be required; omitting requiredLevel "
                                   "leaves placement unconstrained, it does not keep the Pods on one Node")]
    deployment["spec"]["roles"][0]["topology"] = {"requiredLevel": "not a key!"}
    assert errors(deployment)[0][1].startswith("is not a topology label key: ")


def test_role_service_name_must_be_a_dns_1035_label():
    """validateModelDeploymentRoleServiceNames: <deployment>-<role> at most 63 characters."""
    deployment = prefill_decode(protocol=None, name="d" * 56)  # "-prefill" makes 64
    [(path, message), *_] = errors(deployment)
    assert path == "spec.roles[0].name" and "must be no more than 63 characters" in message


def test_additional_volume_needs_a_source_and_distinct_paths():
    """validateModelDeploymentRoleAdditionalVolumes."""
    deployment = prefill_decode(protocol=None)
    deployment["spec"]["roles"][0]["additionalVolumes"] = [
        {"mountPath": "/etc/token"}, {"mountPath": "/etc/token", "secret": {"name": "hf"}, "subPath": "a/../b"}]
    assert [path for path, _ in errors(deployment)] == [
        "spec.roles[0].additionalVolumes[0]", "spec.roles[0].additionalVolumes[1].mountPath",
        "spec.roles[0].additionalVolumes[1].subPath"]


def test_interface_rules_run_only_once_the_object_rules_pass():
    """ValidateCreate: interface requests are judged only when validateModelDeployment found nothing."""
    deployment = prefill_decode(router=None, protocol=None, interface="2")
    assert [path for path, _ in errors(deployment)] == ["spec.roles[0].resources.interface",
                                                         "spec.roles[1].resources.interface"]
    del deployment["spec"]["engine"]["version"]
    assert [path for path, _ in errors(deployment)] == ["spec.engine.version"]


def test_command_drops_the_cache_leg_too():
    """validateModelDeploymentInterfaceRequests: a role with a command gets no cache protocols either."""
    objects = cache_objects(kv_backend("RDMA"))
    server = prefill_decode(kinds=("Server",), router=None, protocol=None, kv_cache="shared", interface="2")
    assert errors(server, *objects) == []
    server["spec"]["roles"][0]["command"] = ["python", "serve.py"]
    assert errors(server, *objects) == [("spec.roles[0].resources.interface", MSG_NO_FABRIC_LEG)]


def test_manufacturer_comes_from_the_instance_type_when_it_is_known():
    """The webhook reads InstanceType.status.detail.manufacturer; the name is only a fallback."""
    deployment = prefill_decode(interface="2", instance_type="gpustack--nvidia-a10g-linux-amd64")
    observed = {"apiVersion": "worker.gpustack.ai/v1", "kind": "InstanceType",
                "metadata": {"name": "gpustack--nvidia-a10g-linux-amd64"},
                "status": {"detail": {"manufacturer": "ascend"}}}
    assert errors(deployment) == []  # the name says nvidia
    assert [m for _, m in errors(deployment, observed)] == [MSG_NO_FABRIC_LEG, MSG_NO_FABRIC_LEG]
    unobserved = copy.deepcopy(observed)
    unobserved["status"] = {}
    assert [m for _, m in errors(deployment, unobserved)] == [MSG_NO_FABRIC_LEG, MSG_NO_FABRIC_LEG]
    named = prefill_decode(interface="2", instance_type="custom-pool")
    assert errors(named) != [] and errors(named, manufacturers={"custom-pool": "nvidia"}) == []


# ---- the same rules reach load_config at configuration paths ------------------------------------------------


def test_configuration_binding_to_a_mixed_transport_pool_is_refused_at_its_path():
    from gpu_fabric.config.base import ConfigError
    from gpu_fabric.validation.configuration import load_config
    from support.stack_configs import stack_values

    values = copy.deepcopy(stack_values("aws-efa"))
    members = values["kvCacheBackends"][0]["connection"]["managed"]["members"]
    members.append({**members[0], "transport": {"protocol": "TCP"}})
    for role in values["modelDeployments"][0]["roles"]:
        role["resources"].pop("interface")
    with pytest.raises(ConfigError) as refused:
        load_config(values)
    problems = dict(refused.value.pairs)
    assert list(problems) == ["modelDeployments[0].kvCache.poolRef.name"]
    assert 'this pool offers ["efa" "tcp"]' in problems["modelDeployments[0].kvCache.poolRef.name"]


def test_configuration_elastic_profile_reaches_the_manifest_and_its_rules():
    from gpu_fabric.config.base import ConfigError
    from gpu_fabric.validation.configuration import load_config
    from support.stack_configs import seed_values

    values = seed_values()
    deployment = values["modelDeployments"][0]
    deployment.pop("router"), deployment.pop("kvTransfer")
    deployment["roles"] = [{"name": "elastic", "instanceType": A10G, "elasticEp": {"width": 4},
                            "resources": {"accelerator": "1"}}]
    assert load_config(values).model_deployments[0].roles[0].elastic_ep.width == 4
    deployment["roles"][0]["replicas"] = 2
    with pytest.raises(ConfigError) as refused:
        load_config(values)
    assert dict(refused.value.pairs) == {
        "modelDeployments[0].roles[0].replicas":
            "the elastic-EP profile is one serving instance; width, not replicas, sizes the collective [model-deployment-admission]"}


# ---- the same table, end to end: manifests through analyze(), which lint and the pack run --------------------

_PROTOCOL_ENUM = {"tcp": "TCP", "rdma": "RDMA", "efa": "EFA"}


@pytest.mark.parametrize("name, store, direct, count, want, want_error", INTERFACE_RESOURCE_CASES)
def test_model_deployment_interface_resource_through_manifests(name, store, direct, count, want, want_error):
    """TestModelDeploymentInterfaceResource rows as manifests: a backend whose groups carry ``store``, a routed
    vLLM prefill/decode pair on an NVIDIA pool declaring ``direct`` (no router when there is no direct leg)."""
    objects = []
    deployment = prefill_decode(interface=str(count), protocol=_PROTOCOL_ENUM.get(direct),
                                router="llm-d-router" if direct else None,
                                kinds=("Prefill", "Decode") if direct else ("Server",),
                                kv_cache="shared" if store else None)
    objects.append(deployment)
    if store:
        objects += cache_objects(kv_backend(groups=tuple(_PROTOCOL_ENUM[p] for p in store)))
    report = analyze(objects)
    interface_errors = [operator_words(f.message) for f in report.errors if f.path.endswith("resources.interface")]
    if want_error:
        assert want_error in interface_errors
    else:
        assert report.ok, report.errors
        assert {next(iter(g.resources)) for g in report.role_grants} == {want}


# ---- KVCachePool / KVCachePoolBinding webhooks (kv_cache_pool.go, kv_cache_pool_binding.go) ---------------------


def binding(name="shared", namespace="team-a", pool="pool", domain=None, ceiling="8Gi", block_size=16, dtype="bfloat16"):
    spec_domain = {"blockSize": block_size, "dtype": dtype}
    if domain:
        spec_domain["name"] = domain
    return {"apiVersion": "worker.gpustack.ai/v1alpha1", "kind": "KVCachePoolBinding",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"poolRef": {"name": pool}, "quota": {"ceiling": ceiling}, "domain": spec_domain}}


def pool(name="pool", backends=("mooncake",), total="16Gi"):
    return {"apiVersion": "worker.gpustack.ai/v1alpha1", "kind": "KVCachePool", "metadata": {"name": name},
            "spec": {"backends": list(backends), "quota": {"total": total}}}


@pytest.mark.parametrize("backends, path, fragment", [
    ((), "spec.backends", "exactly 1 backend is supported, and 0 were given"),
    (("a", "b"), "spec.backends", "exactly 1 backend is supported, and 2 were given"),
    (("",), "spec.backends[0]", "a backend is named by the name of a KVCacheBackend"),
])
def test_pool_names_exactly_one_backend(backends, path, fragment):
    """validateKVCachePoolSpec."""
    [(found_path, message)] = errors(pool(backends=backends))
    assert found_path == path and fragment in message


@pytest.mark.parametrize("changes, path, fragment", [
    ({"domain": "Llama_70B"}, "spec.domain.name", "a reuse domain is named like a Kubernetes object"),
    ({"block_size": 0}, "spec.domain.blockSize", "must be greater than 0"),
    ({"dtype": "BFloat16"}, "spec.domain.dtype", "must be lowercase"),
    ({"pool": ""}, "spec.poolRef.name", "a Binding grants exactly one pool, named here"),
])
def test_binding_shape(changes, path, fragment):
    """validateKVCachePoolBindingSpec / validateKVCachePoolBindingDomain."""
    [(found_path, message)] = errors(binding(**changes), pool(), kv_backend())
    assert found_path == path and fragment in message


def test_binding_ceiling_must_fit_the_pool():
    """validateKVCachePoolBindingCeilingFitsPool."""
    assert errors(binding(ceiling="16Gi"), pool(total="16Gi"), kv_backend()) == []
    [(path, message)] = errors(binding(ceiling="17Gi"), pool(total="16Gi"), kv_backend())
    assert path == "spec.quota.ceiling"
    assert message.startswith("must not exceed the pool's own ceiling of 16Gi")


def test_one_domain_per_master():
    """validateKVCachePoolBindingDomainIsUnclaimed: per master, and an omitted name is "default"."""
    same_master = [binding(), binding(name="other", namespace="team-b"), pool(), kv_backend()]
    [(path, message)] = errors(*same_master)
    # field.Duplicate: the API server prints the value Go-quoted.
    assert path == "spec.domain.name" and message.startswith('Duplicate value: "reuse domain \\"default\\" is already registered by team-a/shared, and backend mooncake serves both')
    assert errors(binding(domain="a"), binding(name="other", namespace="team-b", domain="b"), pool(), kv_backend()) == []
    other_master = [binding(), binding(name="other", namespace="team-b", pool="pool-2"), pool(),
                    pool(name="pool-2", backends=("mooncake-2",)), kv_backend(), kv_backend(name="mooncake-2")]
    assert errors(*other_master) == []


def test_a_refused_binding_does_not_resolve_for_its_deployment():
    server = prefill_decode(kinds=("Server",), router=None, protocol=None, kv_cache="shared", interface="1")
    found = errors(server, binding(ceiling="1Ti"), pool(), kv_backend("RDMA"))
    assert ("spec.roles[0].resources.interface", "cache binding must resolve before requesting interfaces") in found


def test_pool_over_a_single_tenant_backend_is_admitted_with_a_warning():
    """validateKVCachePoolBackend: a managed leader with multiTenancy: false."""
    backend = kv_backend()
    backend["spec"]["connection"]["managed"]["leader"]["multiTenancy"] = False
    report = analyze([pool(), backend])
    assert report.ok
    [warning] = report.warnings
    assert warning.path == "spec.backends[0]" and 'backend "mooncake" runs without multi-tenancy' in warning.message


@pytest.mark.parametrize("change, path, fragment", [
    (lambda v: v["kvCachePoolBindings"][0]["poolRef"].update(name="nope"), "kvCachePoolBindings[0].poolRef.name",
     "names no KVCachePool of this stack"),
    (lambda v: v["kvCachePoolBindings"][0]["quota"].update(ceiling="1Ti"), "kvCachePoolBindings[0].quota.ceiling",
     "must not exceed the pool's own ceiling of 128Gi"),
    (lambda v: v["kvCachePools"][0]["backends"].append("mooncake-efa"), "kvCachePools[0].backends",
     "exactly 1 backend is supported, and 2 were given"),
    (lambda v: v["kvCachePoolBindings"][0]["domain"].update(dtype="BF16"), "kvCachePoolBindings[0].domain.dtype",
     "must be lowercase"),
])
def test_configuration_pool_and_binding_rules_at_their_paths(change, path, fragment):
    from gpu_fabric.config.base import ConfigError
    from gpu_fabric.validation.configuration import load_config
    from support.stack_configs import stack_values

    values = copy.deepcopy(stack_values("aws-efa"))
    change(values)
    with pytest.raises(ConfigError) as refused:
        load_config(values)
    problems = dict(refused.value.pairs)
    assert path in problems and fragment in problems[path], problems


# ---- KVCacheBackend webhook (kv_cache_backend.go), object-only rules -------------------------------------------


@pytest.mark.parametrize("change, path, fragment", [
    (lambda b: b["spec"]["connection"].update(external={"endpoints": [{"name": "Client", "address": "x:1"}]}),
     "spec.connection", 'only one of "managed" or "external" may be set'),
    (lambda b: b["spec"]["connection"].pop("managed"), "spec.connection", 'one of "managed" or "external" must be set'),
    (lambda b: b["spec"]["connection"]["managed"]["leader"].update(replicas=3), "spec.connection.managed.leader.replicas",
     "more than one leader requires leader.highAvailability"),
    (lambda b: b["spec"]["connection"]["managed"]["members"][0].update(capacityPerMember="0"),
     "spec.connection.managed.members[0].capacityPerMember", "must be greater than 0"),
    (lambda b: b["metadata"].update(name="a" * 60), "metadata.name", "this backend renders an object named"),
    (lambda b: b["spec"].update(image="  "), "spec.image", "must not be blank"),
    (lambda b: b["spec"].update(imagePullSecrets=[{"name": ""}]), "spec.imagePullSecrets[0].name",
     "name of the referenced secret must be specified"),
])
def test_backend_rules(change, path, fragment):
    """validateKVCacheBackendSpec and the helpers it calls."""
    backend = kv_backend()
    change(backend)
    found = errors(backend)
    assert any(p == path and fragment in m for p, m in found), found


@pytest.mark.parametrize("endpoints, fragment", [
    ([{"name": "Client", "address": "mooncake:50051"}], 'an entry named "Admin" is required'),
    ([{"name": "Client", "address": "mooncake"}, {"name": "Admin", "address": "mooncake:9003"}], "must be host:port"),
    ([{"name": "Client", "address": "mooncake:70000"}, {"name": "Admin", "address": "mooncake:9003"}], "outside 1-65535"),
    ([{"name": "Client", "address": " mooncake:1"}, {"name": "Admin", "address": "mooncake:9003"}], "must not begin or end"),
])
def test_external_backend_endpoints(endpoints, fragment):
    """validateKVCacheBackendExternal / checkHostPort."""
    backend = kv_backend(managed=False)
    backend["spec"]["connection"]["external"]["endpoints"] = endpoints
    assert any(fragment in message for _, message in errors(backend)), errors(backend)
    backend["spec"]["connection"]["external"]["endpoints"] = [{"name": "Client", "address": "mooncake:50051"},
                                                              {"name": "Admin", "address": "mooncake:9003"}]
    assert errors(backend) == []


@pytest.mark.parametrize("change, path, fragment", [
    (lambda m: m.update(localBufferSize="-1Gi"), "spec.connection.managed.members[0].localBufferSize", "must not be negative"),
    (lambda m: m.update(nodeSelector={"bad key!": "x"}), "spec.connection.managed.members[0].nodeSelector[bad key!]",
     "is not a label key"),
    (lambda m: m.update(nodeSelector={"kvcache": "not ok"}), "spec.connection.managed.members[0].nodeSelector[kvcache]",
     "is not a label value"),
    (lambda m: m.update(image=" "), "spec.connection.managed.members[0].image", "must not be blank"),
])
def test_backend_member_rules(change, path, fragment):
    """validateKVCacheBackendMember."""
    backend = kv_backend()
    change(backend["spec"]["connection"]["managed"]["members"][0])
    assert any(p == path and fragment in m for p, m in errors(backend)), errors(backend)
