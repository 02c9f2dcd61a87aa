"""An operator release newer than every mirrored line, decided under the newest line's rules on request."""

import pytest

from gpu_fabric.cli import version_text
from gpu_fabric.gpustack.admission_pipeline import analyze
from gpu_fabric.gpustack.profiles import PROFILES, UnknownOperatorVersion, newest_line, profile_for
from gpu_fabric.plan.resource_view import Resource
from gpu_fabric.plan.resource_view import stack_operator


def test_a_newer_release_is_refused_saying_how_to_use_it_anyway():
    with pytest.raises(UnknownOperatorVersion) as raised:
        profile_for("0.12.0")
    assert f"write 0.12.0+as-{newest_line().line}" in str(raised.value)


def test_an_unknown_older_or_malformed_version_gets_no_such_advice():
    for version in ("0.8.0", "banana", "0.12"):
        with pytest.raises(UnknownOperatorVersion) as raised:
            profile_for(version)
        assert "+as-" not in str(raised.value)


@pytest.mark.parametrize("written, version", [("0.12.0+as-0.11", "0.12.0"), ("v1.2.3+as-0.11", "1.2.3")])
def test_the_newest_line_stands_in_when_asked(written, version):
    profile = profile_for(written)
    assert profile.line == newest_line().line == "0.11" and profile.stand_in and profile.assumed == version
    warning = profile.stand_in_warning()
    assert warning and version in warning and "0.11 line" in warning and "newer than every line" in warning
    assert profile_for("0.11.2").stand_in_warning() is None


@pytest.mark.parametrize("written, fragment", [
    ("0.12.0+as-0.10", "write 0.12.0+as-0.11"),
    ("0.11.3+as-0.11", "write 0.11.3 itself"),
    ("0.10.0+as-0.11", "write 0.10.0 itself"),
])
def test_only_the_newest_line_stands_in_and_only_for_a_newer_release(written, fragment):
    with pytest.raises(UnknownOperatorVersion) as raised:
        profile_for(written)
    assert fragment in str(raised.value)


def test_the_stand_in_decides_as_the_newest_line():
    deployment = {"apiVersion": "worker.gpustack.ai/v1", "kind": "ModelDeployment",
                  "metadata": {"name": "m", "namespace": "team-a"},
                  "spec": {"model": {"name": "x"}, "engine": {"name": "vLLM", "image": "r:1"},
                           "roles": [{"name": "s", "instanceType": "gpustack--nvidia-a10g-linux-amd64",
                                      "resources": {"accelerator": "1"}}]}}
    as_newest = [(f.path, f.rule_id) for f in analyze([deployment], operator="0.12.0+as-0.11").errors]
    assert as_newest == [(f.path, f.rule_id) for f in analyze([deployment], operator="0.11.2").errors] != []


def test_the_pack_reads_the_stand_in_from_the_components_inputs():
    fabric = Resource("gpu-fabric:index:GpuFabric", "fabric", "urn:pulumi:s::p::gpu-fabric:index:GpuFabric::fabric",
                      {"gpustackOperator": "0.12.0+as-0.11"})
    profile, problem = stack_operator([fabric])
    assert problem is None and profile is not None and profile.stand_in and profile.assumed == "0.12.0"


def test_version_says_per_line_what_is_mirrored_from_code_and_what_from_docs():
    text = version_text()
    for profile in PROFILES:
        assert profile.describe() in text
    assert text.count("from operator code:") == text.count("from docs:") == len(PROFILES)
    assert "from docs: nothing" in text  # the pin
    assert "no released CRD or webhook code was read" in text  # every released line
    assert f"<version>+as-{newest_line().line}" in text
