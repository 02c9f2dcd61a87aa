"""The launch-template policies of ``gpu_fabric.policies.security``: IMDSv2 only, encrypted EBS volumes."""

from __future__ import annotations

import pytest

from gpu_fabric.aws.node_group import launch_template_inputs
from gpu_fabric.aws.catalog.bundled import BundledInstanceCatalog
from gpu_fabric.aws.efa import plan_interfaces
from gpu_fabric.policies import launch_template_ebs_encrypted, launch_template_imdsv2

from support.policy_helpers import assert_metadata, assert_no_violations, assert_violation, rendered, resource

LT = "aws:ec2/launchTemplate:LaunchTemplate"


UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"  # engine's unknown-string sentinel


def plan(instance_type: str):
    return plan_interfaces(BundledInstanceCatalog().describe([instance_type])[instance_type])


def template(instance_type="p5.48xlarge", interfaces=None, security_groups=(UNKNOWN,), **kwargs) -> dict:
    return launch_template_inputs("gpu", instance_type, interfaces or plan(instance_type), list(security_groups),
                                  "dXNlcg==", **kwargs)


@pytest.fixture(scope="module")
def aws_efa():
    return rendered("aws-efa")


@pytest.mark.parametrize("policy", [launch_template_imdsv2, launch_template_ebs_encrypted])
def test_metadata_and_the_aws_example_stack_passes(policy, aws_efa):
    assert_metadata(policy)
    assert_no_violations(policy, aws_efa)


def test_imdsv1_is_refused():
    props = template()
    props["metadataOptions"]["httpTokens"] = "optional"
    assert_violation(launch_template_imdsv2, [resource(LT, props)], "httpTokens is optional")
    assert_violation(launch_template_imdsv2, [resource(LT, {"instanceType": "m5.large"})], "httpTokens is unset")
    assert_no_violations(launch_template_imdsv2, [resource(LT, template())])


def test_unencrypted_volume_is_refused():
    props = template()
    props["blockDeviceMappings"][0]["ebs"]["encrypted"] = "false"
    assert_violation(launch_template_ebs_encrypted, [resource(LT, props)], "/dev/xvda: the EBS volume is not encrypted")
    assert_no_violations(launch_template_ebs_encrypted, [resource(LT, template())])
