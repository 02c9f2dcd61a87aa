"""kubelet topology settings: validation and three renderings with one meaning."""

from __future__ import annotations

import email
import tomllib

import pytest
import yaml
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from gpu_fabric.aws.user_data import (
    MIME_BOUNDARY,
    NODEADM_CONTENT_TYPE,
    bottlerocket_user_data,
    from_base64,
    nodeadm_user_data,
    to_base64,
    user_data_for_ami,
)
from gpu_fabric.config.base import ConfigError
from gpu_fabric.config.topology import (
    BOTTLEROCKET_CPU_MANAGER_POLICY_OPTIONS,
    INCOMPATIBLE_CPU_MANAGER_OPTIONS,
    KubeletTopology,
    TopologyRenderError,
)
from gpu_fabric.kube.topology import (
    DROPIN_PATH,
    bottlerocket_settings,
    bottlerocket_toml,
    kubelet_config_dropin,
    kubelet_config_dropin_yaml,
    nodeadm_node_config,
    to_toml,
)


def config_error(data: dict) -> ConfigError:
    with pytest.raises(ValidationError) as caught:
        KubeletTopology.model_validate(data)
    return ConfigError.from_validation_error(caught.value, ("topology",))


# -- reading every rendering back ------------------------------------------------------------------


def nodeadm_parts(user_data: str) -> list[dict]:
    message = email.message_from_string(user_data)
    assert message.is_multipart()
    return [yaml.safe_load(part.get_payload()) for part in message.get_payload() if part.get_content_type() == NODEADM_CONTENT_TYPE]


def meaning_from_nodeadm(topology: KubeletTopology) -> KubeletTopology:
    (node_config,) = nodeadm_parts(nodeadm_user_data(topology))
    assert node_config["apiVersion"] == "node.eks.aws/v1alpha1" and node_config["kind"] == "NodeConfig"
    return KubeletTopology.from_kubelet_config(node_config["spec"]["kubelet"]["config"])


def meaning_from_bottlerocket(topology: KubeletTopology) -> KubeletTopology:
    return KubeletTopology.from_bottlerocket_settings(tomllib.loads(bottlerocket_user_data(topology)))


def meaning_from_dropin(topology: KubeletTopology) -> KubeletTopology:
    dropin = yaml.safe_load(kubelet_config_dropin_yaml(topology))
    assert dropin["apiVersion"] == "kubelet.config.k8s.io/v1beta1" and dropin["kind"] == "KubeletConfiguration"
    return KubeletTopology.from_kubelet_config(dropin)


cpu_sets = st.builds(
    lambda first, width, extra: f"{first}-{first + width}" + (f",{first + width + 2}" if extra else ""),
    st.integers(0, 8),
    st.integers(0, 3),
    st.booleans(),
)


@st.composite
def topologies(draw) -> KubeletTopology:
    cpu_policy = draw(st.sampled_from(["none", "static"]))
    reserved = draw(cpu_sets) if cpu_policy == "static" else draw(st.one_of(st.none(), cpu_sets))
    policy_options: dict = {}
    if draw(st.booleans()):
        policy_options["prefer-closest-numa-nodes"] = draw(st.sampled_from(["true", "false", True, False]))
    if draw(st.booleans()):
        policy_options["max-allowable-numa-nodes"] = draw(st.sampled_from([8, "8", 16, "12"]))
    cpu_options = {}
    if cpu_policy == "static":
        for name in draw(st.lists(st.sampled_from(sorted(BOTTLEROCKET_CPU_MANAGER_POLICY_OPTIONS)), unique=True)):
            cpu_options[name] = draw(st.sampled_from(["true", "false"]))
        enabled = {name for name, value in cpu_options.items() if value == "true"}
        # Pairs the kubelet refuses are refused by the model too (tested below); draw only valid ones.
        assume(not any({first, second} <= enabled for first, second in INCOMPATIBLE_CPU_MANAGER_OPTIONS))
    return KubeletTopology.model_validate(
        {
            "policy": draw(st.sampled_from(["none", "best-effort", "restricted", "single-numa-node"])),
            "scope": draw(st.sampled_from(["container", "pod"])),
            "cpuManagerPolicy": cpu_policy,
            "reservedSystemCPUs": reserved,
            "policyOptions": policy_options,
            "cpuManagerPolicyOptions": cpu_options,
        }
    )


