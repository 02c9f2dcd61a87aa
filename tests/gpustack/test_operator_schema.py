"""The operator's CRD schemas, applied as the API server applies them (pruning = error, required, type, enum, bounds)."""

import copy
import re
from pathlib import Path

import pytest
import yaml

from gpu_fabric.gpustack.objects import gpustack_manifests
from gpu_fabric.config.constants import API_VERSIONS, DEFAULT_API_VERSION
from gpu_fabric.gpustack.operator_pin import OPERATOR_COMMIT, SCHEMA_COMMIT
from gpu_fabric.gpustack.profiles import PROFILES, pin_profile
from gpu_fabric.gpustack.schema import SCHEMA_FILES, read_bundled_yaml, validate_object, validate_objects
from gpu_fabric.config.base import ConfigError
from gpu_fabric.validation.configuration import load_config
from support.stack_configs import PROJECT_DIR, seed_values, stack_values

SHARED_SCHEMAS = PROJECT_DIR / ".." / "shared" / "schemas" / "gpustack-operator"
BUNDLED = PROJECT_DIR / "components" / "gpu_fabric" / "data" / "gpustack-operator"


def stack_manifests(stack):
    return gpustack_manifests(load_config(stack_values(stack)))


PIN = pin_profile()


def test_bundled_schema_files_read_alike_with_the_pure_python_loader():
    # The bundled CRDs are read with libyaml when PyYAML has it: the data must be what safe_load gives.
    files = sorted(BUNDLED.rglob("*.yaml"))
    assert len(files) >= len(SCHEMA_FILES)
    for path in files:
        text = path.read_text()
        assert read_bundled_yaml(text) == yaml.safe_load(text), path


def findings(obj):
    """Schema errors under the pin: this file checks the transcription of zz_generated.crds.go at ad484497
    (the release lines' derived schemas are tests/gpustack/test_operator_versions.py's)."""
    return {(f.path, f.message) for f in validate_object(obj, PIN) if f.severity == "error"}


def paths(obj):
    return {path for path, _ in findings(obj)}


@pytest.fixture
def deployment():
    """aws-efa's deployment in the pin's shape: the engine's version instead of its image (which the pin lacks)."""
    manifest = copy.deepcopy(next(m for m in stack_manifests("aws-efa") if m["kind"] == "ModelDeployment"))
    manifest["spec"]["engine"] = {"name": "vLLM", "version": "0.29.0"}
    return manifest


@pytest.fixture
def binding():
    return copy.deepcopy(next(m for m in stack_manifests("aws-efa") if m["kind"] == "KVCachePoolBinding"))


@pytest.mark.parametrize("stack", ["seed-rdma", "aws-efa"])
def test_example_stacks_render_objects_the_api_server_stores_intact(stack):
    manifests = stack_manifests(stack)
    assert {m["kind"] for m in manifests} >= {"ModelDeployment", "KVCacheBackend"}
    assert validate_objects(manifests) == []


def test_bundled_schemas_are_the_research_copies():
    if not SHARED_SCHEMAS.is_dir():
        pytest.skip("../shared is not available")
    for filename in SCHEMA_FILES.values():
        assert (BUNDLED / filename).read_bytes() == (SHARED_SCHEMAS / filename).read_bytes(), filename
    assert "Provenance" in (BUNDLED / "SOURCE.md").read_text() or "where they come from" in (BUNDLED / "SOURCE.md").read_text()


def test_engine_image_would_be_pruned_and_the_finding_says_what_to_write(deployment):
    deployment["spec"]["engine"]["image"] = "gpustack/runner:cuda13.0-vllm0.29.0"
    [(path, message)] = findings(deployment)
    assert path == "spec.engine.image"
    assert "prune" in message and "spec.roles[].image" in message and "spec.engine.version" in message


def test_unknown_nested_field_is_reported_at_its_path(deployment):
    deployment["spec"]["roles"][1]["resources"]["interfaces"] = "2"
    assert paths(deployment) == {"spec.roles[1].resources.interfaces"}


@pytest.mark.parametrize("field", ["ceiling"])
def test_binding_quota_ceiling_is_required(binding, field):
    del binding["spec"]["quota"][field]
    assert paths(binding) == {"spec.quota.ceiling"}


@pytest.mark.parametrize("field", ["blockSize", "dtype"])
def test_binding_domain_block_size_and_dtype_are_required(binding, field):
    del binding["spec"]["domain"][field]
    assert paths(binding) == {f"spec.domain.{field}"}


