"""The workload policies of ``gpu_fabric.policies.security``: unprivileged Mooncake members (mandatory) and ModelDeployment roles (advisory)."""

from __future__ import annotations

import pytest
from pulumi_policy import EnforcementLevel

from gpu_fabric.policies import (
    fabric_pool_topology_alignment,
    kueue_fabric_keys_covered,
    model_deployment_unprivileged_roles,
    mooncake_members_unprivileged,
)

from support.policy_helpers import (
    assert_metadata,
    assert_no_violations,
    assert_violation,
    of_type,
    replace_props,
    run,
)

ADVISORY = {fabric_pool_topology_alignment, kueue_fabric_keys_covered, model_deployment_unprivileged_roles}


def set_members(resources, **changes):
    def change(props):
        for member in props["spec"]["connection"]["managed"]["members"]:
            member.update(changes)
    return replace_props(resources, of_type("v1alpha1:KVCacheBackend"), change)


@pytest.mark.parametrize("policy", [mooncake_members_unprivileged, model_deployment_unprivileged_roles], ids=lambda p: p.name)
def test_metadata_and_example_stacks_pass(policy, seed, aws_efa):
    assert_metadata(policy, EnforcementLevel.ADVISORY if policy in ADVISORY else EnforcementLevel.MANDATORY)
    assert_no_violations(policy, seed)
    assert_no_violations(policy, aws_efa)


def test_privileged_mooncake_member_is_refused(seed):
    resources = set_members(seed, securityContext={"privileged": True})
    assert_violation(mooncake_members_unprivileged, resources, "members[0].securityContext.privileged is true")


def test_privileged_model_deployment_role_is_advisory(seed):
    resources = replace_props(seed, of_type("v1alpha1:ModelDeployment"), lambda p: p["spec"]["roles"][0].update(privileged=True))
    violation = assert_violation(model_deployment_unprivileged_roles, resources, "spec.roles[0] (prefill) runs privileged")
    assert violation.enforcement == EnforcementLevel.ADVISORY
    assert len(run(model_deployment_unprivileged_roles, resources)) == 1
