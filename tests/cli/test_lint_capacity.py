"""``lint --stack``: ModelDeployments in the files count against the stack's pools at their largest size."""

from __future__ import annotations

import copy

import yaml

from gpu_fabric.cli import main
from gpu_fabric.gpustack.objects import model_deployment
from gpu_fabric.validation.configuration import load_config
from support.stack_configs import PROJECT_DIR, stack_values


def deployment(name: str, prefill_replicas: int) -> dict:
    """aws-efa's ModelDeployment under another name, with ``prefill_replicas`` prefill replicas of 8 GPUs."""
    values = copy.deepcopy(stack_values("aws-efa"))
    values["modelDeployments"][0].update(name=name)
    values["modelDeployments"][0]["roles"][0]["replicas"] = prefill_replicas
    return model_deployment(load_config(values).model_deployments[0])


def lint(capsys, tmp_path, *documents):
    path = tmp_path / "deployments.yaml"
    path.write_text(yaml.safe_dump_all(documents))
    code = main(["lint", "--stack", "aws-efa", "--project", str(PROJECT_DIR), str(path)])
    return code, capsys.readouterr().out


def test_a_file_deployment_that_overfills_the_pool_is_refused_at_its_replicas(capsys, tmp_path):
    # aws-efa's own deployment takes 16 of the pool's 32 GPUs; 3 more prefill replicas of 8 do not fit.
    code, out = lint(capsys, tmp_path, deployment("extra", prefill_replicas=3))
    # 2: lint reads only its files, where the stack's binding is not, so the operator's webhook refuses the
    # deployment's interfaces too ("cache binding must resolve"), an exit-2 rule (docs/rules.md).
    assert code == 2, out
    assert "spec.roles[0].replicas" in out and "[pool-accelerator-capacity]" in out and "extra" in out


def test_a_file_deployment_that_fits_passes(capsys, tmp_path):
    code, out = lint(capsys, tmp_path, deployment("extra", prefill_replicas=1))
    assert "[pool-accelerator-capacity]" not in out
