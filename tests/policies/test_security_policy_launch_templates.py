"""The launch-template policies of ``gpu_fabric.policies.security``: IMDSv2 only, encrypted EBS volumes."""

from __future__ import annotations

import pytest

from gpu_fabric.policies import launch_template_ebs_encrypted, launch_template_imdsv2

from support.aws_stacks import LT, template
from support.policy_helpers import assert_metadata, assert_no_violations, assert_violation, resource


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
