"""Version strings are read within bounds and in ASCII digits: a clear refusal at the field, never a traceback.

Issue 40, round 5: 5,000-digit versions in ``lint --operator``, in stand-in ``+as-`` versions and in plugin
image tags raised ``ValueError`` from ``int()`` (Python's 4,300-digit limit); Arabic-Indic and full-width
digits were normalised by the stand-in path; a 5,000-digit ``kubernetesVersion`` was blamed on "the stack
program raised ValueError" instead of the field.
"""

import copy

import pytest

from gpu_fabric.config.base import ConfigError
from gpu_fabric.gpustack.profiles import UnknownOperatorVersion, profile_for
from gpu_fabric.kube.advertisers import image_version
from gpu_fabric.validation.configuration import load_config
from support.bad_input import dump, project_with, run_cli, stack_document
from support.stack_configs import b200_values, stack_values

DIGITS = "1" * 5000


@pytest.mark.parametrize("version", [
    f"0.{DIGITS}.0", f"0.10.{DIGITS}", f"0.12.0+as-0.{DIGITS}", f"{DIGITS}.0.0+as-0.11",
    "٠.١٢.٠+as-0.11", "０.１２.０+as-0.11", "0.12.0+as-٠.١١", "0.١٠.0",
])
def test_an_operator_version_beyond_bounds_or_ascii_is_refused_in_one_short_line(version):
    with pytest.raises(UnknownOperatorVersion) as raised:
        profile_for(version)
    assert len(str(raised.value)) < 400 and DIGITS not in str(raised.value)


def test_the_stand_in_path_still_takes_an_ascii_newer_release():
    assert profile_for("0.12.0+as-0.11").stand_in


@pytest.mark.parametrize("version", [f"0.{DIGITS}.0", "٠.١٢.٠+as-0.11"])
def test_lint_operator_refuses_it_with_exit_2(version, tmp_path):
    manifest = tmp_path / "m.yaml"
    manifest.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: n}\n")
    outcome = run_cli("lint", "--operator", version, str(manifest))
    assert outcome.code == 2 and "--operator" in outcome.err and "Traceback" not in outcome.err, outcome.describe()


def test_a_plugin_image_tag_of_5000_digits_is_no_version():
    assert image_version(f"public.ecr.aws/eks/aws-efa-k8s-device-plugin:v{DIGITS}.0.0") is None
    assert image_version(f"public.ecr.aws/eks/aws-efa-k8s-device-plugin:v0.5.{DIGITS}") is None
    assert image_version("public.ecr.aws/eks/aws-efa-k8s-device-plugin:v0.5.21-eksbuild.13") == (0, 5, 21)


def test_a_stack_whose_efa_plugin_tag_has_5000_digits_loads_without_a_traceback():
    try:
        load_config(b200_values(f"v0.5.{DIGITS}"))
    except ConfigError as error:
        assert "devicePlugins" in str(error) and DIGITS not in str(error)


def test_a_5000_digit_kubernetes_version_is_blamed_on_the_field(tmp_path):
    values = copy.deepcopy(stack_values("dra-efa"))
    values["cluster"]["kubernetesVersion"] = f"1.{DIGITS}"
    with pytest.raises(ConfigError) as raised:
        load_config(values)
    assert "cluster.kubernetesVersion" in str(raised.value) and DIGITS not in str(raised.value)
    document = stack_document("dra-efa")
    document["config"]["gpu-fabric:cluster"]["kubernetesVersion"] = f"1.{DIGITS}"
    outcome = run_cli("check", "--project", str(project_with(tmp_path, dump(document))), "--stack", "x")
    assert outcome.code == 2 and "cluster.kubernetesVersion" in outcome.err, outcome.describe()
    assert "raised ValueError" not in outcome.err and DIGITS not in outcome.err
