"""Configuration is validated whole, and every problem names its path."""

import pytest

from gpu_fabric.config.base import ConfigError
from gpu_fabric.config.fabric import config_keys
from gpu_fabric.validation.configuration import load_config
from support.stack_configs import seed_values


def problems(values):
    with pytest.raises(ConfigError) as caught:
        load_config(values)
    return dict(caught.value.pairs)


def test_seed_configuration_is_valid():
    config = load_config(seed_values())
    assert config.queue_owner == "gpustack"
    assert [d.name for d in config.model_deployments] == ["qwen-pd"]


def test_enum_error_names_the_path_and_the_allowed_values():
    values = seed_values()
    values["modelDeployments"][0]["roles"][1]["kind"] = "Decoder"
    found = problems(values)
    assert "modelDeployments[0].roles[1].kind" in found
    assert "'Server', 'Prefill' or 'Decode'" in found["modelDeployments[0].roles[1].kind"]


def test_unknown_field_is_refused_by_path():
    values = seed_values()
    values["pools"][0]["interfacePerNode"] = 2
    assert "unknown field" in problems(values)["pools[0].interfacePerNode"]


def test_transfer_refusal_is_reported_at_the_configuration_path():
    values = seed_values()
    del values["modelDeployments"][0]["router"]
    del values["modelDeployments"][0]["kvTransfer"]
    found = problems(values)
    assert set(found) == {"modelDeployments[0].roles[0].resources.interface",
                          "modelDeployments[0].roles[1].resources.interface"}
    for message in found.values():
        # The operator's words, then the cause and what to add (issue 36), then the rule's id.
        assert message.startswith("no effective RDMA or EFA transfer leg uses the requested interfaces: "
                                  "the deployment has no router (spec.router)")
        assert "Set spec.kvTransfer.protocol to EFA or RDMA" in message
        assert message.endswith("[model-deployment-admission]")


def test_every_problem_is_reported_at_once():
    values = seed_values()
    values["namespaces"] = ["team-a", "Team_B"]
    values["modelDeployments"][0]["roles"][0]["instanceType"] = "gpustack--nvidia-h100-linux-amd64"
    values["kvCacheBackends"][0]["connection"]["managed"]["members"][0]["medium"] = "SSD"
    found = problems(values)
    # Field problems come together; references are checked once the fields are sound.
    assert set(found) == {"namespaces[1]", "kvCacheBackends[0].connection.managed.members[0].medium"}
    assert "DNS-1123" in found["namespaces[1]"]


def test_role_must_name_a_pool_of_the_stack():
    values = seed_values()
    values["modelDeployments"][0]["roles"][0]["instanceType"] = "gpustack--nvidia-h100-linux-amd64"
    assert "names no pool" in problems(values)["modelDeployments[0].roles[0].instanceType"]


def test_interfaces_must_fit_a_node_of_the_pool():
    values = seed_values()
    values["modelDeployments"][0]["roles"][1]["resources"]["interface"] = "3"
    assert "do not fit on one node" in problems(values)["modelDeployments[0].roles[1].resources.interface"]


def test_deployment_namespace_must_be_a_tenant():
    values = seed_values()
    values["modelDeployments"][0]["namespace"] = "team-b"
    assert "not one of namespaces" in problems(values)["modelDeployments[0].namespace"]


def test_leg_fabric_must_match_the_pool_fabric():
    values = seed_values()
    values["modelDeployments"][0]["kvTransfer"]["protocol"] = "EFA"
    assert "pool gpustack--nvidia-a10g-linux-amd64 has fabric rdma" in \
        problems(values)["modelDeployments[0].roles[0].resources.interface"]


def test_privileged_mooncake_members_are_refused():
    values = seed_values()
    values["kvCacheBackends"][0]["connection"]["managed"]["members"][0]["securityContext"] = {"privileged": True}
    # The pack's rule (mooncake-members-unprivileged), decided by the stack with the same function.
    assert "must not be privileged" in problems(values)["kvCacheBackends[0].connection.managed.members[0].securityContext.privileged"]


def test_connection_needs_exactly_one_mode():
    values = seed_values()
    values["kvCacheBackends"][0]["connection"]["external"] = {"endpoints": [{"name": "Client", "address": "x:1"}]}
    # The operator's rule and words (validateKVCacheBackendConnection).
    assert problems(values)["kvCacheBackends[0].connection"] == (
        'only one of "managed" or "external" may be set: a backend with both describes two [kv-cache-backend-admission]')


def test_server_role_cannot_mix_with_prefill():
    # The operator's rule (validateModelDeploymentRoleKinds), reported at each role's kind.
    values = seed_values()
    values["modelDeployments"][0]["roles"][0]["kind"] = "Server"
    found = problems(values)
    assert set(found) == {"modelDeployments[0].roles[0].kind", "modelDeployments[0].roles[1].kind"}
    assert found["modelDeployments[0].roles[0].kind"].startswith('"Server" cannot be combined with another kind')


def test_config_keys_are_camel_case():
    assert "modelDeployments" in config_keys() and "kvCachePoolBindings" in config_keys()


def test_syntax_checks_match_whole_values_as_go_does():
    # Python's '$' also matches before a final newline, Go's (Kubernetes' validation) does not: a
    # value that reaches a check unstripped must not slip a newline through.
    from gpu_fabric.config import syntax

    for check, value in ((syntax.dns_label, "team-a\n"), (syntax.label_value, "a\n"), (syntax.qualified_name, "k\n"),
                         (syntax.image, "vllm/vllm-openai:v0.9.0\n"), (syntax.env_var_name, "HOME\n"),
                         (syntax.instance_type, "p5.48xlarge\n"), (syntax.region, "us-east-1\n")):
        with pytest.raises(ValueError):
            check(value)
    assert syntax.env_var_name("MY_ENV.NAME") == "MY_ENV.NAME"
    for name in ("MY VAR", "1ST", "A=B", ".", "..", "..x", ""):
        with pytest.raises(ValueError):
            syntax.env_var_name(name)
