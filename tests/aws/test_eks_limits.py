"""EKS limits hold before preview: node-group names, AMI architecture, AZ in region, one cluster."""

import re

from gpu_fabric.aws.node_group import instance_type_findings, node_group_resource_name
from gpu_fabric.aws.catalog.bundled import BundledInstanceCatalog
from gpu_fabric.program.render import render_stack
from support.stack_configs import stack_values

EKS_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")


def test_short_names_keep_their_resource_name():
    assert node_group_resource_name("fabric-gpustack--nvidia-h100-linux-amd64-nodes") == \
        "fabric-gpustack--nvidia-h100-linux-amd64-nodes-ng"


def test_long_or_dotted_names_get_a_short_stable_name():
    long_a, long_b = "fabric-" + "a" * 80 + "-x-nodes", "fabric-" + "a" * 80 + "-y-nodes"
    for name in (long_a, long_b, "fabric-gpu.pool.v2-nodes"):
        derived = node_group_resource_name(name)
        # Pulumi appends "-" and 7 random characters; EKS takes 63.
        assert len(derived) + 8 <= 63 and EKS_NAME.match(derived), derived
        assert derived == node_group_resource_name(name)
    assert node_group_resource_name(long_a) != node_group_resource_name(long_b)


def test_a_long_pool_renders_a_node_group_eks_accepts():
    values = stack_values("aws-efa")
    long_name = "gpustack--nvidia-h100-" + "x" * 100 + "-linux-amd64"
    values["pools"][0]["name"] = long_name
    for role in values["modelDeployments"][0]["roles"]:
        role["instanceType"] = long_name
    result = render_stack("long", config={f"gpu-fabric:{k}": v for k, v in values.items()} | {"aws:region": "us-east-1"})
    names = [r.name for r in result.resources if r.type == "aws:eks/nodeGroup:NodeGroup"]
    assert len(names) == 2 and all(len(name) + 8 <= 63 and EKS_NAME.match(name) for name in names), names


def test_ami_architecture_must_match_every_instance_type():
    infos = BundledInstanceCatalog().describe(["p5.48xlarge"])
    assert instance_type_findings(["p5.48xlarge"], infos, availability_zone="us-east-1a", ami_type="AL2023_x86_64_NVIDIA") == []
    assert instance_type_findings(["p5.48xlarge"], infos, availability_zone="us-east-1a", ami_type="AL2023_ARM_64_NVIDIA") == [
        "amiType: AL2023_ARM_64_NVIDIA is an arm64 AMI but p5.48xlarge runs x86_64"]
