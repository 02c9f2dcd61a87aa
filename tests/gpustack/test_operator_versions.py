"""The GPUStack operator versions people install: one profile per release line, chosen per stack.

The pin's own Go tables stay in tests/gpustack/test_operator_admission.py and run against ``main@5cfac77b``;
the cases here are the release lines' documented rules, each citing the docs page it comes from.
"""

import copy
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from gpu_fabric.cli import main
from gpu_fabric.config.base import ConfigError
from gpu_fabric.config.fabric import DEFAULT_GPUSTACK_OPERATOR
from gpu_fabric.gpustack import schema
from gpu_fabric.gpustack.operator_pin import OPERATOR_COMMIT
from gpu_fabric.gpustack.profiles import PROFILES, UnknownOperatorVersion, default_profile, known_versions, pin_profile, profile_for
from gpu_fabric.gpustack.admission_pipeline import analyze
from gpu_fabric.gpustack.transfer_legs import MSG_NO_FABRIC_LEG, RDMA_EXCLUSIVE_KEY
from gpu_fabric.validation.configuration import load_config
from support.stack_configs import PROJECT_DIR, seed_values, stack_values

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "seed"
DOCS = "https://docs.gpustack.ai/gpustack-operator"


def fixture(name):
    return [doc for doc in yaml.safe_load_all((FIXTURES / name).read_text()) if doc]


def seed_objects():
    """The walkthrough's Step 3 ModelDeployment and Step 4/5 KVCacheBackends, unmodified."""
    return fixture("qwen-pd-seed-verbatim.yaml") + fixture("mooncake-dram.yaml") + fixture("mooncake-efa.yaml")


def deployment():
    return copy.deepcopy(fixture("qwen-pd-seed-verbatim.yaml")[0])


def errors(report):
    return [(f.path, operator_words(f.message)) for f in report.errors]

def operator_words(message: str) -> str:
    """The operator's own message of a refusal: gpu-fabric adds the cause and the fix after it (issue 36)."""
    return message.split(": ", 1)[0] if message.startswith(MSG_NO_FABRIC_LEG + ": ") else message



def config_problems(values):
    with pytest.raises(ConfigError) as caught:
        load_config(values)
    return dict(caught.value.pairs)


# ---- naming a version ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("version, line", [
    ("0.9.2", "0.9"), ("0.9.0", "0.9"), ("0.10.0", "0.10"), ("0.10.7", "0.10"), ("v0.10.0", "0.10"),
    ("0.11.2", "0.11"), ("0.11.0", "0.11"), ("main@5cfac77b", "main@5cfac77b"), (f"main@{OPERATOR_COMMIT}", "main@5cfac77b"),
])
def test_versions_as_helm_list_shows_them_name_their_line(version, line):
    profile = profile_for(version)
    assert profile.line == line
    assert profile.assumed == (version.removeprefix("v") if not version.startswith("main@") else "main@5cfac77b")


@pytest.mark.parametrize("version", ["0.12.0", "0.8.6", "1.0.0", "0.10", "0.10.0-rc1", "main", "main@deadbeef", "latest", ""])
def test_an_unknown_version_is_refused_listing_the_known_ones(version):
    with pytest.raises(UnknownOperatorVersion) as caught:
        profile_for(version)
    message = str(caught.value)
    assert repr(version) in message
    assert all(known in message for known in ("0.9.2", "0.10.0", "0.11.2", "main@5cfac77b"))
    assert known_versions() == ["0.9.2", "0.10.0", "0.11.2", "main@5cfac77b"]


def test_the_default_is_the_0_10_line():
    assert DEFAULT_GPUSTACK_OPERATOR == "0.10.0"
    assert default_profile().line == "0.10"
    assert load_config(seed_values()).gpustack_operator == "0.10.0"
    values = seed_values()
    del values["gpustackOperator"]
    assert load_config(values).gpustack_operator == DEFAULT_GPUSTACK_OPERATOR


