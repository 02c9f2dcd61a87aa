"""The EFA domain policies: ``efa-domain-placement`` and ``efa-domain-security-group`` over a stack's resources."""

import copy

import pytest

from gpu_fabric.policies import efa_domain_placement

from support.policy_helpers import assert_metadata, assert_no_violations, assert_violation, rendered, replace_props


H100, C6IN = "gpustack--nvidia-h100-linux-amd64", "gpustack--generic-linux-amd64"


KUEUE_POOL = "gpu-fabric:index:KueuePool"


EFA_NODE_GROUP = "gpu-fabric:index:EfaNodeGroup"


@pytest.fixture(scope="module")
def aws_efa_resources():
    return rendered("aws-efa")


def _in_zone(zone):
    def change(props):
        props["pool"]["aws"]["availabilityZone"] = zone
    return change


def test_policy_metadata_and_the_example_stacks_pass(aws_efa_resources):
    assert_metadata(efa_domain_placement)
    assert_no_violations(efa_domain_placement, aws_efa_resources)
    assert_no_violations(efa_domain_placement, rendered("seed-rdma"))


def test_policy_refuses_the_mooncake_pool_in_another_az_on_that_pool(aws_efa_resources):
    moved = replace_props(aws_efa_resources, lambda r: r.type == KUEUE_POOL and "generic" in r.name, _in_zone("us-east-1b"))
    generic = next(r for r in moved if r.type == KUEUE_POOL and "generic" in r.name)
    violation = assert_violation(efa_domain_placement, moved, "EFA traffic can't cross Availability Zones", generic.urn)
    assert f"pool {H100}" in violation.message and "KVCacheBackend mooncake-efa members[0]" in violation.message


def test_policy_reads_zones_from_efa_node_group_components_of_a_hand_composed_stack(aws_efa_resources):
    """Pools declared without ``aws`` whose nodes come from EfaNodeGroup components: the zone is the component's."""
    zones = {H100: "us-east-1a", C6IN: "us-east-1c"}
    resources = []
    for r in aws_efa_resources:
        pool = next((name for name in zones if name in r.name), None)
        props = copy.deepcopy(dict(r.props))
        if r.type == KUEUE_POOL:
            props["pool"].pop("aws")
            props["pool"]["nodeLabels"] = {"example.com/pool": pool}
        elif r.type == "aws:eks/nodeGroup:NodeGroup":
            props["labels"]["example.com/pool"] = pool
        elif r.type == EFA_NODE_GROUP:
            props = {"availabilityZone": zones[pool], "vpcId": "vpc-0a1b2c3d4e5f60718"}
        resources.append(type(r)(r.type, r.name, r.urn, props, r.parent))
    violation = assert_violation(efa_domain_placement, resources, "is in us-east-1c but pool")
    assert "NodeGroup fabric-gpustack--nvidia-h100-linux-amd64-nodes-ng.availabilityZone" in violation.message


def test_policy_refuses_a_member_selector_that_reaches_no_efa_pool(aws_efa_resources):
    def elsewhere(props):
        props["spec"]["connection"]["managed"]["members"][0]["nodeSelector"] = {
            "node.kubernetes.io/instance-type": "c7i.48xlarge"}
    resources = replace_props(aws_efa_resources, lambda r: r.type.endswith(":KVCacheBackend"), elsewhere)
    backend = next(r for r in resources if r.type.endswith(":KVCacheBackend"))
    assert_violation(efa_domain_placement, resources, "selects no efa pool", backend.urn)


def test_domain_security_group_policy_refuses_node_groups_that_share_no_group(aws_efa_resources):
    """Each node group keeping a group of its own (the layout before EFA domains) is refused."""
    from gpu_fabric.aws.node_group import efa_security_group_inputs
    from gpu_fabric.policies import efa_domain_security_group
    from support.policy_helpers import resource

    assert_metadata(efa_domain_security_group)
    assert_no_violations(efa_domain_security_group, aws_efa_resources)
    assert_no_violations(efa_domain_security_group, rendered("seed-rdma"))
    template = next(r for r in aws_efa_resources if r.type.endswith("LaunchTemplate") and C6IN in r.name)
    component = next(r for r in aws_efa_resources if r.urn == template.parent)
    own = resource("aws:ec2/securityGroup:SecurityGroup", efa_security_group_inputs("own", "vpc-0a1b2c3d4e5f60718"),
                   f"{component.name}-efa-sg", component)
    resources = [type(r)(r.type, r.name, r.urn, r.props, r.parent, {**r.property_dependencies, "networkInterfaces": (own.urn,)})
                 if r.urn == template.urn else r for r in aws_efa_resources] + [own]
    violation = assert_violation(efa_domain_security_group, resources, "no security group of this stack is on the EFA interfaces")
    assert f"pool {C6IN}: {own.name}" in violation.message and "KVCacheBackend mooncake-efa members[0]" in violation.message