def test_a_field_with_a_schema_default_is_not_missing(binding):
    binding["spec"]["domain"].pop("name")  # defaults to "default"
    assert findings(binding) == set()


def test_wrong_type(deployment):
    deployment["spec"]["roles"][0]["replicas"] = "two"
    [(path, message)] = findings(deployment)
    assert path == "spec.roles[0].replicas" and "must be of type integer" in message


def test_enum_names_the_supported_values(deployment):
    deployment["spec"]["engine"]["name"] = "vllm"
    [(path, message)] = findings(deployment)
    assert path == "spec.engine.name"
    assert message == 'Unsupported value: "vllm": supported values: "vLLM", "SGLang"'


@pytest.mark.parametrize("field, value, fragment", [
    ("replicas", 0, "greater than or equal to 1"),
    ("replicas", 1025, "less than or equal to 1024"),
    ("size", 65, "less than or equal to 64"),
    ("terminationGracePeriodSeconds", 10, "greater than or equal to 15"),
    ("name", "Prefill_1", "must match"),
    ("image", "x" * 513, "at most 512 characters"),
    ("imagePullSecrets", [{"name": f"s{i}"} for i in range(33)], "at most 32 items"),
    ("elasticEp", {"width": 1}, "greater than or equal to 2"),
])
def test_bounds(deployment, field, value, fragment):
    deployment["spec"]["roles"][0][field] = value
    found = findings(deployment)
    assert len(found) == 1 and fragment in next(iter(found))[1], found


def test_quantity_fields_take_integers_or_quantity_strings(deployment):
    role = deployment["spec"]["roles"][0]
    role["shmSize"] = "16Gi"
    role["resources"]["interface"] = 32
    assert findings(deployment) == set()
    role["shmSize"] = "sixteen"
    role["resources"]["accelerator"] = [8]
    assert paths(deployment) == {"spec.roles[0].shmSize", "spec.roles[0].resources.accelerator"}


def test_null_is_allowed_only_where_the_schema_says_nullable(deployment):
    deployment["spec"]["router"] = None  # nullable
    assert findings(deployment) == set()
    deployment["spec"]["roles"][0]["image"] = None
    assert paths(deployment) == {"spec.roles[0].image"}


def test_list_map_keys_are_unique_including_defaulted_keys(deployment):
    deployment["spec"]["roles"][1]["name"] = deployment["spec"]["roles"][0]["name"]
    [(path, message)] = findings(deployment)
    assert path == "spec.roles[1]" and message.startswith("Duplicate value: ")
    deployment["spec"]["roles"][1]["name"] = "decode"
    deployment["spec"]["roles"][0]["ports"] = [{"port": 8000}, {"port": 8000, "protocol": "TCP"}]
    assert paths(deployment) == {"spec.roles[0].ports[1]"}


def test_secret_and_config_map_volumes_are_part_of_the_schema(deployment):
    deployment["spec"]["roles"][0]["additionalVolumes"] = [
        {"mountPath": "/etc/hf", "secret": {"name": "hf-token"}, "readOnly": True},
        {"mountPath": "/etc/engine", "configMap": {"name": "engine"}, "subPath": "config.yaml"},
    ]
    assert findings(deployment) == set()
    deployment["spec"]["roles"][0]["additionalVolumes"][0]["mountPath"] = "relative/path"
    assert paths(deployment) == {"spec.roles[0].additionalVolumes[0].mountPath"}


@pytest.mark.parametrize("version", API_VERSIONS)
def test_both_served_versions_are_accepted(deployment, version):
    deployment["apiVersion"] = f"worker.gpustack.ai/{version}"
    assert findings(deployment) == set()


def test_an_unserved_version_is_refused(deployment):
    deployment["apiVersion"] = "worker.gpustack.ai/v1beta1"
    assert paths(deployment) == {"apiVersion"}


def test_default_version_is_the_served_crd_version():
    assert DEFAULT_API_VERSION == "v1alpha1"
    assert {m["apiVersion"] for m in stack_manifests("aws-efa")} == {"worker.gpustack.ai/v1alpha1"}


def test_kinds_without_a_bundled_schema_are_a_warning_not_an_error():
    [finding] = validate_object({"apiVersion": "worker.gpustack.ai/v1", "kind": "InstanceType", "metadata": {"name": "x"}})
    assert finding.severity == "warning" and "InstanceType" in finding.message


def test_values_unknown_until_apply_are_not_judged(deployment):
    class Unknown:
        pass

    deployment["spec"]["roles"][0]["instanceType"] = Unknown()
    deployment["spec"]["engine"]["version"] = Unknown()
    assert findings(deployment) == set()