# ---- provenance ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.line)
def test_every_profile_states_its_sources(profile):
    assert profile.sources and profile.summary
    for source in profile.sources:
        assert source.fact and (source.where.startswith(DOCS) or "@" in source.where or "seed" in source.where), source
    for note in (*profile.hints, *profile.unconfirmed):
        assert note.note
    for note in profile.unconfirmed:  # an open question names where the question was asked
        assert note.source.startswith(DOCS), note
    if profile.schema_basis == "derived":
        assert profile.releases and all(s.where.startswith(DOCS) for s in profile.sources if "seed" not in s.where)
        folder = PROJECT_DIR / "components" / "gpu_fabric" / "data" / "gpustack-operator" / profile.schema_folder
        source_md = (folder / "SOURCE.md").read_text()
        assert "**Derived, not transcribed.**" in source_md and "scripts/crds_from_go.py" in source_md
        changes = yaml.safe_load((folder / "changes.yaml").read_text())
        for change in (c for kind in (changes.get("changes") or {}).values() for c in kind):
            assert change["source"].startswith(f"{DOCS}/v{profile.releases[0]}/")  # each change cites its page
    else:
        assert profile.line == "main@5cfac77b" and profile.schema_folder == ""
        assert all(OPERATOR_COMMIT[:12] in s.where or re.search(r"@[0-9a-f]{40}$", s.where) for s in profile.sources)


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.line)
def test_every_profile_has_a_schema_for_every_bundled_kind(profile):
    for kind in schema.SCHEMA_FILES:
        definition = schema.openapi_schema(kind, profile)
        assert definition is not None and definition["properties"]["spec"]["properties"]


def test_the_pin_schema_is_the_bundled_transcription_with_nothing_pruned_or_added():
    folder = PROJECT_DIR / "components" / "gpu_fabric" / "data" / "gpustack-operator"
    for kind, filename in schema.SCHEMA_FILES.items():
        assert schema.crd(kind, pin_profile()) == yaml.safe_load((folder / filename).read_text())


def test_a_schema_change_applies_add_remove_and_rename_and_refuses_others():
    target = {"type": "object", "required": ["a"], "properties": {
        "a": {"type": "string"}, "list": {"type": "array", "items": {"type": "object", "properties": {"b": {"type": "integer"}}}}}}
    schema.apply_change(target, {"op": "rename", "path": "a", "to": "c"})
    schema.apply_change(target, {"op": "add", "path": "list[].d", "schema": {"type": "string"}, "required": True})
    schema.apply_change(target, {"op": "remove", "path": "list[].b"})
    assert target["required"] == ["c"] and target["properties"]["c"] == {"type": "string"}
    assert target["properties"]["list"]["items"] == {"type": "object", "properties": {"d": {"type": "string"}}, "required": ["d"]}
    with pytest.raises(ValueError, match="unknown schema change 'move'"):
        schema.apply_change(target, {"op": "move", "path": "c"})


# ---- the walkthrough as written (the default) ---------------------------------------------------------------


def test_the_seed_objects_lint_clean_under_the_default_with_their_grants():
    report = analyze(seed_objects())
    assert report.findings == ()  # no error and no warning: the 0.10 line has every field the seed writes
    assert {g.role: dict(g.resources) for g in report.role_grants} == {
        "prefill": {RDMA_EXCLUSIVE_KEY: 2}, "decode": {RDMA_EXCLUSIVE_KEY: 2}}
    assert {(m.backend, m.protocol): dict(m.resources) for m in report.member_grants} == {
        ("mooncake-dram", "rdma"): {RDMA_EXCLUSIVE_KEY: 2}, ("mooncake-efa", "efa"): {"vpc.amazonaws.com/efa": 2}}


def test_the_seed_deployment_without_router_and_kv_transfer_is_still_refused():
    refused = deployment()
    del refused["spec"]["router"], refused["spec"]["kvTransfer"]
    assert refused == fixture("qwen-pd-no-transfer.yaml")[0] | {"spec": refused["spec"]}
    assert errors(analyze([refused])) == [(f"spec.roles[{i}].resources.interface", MSG_NO_FABRIC_LEG) for i in (0, 1)]


def test_the_seed_rdma_stack_writes_what_the_seed_writes():
    manifest = next(m for m in __import__("gpu_fabric.gpustack.objects", fromlist=["x"]).gpustack_manifests(
        load_config(seed_values())) if m["kind"] == "ModelDeployment")
    seed = deployment()["spec"]
    assert manifest["spec"]["engine"] == seed["engine"]
    assert [role["instanceType"] for role in manifest["spec"]["roles"]] == [role["instanceType"] for role in seed["roles"]]


def test_aws_efa_keeps_its_custom_efa_runner_as_engine_image():
    [md] = stack_values("aws-efa")["modelDeployments"]
    assert md["engine"]["image"].endswith("-efa") and "version" not in md["engine"]
    assert not any("image" in role for role in md["roles"])
    load_config(stack_values("aws-efa"))