@settings(max_examples=200, deadline=None)
@given(topologies())
def test_three_renderings_have_the_same_meaning(topology: KubeletTopology) -> None:
    assert meaning_from_nodeadm(topology) == topology
    assert meaning_from_bottlerocket(topology) == topology
    assert meaning_from_dropin(topology) == topology


@settings(max_examples=50, deadline=None)
@given(topologies())
def test_renderings_are_byte_stable(topology: KubeletTopology) -> None:
    again = KubeletTopology.model_validate(topology.model_dump(by_alias=True))
    assert nodeadm_user_data(topology) == nodeadm_user_data(again)
    assert bottlerocket_toml(topology) == bottlerocket_toml(again)
    assert kubelet_config_dropin_yaml(topology) == kubelet_config_dropin_yaml(again)


# -- validation ------------------------------------------------------------------------------------


def test_fabric_default_is_restricted_container() -> None:
    default = KubeletTopology.fabric_default()
    assert (default.policy, default.scope, default.cpu_manager_policy) == ("restricted", "container", "none")
    assert KubeletTopology.model_validate({}) == default
    assert kubelet_config_dropin(default) == {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "topologyManagerPolicy": "restricted",
        "topologyManagerScope": "container",
        "cpuManagerPolicy": "none",
    }


def test_static_cpu_manager_without_reserved_cpus_is_refused_naming_the_field() -> None:
    error = config_error({"cpuManagerPolicy": "static"})
    assert "reservedSystemCPUs" in str(error)
    assert "static" in str(error)


def test_static_cpu_manager_with_reserved_cpus_renders_everywhere() -> None:
    topology = KubeletTopology.model_validate({"cpuManagerPolicy": "static", "reservedSystemCpus": "0-1"})
    assert kubelet_config_dropin(topology)["reservedSystemCPUs"] == "0-1"
    assert bottlerocket_settings(topology)["settings"]["kubernetes"]["reserved-cpus"] == "0-1"
    assert nodeadm_node_config(topology)["spec"]["kubelet"]["config"]["cpuManagerPolicy"] == "static"


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"policy": "strict"}, "policy"),
        ({"scope": "node"}, "scope"),
        ({"policyOptions": {"prefer-farthest-numa-nodes": "true"}}, "unknown topology manager option"),
        ({"policyOptions": {"max-allowable-numa-nodes": "many"}}, "positive integer"),
        ({"policyOptions": {"prefer-closest-numa-nodes": "yes"}}, "'true' or 'false'"),
        ({"cpuManagerPolicy": "static", "reservedSystemCPUs": "0-1", "cpuManagerPolicyOptions": {"bogus": "true"}}, "unknown CPU manager option"),
        ({"cpuManagerPolicyOptions": {"full-pcpus-only": "true"}}, "only to cpuManagerPolicy 'static'"),
        ({"reservedSystemCPUs": "a-b"}, "cpuset"),
        ({"reservedSystemCPUs": "3-1"}, "backwards"),
        ({"topologyManagerPolicy": "restricted"}, "unknown field"),
        # Settings the kubelet itself refuses at start-up (cpumanager/policy_options.go).
        ({"cpuManagerPolicy": "static", "reservedSystemCPUs": "0",
          "cpuManagerPolicyOptions": {"full-pcpus-only": "true", "distribute-cpus-across-cores": "true"}},
         "full-pcpus-only and distribute-cpus-across-cores cannot be used together"),
        ({"cpuManagerPolicy": "static", "reservedSystemCPUs": "0",
          "cpuManagerPolicyOptions": {"prefer-align-cpus-by-uncorecache": "true", "distribute-cpus-across-numa": "true"}},
         "cannot be used together"),
        ({"policy": "single-numa-node", "cpuManagerPolicy": "static", "reservedSystemCPUs": "0",
          "cpuManagerPolicyOptions": {"align-by-socket": "true"}},
         "align-by-socket is refused by the kubelet with TopologyManager policy 'single-numa-node'"),
    ],
)
def test_invalid_settings_are_refused(data: dict, expected: str) -> None:
    assert expected in str(config_error(data))