def test_engine_serialized_doubles_are_integers(deployment):
    deployment["spec"]["roles"][0]["replicas"] = 1.0
    assert findings(deployment) == set()
    deployment["spec"]["roles"][0]["replicas"] = 1.5
    assert paths(deployment) == {"spec.roles[0].replicas"}


def test_pin_names_full_commits():
    assert len(OPERATOR_COMMIT) == 40 and len(SCHEMA_COMMIT) == 40


# ---- the configuration model speaks the real API ---------------------------------------------------------


def config_problems(values):
    with pytest.raises(ConfigError) as caught:
        load_config(values)
    return dict(caught.value.pairs)


def test_engine_image_in_configuration_is_refused_at_the_pin_with_what_to_write_instead():
    values = seed_values()
    values["gpustackOperator"] = "main@5cfac77b"
    values["modelDeployments"][0]["engine"] = {"name": "vLLM", "image": "gpustack/runner:cuda13.0-vllm0.29.0"}
    found = config_problems(values)
    message = found["modelDeployments[0].engine.image"]
    assert "prune" in message and "spec.roles[].image" in message and "spec.engine.version" in message
    assert "0.10.0" in message  # ... or name the release the cluster runs, which has engine.image


@pytest.mark.parametrize("missing, path", [
    (("quota",), "kvCachePoolBindings[0].quota"),
    (("quota", "ceiling"), "kvCachePoolBindings[0].quota.ceiling"),
    (("domain", "blockSize"), "kvCachePoolBindings[0].domain.blockSize"),
    (("domain", "dtype"), "kvCachePoolBindings[0].domain.dtype"),
])
def test_binding_requires_quota_ceiling_block_size_and_dtype(missing, path):
    values = copy.deepcopy(stack_values("aws-efa"))
    target = values["kvCachePoolBindings"][0]
    for key in missing[:-1]:
        target = target[key]
    del target[missing[-1]]
    assert config_problems(values)[path] == "Field required [configuration]"


def test_role_fields_of_the_real_api_reach_the_manifest():
    values = seed_values()
    role = values["modelDeployments"][0]["roles"][0]
    role.update(shmSize="32Gi", image="gpustack/runner:cuda12.9-vllm0.29.0", imagePullPolicy="IfNotPresent",
                additionalVolumes=[{"mountPath": "/etc/hf", "secret": {"name": "hf-token"}, "readOnly": True}],
                topology={"requiredLevel": "topology.kubernetes.io/zone"})
    manifest = next(m for m in gpustack_manifests(load_config(values)) if m["kind"] == "ModelDeployment")
    rendered = manifest["spec"]["roles"][0]
    assert rendered["shmSize"] == "32Gi" and rendered["image"].startswith("gpustack/runner:")
    assert rendered["additionalVolumes"] == [{"mountPath": "/etc/hf", "readOnly": True, "secret": {"name": "hf-token"}}]
    assert rendered["topology"] == {"requiredLevel": "topology.kubernetes.io/zone"}
    assert validate_object(manifest) == []