# ---- main@5cfac77b decides exactly as before ----------------------------------------------------------------


def test_the_pin_refuses_engine_image_and_takes_engine_version():
    [(path, message)] = errors(analyze([deployment()], operator="main@5cfac77b"))
    assert path == "spec.engine.image" and "prune" in message and "spec.engine.version" in message
    assert analyze(fixture("qwen-pd.yaml") + fixture("mooncake-dram.yaml"), operator="main@5cfac77b").findings == ()


# ---- the 0.9/0.10 line's documented rules -------------------------------------------------------------------


@pytest.mark.parametrize("version, page", [
    ("0.9.2", f"{DOCS}/v0.9.2/docs/modules/model-deployment/deployment/"),
    ("0.10.0", f"{DOCS}/v0.10.0/docs/modules/model-deployment/deployment/index.md"),
    ("0.11.2", f"{DOCS}/v0.11.2/docs/modules/model-deployment/configuration/"),
])
def test_released_lines_require_engine_image_and_synthesize_nothing(version, page):
    """engine.image is annotated required; "Role images" replaced "Runner image formula" (each line's page)."""
    imageless = deployment()
    imageless["spec"]["engine"] = {"name": "vLLM", "version": "0.29.0"}
    if version == "0.11.2":
        for role in imageless["spec"]["roles"]:
            role["acceleratorType"] = role.pop("instanceType")
    report = analyze([imageless], operator=version)
    [(path, message)] = errors(report)
    assert path == "spec.engine.image" and f"GPUStack operator {version} requires engine.image" in message
    assert "gpustack/runner:cuda13.0-vllm0.29.0" in message and page in message
    # engine.version's fate is open on the release lines: a warning, never a pass in silence or a refusal
    [warning] = report.warnings
    assert warning.path == "spec.engine.version" and warning.message.startswith(f"not confirmed for {version}")


def test_role_images_without_engine_image_are_a_warning_not_a_pass():
    """Whether an image on every role waives engine.image is not in the pages read (v0.10.0 deployment page)."""
    roles_only = deployment()
    image = roles_only["spec"]["engine"].pop("image")
    for role in roles_only["spec"]["roles"]:
        role["image"] = image
    report = analyze([roles_only])
    assert report.errors == ()
    assert [(w.path, w.message.split(":")[0]) for w in report.warnings] == [("spec.engine.image", "not confirmed for 0.10.0")]


def test_the_0_10_line_names_the_pool_in_instance_type():
    """v0.10.0 elastic-ep page: engine.image with instanceType; acceleratorType is the 0.11 line's."""
    moved = deployment()
    for role in moved["spec"]["roles"]:
        role["acceleratorType"] = role.pop("instanceType")
    found = errors(analyze([moved]))
    assert [path for path, _ in found] == ["spec.roles[0].acceleratorType", "spec.roles[1].acceleratorType"]
    assert all("write instanceType: \"gpustack--nvidia-a10g-linux-amd64\" instead" in message for _, message in found)


@pytest.mark.parametrize("width, refused", [(1, True), (2, False), (64, False), (65, True)])
def test_the_0_10_line_bounds_elastic_width(width, refused):
    """v0.10.0 elastic-ep page: elasticEp.width is 2..64."""
    elastic = {"apiVersion": "worker.gpustack.ai/v1", "kind": "ModelDeployment", "metadata": {"name": "e", "namespace": "t"},
               "spec": {"model": {"name": "m"}, "engine": {"name": "vLLM", "image": "gpustack/runner:cuda13.0-vllm0.30.0"},
                        "roles": [{"name": "server", "instanceType": "elastic-gpu", "elasticEp": {"width": width}}]}}
    assert any(path == "spec.roles[0].elasticEp.width" for path, _ in errors(analyze([elastic], operator="0.10.0"))) is refused


def test_the_0_10_line_refuses_a_backend_with_both_or_neither_connection():
    """v0.10.0 backend page: setting neither connection.managed nor connection.external, or both, is refused."""
    [backend] = fixture("mooncake-dram.yaml")[:1]
    both = copy.deepcopy(backend)
    both["spec"]["connection"]["external"] = {"endpoints": [{"name": "Client", "address": "10.0.0.1:50051"}]}
    neither = copy.deepcopy(backend)
    neither["spec"]["connection"] = {}
    for shape in (both, neither):
        assert any(path.startswith("spec.connection") for path, _ in errors(analyze([shape], operator="0.10.0")))


