"""What the API server refuses is refused before it: a GPUStack group in the wrong case, a fractional accelerator.

Issue 40, round 5: ``apiVersion: Worker.GPUStack.ai/v1alpha1`` passed lint as "another object" (the API server
answers "no matches for kind"), and ``accelerator: "0.5"`` / ``"7500m"`` passed although the role's pods ask for
an extended resource, which must be an integer (kubernetes/kubernetes pkg/apis/core/validation,
validateResourceQuantityValue: "must be an integer").
"""

import copy

import pytest

from gpu_fabric.config.base import ConfigError
from gpu_fabric.gpustack.admission_pipeline import analyze
from gpu_fabric.validation.configuration import load_config
from support.bad_input import run_cli
from support.stack_configs import stack_values


def _deployment(api_version="worker.gpustack.ai/v1alpha1", accelerator="1"):
    return {"apiVersion": api_version, "kind": "ModelDeployment", "metadata": {"name": "m", "namespace": "team-a"},
            "spec": {"model": {"name": "m"}, "engine": {"name": "vLLM"},
                     "roles": [{"name": "r", "instanceType": "gpustack--nvidia-h100-linux-amd64",
                                "resources": {"accelerator": accelerator}}]}}


@pytest.mark.parametrize("api_version", ["Worker.gpustack.ai/v1alpha1", "WORKER.GPUSTACK.AI/v1"])
def test_the_gpustack_group_in_another_case_is_refused_at_api_version(api_version):
    report = analyze([_deployment(api_version)])
    assert [(f.rule_id, str(f.path)) for f in report.errors] == [("gpustack-api-group", "apiVersion")]
    assert "worker.gpustack.ai/" in report.errors[0].message


def test_lint_refuses_it_instead_of_passing_it_over(tmp_path):
    manifest = tmp_path / "m.yaml"
    manifest.write_text("apiVersion: Worker.gpustack.ai/v1alpha1\nkind: ModelDeployment\n"
                        "metadata: {name: m, namespace: team-a}\nspec: {}\n")
    outcome = run_cli("lint", str(manifest))
    assert outcome.code != 0 and "API groups are lower case" in outcome.out + outcome.err, outcome.describe()


@pytest.mark.parametrize("accelerator", ["0.5", "7500m", "1.5"])
def test_a_fractional_accelerator_is_refused_at_its_field(accelerator):
    report = analyze([_deployment(accelerator=accelerator)])
    assert ("whole-accelerators", "spec.roles[0].resources.accelerator") in [(f.rule_id, str(f.path)) for f in report.errors]


@pytest.mark.parametrize("accelerator", ["1", "8", "2000m", 4])
def test_a_whole_accelerator_count_passes(accelerator):
    assert not [f for f in analyze([_deployment(accelerator=accelerator)]).errors if f.rule_id == "whole-accelerators"]


@pytest.mark.parametrize("accelerator", ["0.5", "3500m"])  # 7500m is also more than the pool's 4 per node
def test_the_stack_refuses_a_fractional_accelerator(accelerator):
    values = copy.deepcopy(stack_values("seed-rdma"))
    values["modelDeployments"][0]["roles"][0]["resources"]["accelerator"] = accelerator
    with pytest.raises(ConfigError) as raised:
        load_config(values)
    assert "accelerator" in str(raised.value) and "whole number" in str(raised.value)
