"""A newcomer's mistakes that used to fail only after the apply (issue 26): refused at the configuration path.

Karpenter values that the EC2NodeClass / NodePool CRDs or Karpenter itself refuse once applied, the
placement rule a Karpenter EFA pool shares with a managed node group, and EFA launch templates that
would leave the nodes without the cluster security group (they never join the cluster).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pytest

from support.bad_input import dump, render_file, stack_document

Doc = dict[str, Any]


def karpenter(change: Callable[[Doc], Any]) -> str:
    document = stack_document("karpenter-efa")
    change(document["config"]["gpu-fabric:pools"][0]["aws"])
    return dump(document)


def _set(key: str, value: Any) -> Callable[[Doc], Any]:
    return lambda aws: aws.__setitem__(key, value)


def _karpenter_set(key: str, value: Any) -> Callable[[Doc], Any]:
    return lambda aws: aws["karpenter"].__setitem__(key, value)


def _tag(key: str) -> Callable[[Doc], Any]:
    return lambda aws: aws.setdefault("tags", {}).__setitem__(key, "x")


# id -> (change of the first pool's aws block, exit code, fragments of the refusal)
KARPENTER_MISTAKES: dict[str, tuple[Callable[[Doc], Any], int, tuple[str, ...]]] = {
    # karpenter.k8s.aws_ec2nodeclasses.yaml (v1.14.1), spec.tags x-kubernetes-validations
    "tag-karpenter.sh/nodepool": (_tag("karpenter.sh/nodepool"), 2, ("pools[0].aws.tags", "karpenter.sh/nodepool")),
    "tag-karpenter.sh/nodeclaim": (_tag("karpenter.sh/nodeclaim"), 2, ("pools[0].aws.tags", "karpenter.sh/nodeclaim")),
    "tag-ec2nodeclass": (_tag("karpenter.k8s.aws/ec2nodeclass"), 2, ("pools[0].aws.tags", "karpenter.k8s.aws/ec2nodeclass")),
    "tag-eks-cluster-name": (_tag("eks:eks-cluster-name"), 2, ("pools[0].aws.tags", "eks:eks-cluster-name")),
    "tag-kubernetes.io/cluster": (_tag("kubernetes.io/cluster/prod"), 2, ("pools[0].aws.tags", "kubernetes.io/cluster")),
    "node-role-arn": (_karpenter_set("nodeRole", "arn:aws:iam::123456789012:role/gpu-nodes"), 2,
                      ("pools[0].aws.karpenter.nodeRole", "ARN", "'gpu-nodes'")),
    "node-role-with-spaces": (_karpenter_set("nodeRole", "gpu nodes"), 2, ("pools[0].aws.karpenter.nodeRole", "role name")),
    "bottlerocket-version-on-al2023": (_karpenter_set("amiVersion", "v1.20.3"), 2, ("pools[0].aws.karpenter.amiVersion", "AL2023")),
    "al2023-version-on-bottlerocket": (
        lambda aws: (aws.__setitem__("amiType", "BOTTLEROCKET_x86_64_NVIDIA"), aws["karpenter"].__setitem__("amiVersion", "v20260801")),
        2, ("pools[0].aws.karpenter.amiVersion", "Bottlerocket")),
    "expire-after-beyond-go-duration": (_karpenter_set("expireAfter", "2562048h"), 2,
                                        ("pools[0].aws.karpenter.expireAfter", "time.Duration")),
    "consolidate-after-beyond-go-duration": (_karpenter_set("consolidateAfter", "153722868m"), 2,
                                             ("pools[0].aws.karpenter.consolidateAfter", "time.Duration")),
    "consolidate-after-of-40-digits": (_karpenter_set("consolidateAfter", "9" * 40 + "s"), 2,
                                       ("pools[0].aws.karpenter.consolidateAfter", "time.Duration")),
    "unicode-digit-in-zone": (_set("availabilityZone", "us-east-\u0661a"), 2, ("pools[0].aws.availabilityZone",)),
    # The same placement rule as an EfaNodeGroup (efa-node-group-placement): exit 1, a policy's verdict.
    "placement-none-without-reservation": (_set("placementGroup", {"mode": "none"}), 1,
                                           ("pools[0].aws.placementGroup", "efa-node-group-placement")),
}


@pytest.mark.parametrize("case", sorted(KARPENTER_MISTAKES))
@pytest.mark.parametrize("command", ["render", "check"])
def test_karpenter_values_that_fail_after_the_apply_are_refused_at_their_path(tmp_path, case, command):
    change, code, fragments = KARPENTER_MISTAKES[case]
    outcome = render_file(tmp_path, karpenter(change), command)
    assert not outcome.crashed, outcome.describe()
    assert outcome.code == code, outcome.describe()
    for fragment in fragments:
        assert fragment in outcome.err, (fragment, outcome.describe())


@pytest.mark.parametrize("value", ["2562047h", "Never", "720h", "2562047h47m16s"])
def test_durations_within_go_range_are_accepted(value):
    from gpu_fabric.config.node_group import KarpenterSpec

    KarpenterSpec.model_validate({"nodeRole": "gpu-nodes", "expireAfter": value, "consolidateAfter": value})


def test_a_karpenter_pool_in_a_reservation_may_go_without_a_placement_group(tmp_path):
    change = lambda aws: (aws.__setitem__("placementGroup", {"mode": "none"}),  # noqa: E731
                          aws.__setitem__("capacityReservationId", "cr-0123456789abcdef0"))
    outcome = render_file(tmp_path, karpenter(change), "check")
    assert "efa-node-group-placement" not in outcome.err, outcome.describe()


def test_karpenter_and_node_groups_share_one_placement_rule():
    from gpu_fabric.aws.node_group_placement import placement_findings, spec_placement
    from gpu_fabric.config.node_group import AwsNodeGroupSpec

    document = stack_document("karpenter-efa")
    aws = dict(document["config"]["gpu-fabric:pools"][0]["aws"], placementGroup={"mode": "none"})
    spec = AwsNodeGroupSpec.model_validate(aws)
    assert spec.is_karpenter
    [finding] = placement_findings(spec_placement("p", spec))
    assert finding.rule.id == "efa-node-group-placement"


# -- Nodes that never join: the cluster security group ----------------------------------------------------

CLUSTER_GROUP = "sg-0123456789abcdef0"


def _without_groups(stack: str, cluster_group: str | None = None) -> str:
    """The example with no security group named on any pool (``cluster_group``: given as clusterSecurityGroupId)."""
    document = stack_document(stack)
    for pool in document["config"]["gpu-fabric:pools"]:
        aws = pool.get("aws")
        if aws is None:
            continue
        aws.pop("securityGroupIds", None)
        if cluster_group is not None:
            aws["clusterSecurityGroupId"] = cluster_group
    return dump(document)


@pytest.mark.parametrize("stack", ["aws-efa", "karpenter-efa"])
@pytest.mark.parametrize("command", ["render", "check"])
def test_an_efa_pool_naming_no_cluster_security_group_is_refused(tmp_path, stack, command):
    outcome = render_file(tmp_path, _without_groups(stack), command)
    assert not outcome.crashed, outcome.describe()
    assert outcome.code == 2, outcome.describe()
    assert "pools[0]" in outcome.err and "clusterSecurityGroupId" in outcome.err, outcome.describe()
    assert "launch-templates.html" in outcome.err, outcome.describe()


@pytest.mark.parametrize("stack", ["aws-efa", "karpenter-efa"])
def test_the_cluster_security_group_goes_on_every_interface(tmp_path, stack):
    outcome = render_file(tmp_path, _without_groups(stack, cluster_group=CLUSTER_GROUP))
    assert not outcome.crashed and outcome.code == 0, outcome.describe()
    rendered = "\n".join(path.read_text(errors="replace") for path in (tmp_path / "out").rglob("*") if path.is_file())
    assert CLUSTER_GROUP in rendered
    if stack == "aws-efa":
        import json

        resources = json.loads((tmp_path / "out" / "resources.json").read_text())
        templates = [r for r in resources if r["type"] == "aws:ec2/launchTemplate:LaunchTemplate"]
        interfaces = [i for t in templates for i in t["inputs"]["networkInterfaces"]]
        assert templates and interfaces
        for interface in interfaces:
            assert CLUSTER_GROUP in interface["securityGroups"], interface


def test_interface_groups_put_the_cluster_group_first_once():
    from gpu_fabric.config.node_group import AwsNodeGroupSpec, cluster_security_group_problem

    aws = dict(stack_document("aws-efa")["config"]["gpu-fabric:pools"][0]["aws"])
    aws.pop("securityGroupIds")
    spec = AwsNodeGroupSpec.model_validate(aws)
    assert spec.interface_security_group_ids == [] and cluster_security_group_problem(spec)
    spec = AwsNodeGroupSpec.model_validate({**aws, "clusterSecurityGroupId": CLUSTER_GROUP,
                                            "securityGroupIds": ["sg-0aaaaaaaaaaaaaaaa", CLUSTER_GROUP]})
    assert spec.interface_security_group_ids == [CLUSTER_GROUP, "sg-0aaaaaaaaaaaaaaaa"]
    assert cluster_security_group_problem(spec) is None


def test_the_example_stacks_still_render(tmp_path):
    from support.bad_input import run_cli
    from support.stack_configs import PROJECT_DIR

    for stack in ("aws-efa", "karpenter-efa", "seed-rdma", "dra-efa"):
        outcome = run_cli("render", "--project", str(PROJECT_DIR), "--stack", stack, "--out", str(tmp_path / stack))
        assert outcome.code == 0 and not outcome.crashed, outcome.describe()