@pytest.mark.parametrize("version", ["0.9.2", "0.10.0", "0.11.2"])
def test_released_lines_require_the_binding_quota_ceiling(version):
    """Pool page (v0.9.2, v0.10.0, v0.11.2): Binding quota.ceiling is required; the flat quotaCeiling is retired."""
    binding = {"apiVersion": "worker.gpustack.ai/v1", "kind": "KVCachePoolBinding",
               "metadata": {"name": "b", "namespace": "team-a"},
               "spec": {"poolRef": {"name": "p"}, "quotaCeiling": "8Gi", "domain": {"blockSize": 64, "dtype": "fp8_e4m3"}}}
    found = dict(errors(analyze([binding], operator=version)))
    assert "spec.quota" in found and "spec.quota.ceiling" in found["spec.quotaCeiling"]


def test_the_0_9_line_leaves_fabric_interface_count_open():
    """No v0.9.2 page read shows fabricInterfaceCount (the seed that uses it is later): a warning."""
    report = analyze(fixture("mooncake-dram.yaml"), operator="0.9.2")
    assert report.errors == ()
    assert [w.path for w in report.warnings] == ["spec.connection.managed.members[0].fabricInterfaceCount"]
    assert report.warnings[0].message.startswith("not confirmed for 0.9.2")


# ---- the 0.11 line's documented rules -----------------------------------------------------------------------


def test_the_0_11_line_refuses_instance_type_naming_accelerator_type_and_its_page():
    found = errors(analyze([deployment()], operator="0.11.2"))
    assert [path for path, _ in found] == ["spec.roles[0].instanceType", "spec.roles[1].instanceType"]
    for _, message in found:
        assert 'write acceleratorType: "gpustack--nvidia-a10g-linux-amd64" instead' in message
        assert f"{DOCS}/v0.11.2/docs/modules/model-deployment/configuration/" in message


def test_the_0_11_line_takes_accelerator_type_and_its_new_fields():
    """v0.11.2 configuration page (acceleratorType, cpu/ram/localStorage), prefill-decode page
    (kvTransfer.backend), backend page (leader.electionBackend: None)."""
    moved = deployment()
    for role in moved["spec"]["roles"]:
        role["acceleratorType"] = role.pop("instanceType")
        role["resources"].update(cpu="8", ram="32Gi", localStorage="100Gi")
    moved["spec"]["kvTransfer"]["backend"] = "nixl"
    backends = fixture("mooncake-dram.yaml")[:1]
    backends[0]["spec"]["connection"]["managed"]["leader"] = {"electionBackend": "None"}
    report = analyze([moved, *backends], operator="0.11.2")
    assert report.errors == ()
    assert {g.role: dict(g.resources) for g in report.role_grants} == {
        "prefill": {RDMA_EXCLUSIVE_KEY: 2}, "decode": {RDMA_EXCLUSIVE_KEY: 2}}
    # fabricInterfaceCount is not shown by any v0.11.2 page read: reported, not refused
    assert [w.path for w in report.warnings] == ["spec.connection.managed.members[0].fabricInterfaceCount"]
    moved["spec"]["roles"][0]["resources"]["ram"] = "lots"
    assert [p for p, _ in errors(analyze([moved], operator="0.11.2"))] == ["spec.roles[0].resources.ram"]


def test_the_0_11_line_leaves_the_enforced_binding_dtype_open():
    """v0.11.2 migration index: "Upgrading to an Enforced Binding Dtype" exists; its text was not read."""
    binding = {"apiVersion": "worker.gpustack.ai/v1", "kind": "KVCachePoolBinding", "metadata": {"name": "b", "namespace": "t"},
               "spec": {"poolRef": {"name": "p"}, "quota": {"ceiling": "8Gi"}, "domain": {"blockSize": 64, "dtype": "fp8_e4m3"}}}
    [warning] = analyze([binding], operator="0.11.2").warnings
    assert warning.path == "spec.domain.dtype" and "Enforced Binding Dtype" in warning.message
    assert analyze([binding], operator="0.10.0").warnings == ()