def test_both_api_versions_are_selectable():
    values = seed_values()
    values["gpustackApiVersion"] = "v1"
    assert {m["apiVersion"] for m in gpustack_manifests(load_config(values))} == {"worker.gpustack.ai/v1"}
    values["gpustackApiVersion"] = "v2"
    assert "gpustackApiVersion" in config_problems(values)


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.line)
def test_every_field_the_configuration_model_writes_is_a_field_of_the_operators_schema(profile):
    """A maximal object of each kind, every optional field of every line set, renders with nothing the line's
    API server would prune, except the fields the line does not have: each of those is refused, saying what to write."""
    from gpu_fabric.gpustack.objects import kv_cache_backend, kv_cache_pool, kv_cache_pool_binding, model_deployment
    from gpu_fabric.config.kv_cache import KVCacheBackendSpec, KVCachePoolBindingSpec, KVCachePoolSpec
    from gpu_fabric.config.serving import ModelDeploymentSpec

    member = {"nodeSelector": {"kvcache": "true"}, "medium": "DRAM", "capacityPerMember": "1Gi", "localBufferSize": "1Gi",
              "extraArgs": ["k=v"], "extraEnv": [{"name": "A", "value": "b"}], "image": "mc:1", "transport": {"protocol": "RDMA"},
              "fabricInterfaceCount": 2, "securityContext": {"capabilities": {"add": ["NET_ADMIN"]}},
              "hostPaths": [{"path": "/var/x", "mountPath": "/x", "type": "Directory", "readOnly": True}],
              "runtimeClassName": "nvidia", "localDisks": [{"path": "/var/kv", "capacity": "10Gi"}]}
    backend = KVCacheBackendSpec.model_validate({
        "name": "b", "type": "Mooncake", "image": "mc:1", "imagePullPolicy": "Always", "imagePullSecrets": [{"name": "s"}],
        "transport": {"protocol": "EFA"},
        "connection": {"managed": {"leader": {"replicas": 2, "allocationStrategy": "Random", "multiTenancy": True,
                                              "extraArgs": ["a"], "extraEnv": [{"name": "A", "value": "b"}],
                                              "highAvailability": {"memberAddressing": "Lease"}, "electionBackend": "None"},
                                   "members": [member], "scaleIn": {"gracePeriodSeconds": 30}}}})
    role = {"name": "a", "kind": "Prefill", "replicas": 1, "size": 1, profile.pool_field: "t",
            "resources": {"accelerator": 1, "acceleratorSlicedMemoryPercentage": 5, "acceleratorSlicedCoresPercentage": 5,
                          "acceleratorPartitionedProfile": "p", "interface": 1, "cpu": "8", "ram": "32Gi",
                          "localStorage": "100Gi"},
            "image": "i", "imagePullPolicy": "Always", "imagePullSecrets": [{"name": "s"}], "command": ["c"],
            "extraArgs": ["e"], "env": [{"name": "A", "value": "b"}], "ports": [{"port": 80, "protocol": "TCP"}],
            "shmSize": "1Gi", "privileged": True, "topology": {"requiredLevel": "x"}, "terminationGracePeriodSeconds": 30,
            "additionalVolumes": [{"mountPath": "/a", "readOnly": True, "subPath": "x", "configMap": {"name": "c"}},
                                  {"mountPath": "/s", "secret": {"name": "token"}},
                                  {"mountPath": "/b", "hostPath": {"path": "/h", "type": "Directory"}}],
            "elasticEp": {"width": 2}}
    deployment = ModelDeploymentSpec.model_validate({
        "name": "m", "namespace": "n", "model": {"name": "x", "artifactRef": {"name": "a"}},
        "engine": {"name": "vLLM", "image": "gpustack/runner:cuda13.0-vllm0.29.0", "version": "0.29.0"},
        "router": {"name": "llm-d-router", "replicas": 2, "image": "r", "imagePullPolicy": "Always",
                   "imagePullSecrets": [{"name": "s"}], "extraArgs": ["--x"], "requestTimeoutSeconds": 3,
                   "disaggregationThresholdTokens": 5},
        "kvTransfer": {"protocol": "EFA", "backend": "nixl"}, "kvCache": {"poolRef": {"name": "p"}, "connector": "Mooncake"}, "roles": [role]})
    pool = KVCachePoolSpec.model_validate({"name": "p", "backends": ["b"], "quota": {"total": "1Ti"}})
    binding = KVCachePoolBindingSpec.model_validate({"name": "p", "namespace": "n", "poolRef": {"name": "p"},
                                                     "quota": {"ceiling": "8Gi"},
                                                     "domain": {"name": "d", "blockSize": 16, "dtype": "bfloat16"}})
    manifests = [model_deployment(deployment), kv_cache_backend(backend), kv_cache_pool(pool), kv_cache_pool_binding(binding)]
    found = validate_objects(manifests, profile)
    errors = [f for f in found if f.severity == "error"]
    for error in errors:  # each refusal is a field this line lacks, saying what to write instead
        note = profile.hint(error.subject.kind, re.sub(r"\[\d+\]", "", error.path))
        assert note is not None and note.note.replace("{version}", profile.assumed) in error.message, str(error)
    later = {("ModelDeployment", f"spec.roles.resources.{name}") for name in ("cpu", "ram", "localStorage")} | {
        ("ModelDeployment", "spec.kvTransfer.backend"), ("KVCacheBackend", "spec.connection.managed.leader.electionBackend")}
    expected = {"0.11": set(), "main@5cfac77b": later | {("ModelDeployment", "spec.engine.image")}}.get(profile.line, later)
    assert {(e.subject.kind, re.sub(r"\[\d+\]", "", e.path)) for e in errors} == expected
    assert all(f.message.startswith(f"not confirmed for {profile.assumed}") for f in found if f.severity == "warning")
    assert manifests[0]["spec"]["roles"][0]["additionalVolumes"][1] == {"mountPath": "/s", "secret": {"name": "token"}}
