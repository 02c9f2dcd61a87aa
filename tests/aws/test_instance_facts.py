"""A pool's name and accelerator count against the EC2 facts of its instances.

Render refuses (``load_config``, exit 2, naming the field and the instance's real facts) and the
pack's ``pool-instance-facts`` refuses the same from ``KueuePool`` inputs; both call
``gpu_fabric.aws.instance_facts.pool_instance_findings``.
"""

import copy
import shutil

import pytest
import yaml

from gpu_fabric.config.base import ConfigError
from gpu_fabric.config.instance_type_names import instance_type_name, parse_instance_type_name
from gpu_fabric.validation.configuration import load_config

from support.stack_configs import PROJECT_DIR, stack_values, efa_values


H100 = "gpustack--nvidia-h100-linux-amd64"


def problems(values: dict) -> dict[str, str]:
    with pytest.raises(ConfigError) as caught:
        load_config(values)
    return {path: message for path, message in caught.value.pairs}


def test_the_examples_agree_with_their_instances():
    load_config(stack_values("aws-efa"))
    load_config(stack_values("seed-rdma"))  # rdma pools on your own nodes: no instance facts, as before


def test_a_name_naming_another_model_is_refused_with_the_instance_facts_and_the_derived_name():
    found = problems(efa_values(name="gpustack--nvidia-h200-linux-amd64"))
    message = found["pools[0].name"]
    assert "p5.48xlarge has 8 x NVIDIA H100, amd64" in message
    assert "the operator would derive gpustack--nvidia-h100-linux-amd64" in message
    assert "model h200" in message


def test_instance_types_of_different_hardware_in_one_pool_are_refused_naming_each():
    message = problems(efa_values(instanceTypes=["p5.48xlarge", "p5en.48xlarge"]))["pools[0].aws.instanceTypes"]
    assert "p5.48xlarge has 8 x NVIDIA H100, amd64" in message and "p5en.48xlarge has 8 x NVIDIA H200, amd64" in message


def test_instance_types_of_the_same_hardware_share_a_pool():
    assert "pools[0].aws.instanceTypes" not in _problems_or_none(efa_values(instanceTypes=["p5.48xlarge", "p5.4xlarge"]))


def _problems_or_none(values: dict) -> dict[str, str]:
    try:
        load_config(values)
    except ConfigError as error:
        return dict(error.pairs)
    return {}


def test_an_accelerator_count_the_instance_does_not_have_is_refused():
    message = problems(efa_values(acceleratorsPerNode=4))["pools[0].acceleratorsPerNode"]
    assert message.startswith("4 per node, but p5.48xlarge has 8 x NVIDIA H100, amd64")


def test_an_amd64_name_on_graviton_instances_is_refused_naming_the_arm64_name():
    found = problems(efa_values(name="gpustack--nvidia-t4g-linux-amd64", acceleratorsPerNode=1,
                                instanceTypes=["g5g.xlarge"], interfacesPerNode=1))
    assert "g5g.xlarge has 1 x NVIDIA T4g, arm64" in found["pools[0].name"]
    assert "gpustack--nvidia-t4g-linux-arm64" in found["pools[0].name"]
    # The x86 AMI cannot boot those instances either.
    assert "built for amd64" in found["pools[0].aws.amiType"]


def test_a_manufacturer_the_instance_does_not_carry_is_refused():
    found = problems(efa_values(name="h100-pool", manufacturer="amd", acceleratorResource="amd.com/gpu"))
    assert "amd, but p5.48xlarge has 8 x NVIDIA H100" in found["pools[0].manufacturer"]


def test_a_cpu_pool_name_on_gpu_instances_is_refused():
    values = copy.deepcopy(stack_values("aws-efa"))
    values["pools"][1]["aws"]["instanceTypes"] = ["p5.48xlarge"]
    found = problems(values)
    assert "CPU pool's (generic)" in found["pools[1].name"]
    assert "0 per node" in found["pools[1].acceleratorsPerNode"]


def test_pools_the_stack_does_not_provision_keep_their_behaviour():
    values = copy.deepcopy(stack_values("seed-rdma"))
    values["pools"][0]["acceleratorsPerNode"] = 3  # no aws node group: nothing to compare with
    load_config(values)


@pytest.mark.parametrize("name, parts", [
    ("gpustack--nvidia-a10g-linux-amd64", ("nvidia-a10g", "linux", "amd64", None, "nvidia", "a10g")),
    ("gpustack--generic-linux-arm64", ("generic", "linux", "arm64", None, None, None)),
    ("gpustack--intel-xeon-platinum-8358-ln-x64--nvidia-h100-linux-amd64",
     ("nvidia-h100", "linux", "amd64", "intel-xeon-platinum-8358-ln-x64", "nvidia", "h100")),
    ("gpustack--nvidia-rtx-4090-linux-amd64", ("nvidia-rtx-4090", "linux", "amd64", None, "nvidia", "rtx-4090")),
])
def test_instance_type_names_are_split_into_their_parts(name, parts):
    parsed = parse_instance_type_name(name)
    assert (parsed.accelerator, parsed.os, parsed.arch, parsed.cpu, parsed.manufacturer, parsed.model) == parts


@pytest.mark.parametrize("name", ["h100-pool", "gpustack--nvidia-h100-linux", "gpustack--nvidia-h100-beos-amd64"])
def test_names_outside_the_gpustack_form_are_not_parsed(name):
    assert parse_instance_type_name(name) is None


def test_derived_names_follow_the_default_naming():
    assert instance_type_name("nvidia", "a10g", "linux", "amd64") == "gpustack--nvidia-a10g-linux-amd64"
    assert instance_type_name(None, None, "linux", "arm64") == "gpustack--generic-linux-arm64"


def test_render_exits_2_naming_the_field(tmp_path, capsys):
    from gpu_fabric.cli import main

    (tmp_path / "stacks").mkdir()
    shutil.copy(PROJECT_DIR / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    shutil.copy(PROJECT_DIR / "stacks" / "__main__.py", tmp_path / "stacks" / "__main__.py")
    document = yaml.safe_load((PROJECT_DIR / "stacks" / "Pulumi.aws-efa.yaml").read_text())
    document["config"]["gpu-fabric:pools"][0]["acceleratorsPerNode"] = 4
    (tmp_path / "stacks" / "Pulumi.wrong.yaml").write_text(yaml.safe_dump(document))
    code = main(["render", "--stack", "wrong", "--project", str(tmp_path), "--out", str(tmp_path / "out")])
    assert code == 2
    assert "pools[0].acceleratorsPerNode: 4 per node, but p5.48xlarge has 8 x NVIDIA H100, amd64" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