@pytest.mark.parametrize("field, value", [(("kvTransfer", "backend"), "nixl"), (("roles", 0, "resources", "cpu"), "8")])
def test_older_lines_refuse_the_0_11_fields_naming_where_they_come_from(field, value):
    older = deployment()
    target = older["spec"]
    for key in field[:-1]:
        target = target[key]
    target[field[-1]] = value
    [(path, message)] = errors(analyze([older], operator="0.10.0"))
    assert path.endswith(field[-1]) and "arrives with the 0.11 line" in message and f"{DOCS}/v0.11.2/" in message


# ---- stacks, components, lint: one value everywhere -----------------------------------------------------------


def test_a_stack_naming_an_unknown_version_is_refused_at_its_config_path():
    values = seed_values()
    values["gpustackOperator"] = "0.12.0"
    problems = config_problems(values)
    assert list(problems) == ["gpustackOperator"]
    assert "0.9.2, 0.10.0, 0.11.2, main@5cfac77b" in problems["gpustackOperator"]


def test_moving_a_stack_to_0_11_lists_every_field_to_rewrite_with_its_new_spelling():
    values = seed_values()
    values["gpustackOperator"] = "0.11.2"
    problems = config_problems(values)
    assert sorted(problems) == ["modelDeployments[0].roles[0].instanceType", "modelDeployments[0].roles[1].instanceType"]
    assert all('write acceleratorType: "gpustack--nvidia-a10g-linux-amd64"' in m for m in problems.values())
    for role in values["modelDeployments"][0]["roles"]:
        role["acceleratorType"] = role.pop("instanceType")
    config = load_config(values)
    assert config.model_deployments[0].roles[0].pool == "gpustack--nvidia-a10g-linux-amd64"


def test_a_role_names_its_pool_exactly_once():
    values = seed_values()
    values["modelDeployments"][0]["roles"][0]["acceleratorType"] = "gpustack--nvidia-a10g-linux-amd64"
    assert "not both" in config_problems(values)["modelDeployments[0].roles[0]"]
    del values["modelDeployments"][0]["roles"][0]["acceleratorType"], values["modelDeployments"][0]["roles"][0]["instanceType"]
    assert "name the role's pool once" in config_problems(values)["modelDeployments[0].roles[0]"]


def test_unconfirmed_fields_never_block_a_stack():
    values = seed_values()
    values["modelDeployments"][0]["engine"]["version"] = "0.29.0"  # open on 0.10: a warning for lint, not a refusal
    load_config(values)


def test_lint_takes_the_operator_and_refuses_an_unknown_one(capsys):
    seed = str(FIXTURES / "qwen-pd-seed-verbatim.yaml")
    assert main(["lint", seed]) == 0
    assert "GPUStack operator 0.10.0 assumed (0.10 line, derived schema)" in capsys.readouterr().out
    assert main(["lint", "--operator", "0.11.2", seed]) == 2  # the schema refuses it: exit 2 (docs/rules.md)
    out = capsys.readouterr().out
    assert "ERROR ModelDeployment team-a/qwen-pd spec.roles[0].instanceType: unknown field for GPUStack operator 0.11.2" in out
    assert f"({seed})" in out
    assert main(["lint", "--operator", "0.12.0", seed]) == 2
    assert "--operator '0.12.0' is not a GPUStack operator version" in capsys.readouterr().err


def test_lint_reports_open_fields_as_warnings_and_exits_0(capsys):
    assert main(["lint", "--operator", "0.9.2", str(FIXTURES / "mooncake-dram.yaml")]) == 0
    out = capsys.readouterr().out
    assert "WARNING KVCacheBackend mooncake-dram spec.connection.managed.members[0].fabricInterfaceCount: not confirmed for 0.9.2" in out
    assert "0 errors, 1 warning" in out


# ---- diff: the objects a version change rewrites ---------------------------------------------------------------


GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.invalid", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1",
           "PATH": "/usr/bin:/bin:/usr/local/bin"}