def test_a_refused_pair_is_accepted_when_one_option_is_off() -> None:
    topology = KubeletTopology.model_validate({
        "cpuManagerPolicy": "static", "reservedSystemCPUs": "0",
        "cpuManagerPolicyOptions": {"full-pcpus-only": "true", "distribute-cpus-across-cores": "false"}})
    assert topology.cpu_manager_policy_options == {"full-pcpus-only": "true"}


def test_false_options_equal_the_kubelet_default() -> None:
    explicit = KubeletTopology.model_validate({"policyOptions": {"prefer-closest-numa-nodes": False}})
    assert explicit == KubeletTopology.fabric_default()


def test_bottlerocket_refuses_cpu_options_it_has_no_setting_for() -> None:
    topology = KubeletTopology.model_validate(
        {"cpuManagerPolicy": "static", "reservedSystemCPUs": "0", "cpuManagerPolicyOptions": {"align-by-socket": "true"}}
    )
    with pytest.raises(TopologyRenderError, match="align-by-socket"):
        bottlerocket_settings(topology)
    # The kubelet renderings carry it.
    assert kubelet_config_dropin(topology)["cpuManagerPolicyOptions"] == {"align-by-socket": "true"}


# -- labels, taints, user data ---------------------------------------------------------------------


LABELS = {"gpu-fabric.io/pool": "h100", "vpc.amazonaws.com/efa.present": "true"}
TAINTS = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}, {"key": "dedicated", "effect": "NO_EXECUTE"}]


def test_labels_and_taints_agree_between_nodeadm_and_bottlerocket() -> None:
    topology = KubeletTopology.fabric_default()
    flags = nodeadm_node_config(topology, labels=LABELS, taints=TAINTS)["spec"]["kubelet"]["flags"]
    assert flags == [
        "--node-labels=gpu-fabric.io/pool=h100,vpc.amazonaws.com/efa.present=true",
        "--register-with-taints=nvidia.com/gpu=present:NoSchedule,dedicated:NoExecute",
    ]
    kubernetes = tomllib.loads(bottlerocket_toml(topology, labels=LABELS, taints=TAINTS))["settings"]["kubernetes"]
    assert kubernetes["node-labels"] == LABELS
    assert kubernetes["node-taints"] == {"nvidia.com/gpu": ["present:NoSchedule"], "dedicated": [":NoExecute"]}


def test_nodeadm_user_data_is_mime_with_a_fixed_boundary() -> None:
    text = nodeadm_user_data(KubeletTopology.fabric_default(), labels=LABELS)
    assert text.startswith("MIME-Version: 1.0\n")
    assert f'boundary="{MIME_BOUNDARY}"' in text
    assert f"Content-Type: {NODEADM_CONTENT_TYPE}" in text
    assert text.rstrip().endswith(f"--{MIME_BOUNDARY}--")
    (node_config,) = nodeadm_parts(text)
    assert node_config["spec"]["kubelet"]["config"]["topologyManagerPolicy"] == "restricted"
    assert from_base64(to_base64(text)) == text


def test_user_data_format_follows_the_ami_type() -> None:
    topology = KubeletTopology.fabric_default()
    assert user_data_for_ami("AL2023_x86_64_NVIDIA", topology).startswith("MIME-Version")
    assert tomllib.loads(user_data_for_ami("BOTTLEROCKET_ARM_64_NVIDIA", topology))["settings"]["kubernetes"][
        "topology-manager-policy"
    ] == "restricted"
    with pytest.raises(ValueError, match="AL2_x86_64_GPU"):
        user_data_for_ami("AL2_x86_64_GPU", topology)


def test_toml_writer_quotes_keys_and_escapes_strings() -> None:
    text = to_toml({"settings": {"kubernetes": {"node-labels": {"a.b/c": 'say "hi"'}, "n": 3, "on": True, "l": ["x", "y"]}}})
    assert tomllib.loads(text) == {"settings": {"kubernetes": {"node-labels": {"a.b/c": 'say "hi"'}, "n": 3, "on": True, "l": ["x", "y"]}}}
    assert '"a.b/c" = "say \\"hi\\""' in text


def test_dropin_path_is_under_the_kubelet_config_dir() -> None:
    assert DROPIN_PATH.startswith("/etc/kubernetes/kubelet.conf.d/") and DROPIN_PATH.endswith(".conf")