def test_diff_shows_the_objects_a_move_to_0_11_changes(tmp_path, capsys):
    import json

    shutil.copy(PROJECT_DIR / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    shutil.copytree(PROJECT_DIR / "stacks", tmp_path / "stacks", ignore=shutil.ignore_patterns("__pycache__"))
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "base"]):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True, env=GIT_ENV)
    stack_file = tmp_path / "stacks" / "Pulumi.seed-rdma.yaml"
    text = stack_file.read_text()
    stack_file.write_text(text.replace('gpustackOperator: "0.10.0"', 'gpustackOperator: "0.11.2"')
                          .replace("          instanceType:", "          acceleratorType:"))
    assert main(["diff", "--base", "main", "--stack", "seed-rdma", "--project", str(tmp_path), "--json"]) == 0
    steps = {step["urn"].rsplit("::", 1)[1]: step for step in json.loads(capsys.readouterr().out)["steps"]}
    # the one Kubernetes object whose spelling changes, and the components carrying the version
    assert {name: step["op"] for name, step in steps.items()} == {
        "fabric-team-a-qwen-pd-deployment": "update", "fabric-team-a-qwen-pd": "update", "fabric-kv-cache": "update",
        "fabric": "update"}
    deployment_step = steps["fabric-team-a-qwen-pd-deployment"]
    assert deployment_step["diffReasons"] == ["spec"]
    assert sorted(deployment_step["detailedDiff"]) == [
        f"spec.roles[{i}].{field}" for i in (0, 1) for field in ("acceleratorType", "instanceType")]
    assert all(steps[name]["diffReasons"] == ["gpustackOperator"] for name in ("fabric", "fabric-kv-cache", "fabric-team-a-qwen-pd"))


# ---- the components take the same value --------------------------------------------------------------------


def _registered(program):
    from gpu_fabric.program.render import render_stack

    return render_stack("test", config={}, program=program).resources


def test_the_kv_cache_component_judges_under_its_gpustack_operator():
    from gpu_fabric.resources.kv_cache import KVCache

    backend = {"name": "mooncake-dram", "transport": {"protocol": "RDMA"}, "connection": {"managed": {
        "leader": {"election_backend": "None"},
        "members": [{"node_selector": {"kubernetes.io/os": "linux"}, "medium": "DRAM", "capacity_per_member": "8Gi"}]}}}
    resources = _registered(lambda: KVCache("cache", {"backends": [backend], "gpustack_operator": "0.11.2"}))
    [component] = [r for r in resources if r.type == "gpu-fabric:index:KVCache"]
    assert component.inputs == {"gpustackOperator": "0.11.2"}  # what the policy pack reads
    with pytest.raises(ConfigError) as caught:  # the default line has no electionBackend
        _registered(lambda: KVCache("cache", {"backends": [backend]}))
    assert "KVCacheBackend mooncake-dram.spec.connection.managed.leader.electionBackend: unknown field" in str(caught.value)
    assert "arrives with the 0.11 line" in str(caught.value)


def test_the_fabric_passes_its_operator_to_every_gpustack_component():
    from gpu_fabric.resources.fabric import GpuFabric
    from support.stack_configs import as_args

    values = seed_values()
    values["gpustackOperator"] = "0.11.2"
    for role in values["modelDeployments"][0]["roles"]:
        role["acceleratorType"] = role.pop("instanceType")
    resources = _registered(lambda: GpuFabric("fabric", as_args(values)))
    carriers = {r.type: r.inputs["gpustackOperator"] for r in resources if "gpustackOperator" in r.inputs}
    assert carriers == {"gpu-fabric:index:GpuFabric": "0.11.2", "gpu-fabric:index:KVCache": "0.11.2",
                        "gpu-fabric:index:ModelDeployment": "0.11.2"}
    [manifest] = [r.inputs for r in resources if r.type.endswith(":ModelDeployment") and r.type.startswith("kubernetes:")]
    assert [role["acceleratorType"] for role in manifest["spec"]["roles"]] == ["gpustack--nvidia-a10g-linux-amd64"] * 2


def test_render_prints_what_lint_would_warn_about_under_the_stack_s_operator(tmp_path):
    # engine.version beside engine.image: the 0.10 docs leave its fate open, so render says so (as lint does).
    from support.bad_input import dump, render_file, stack_document

    document = stack_document("seed-rdma")
    deployment = document["config"]["gpu-fabric:modelDeployments"][0]
    deployment["engine"]["version"] = "0.29.0"
    outcome = render_file(tmp_path, dump(document))
    assert outcome.code == 0, outcome.err
    [line] = [line for line in outcome.out.splitlines() if line.startswith("warning: ModelDeployment ")]
    assert "spec.engine.version: not confirmed for 0.10.0" in line
    # The example as written carries no such field: no such warning.
    assert "spec.engine.version" not in render_file(tmp_path / "plain", dump(stack_document("seed-rdma"))).out
