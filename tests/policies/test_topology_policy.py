"""The pool topology policies: ``fabric-pool-topology`` (mandatory) and its advisory alignment check."""

from __future__ import annotations

import pytest
from pulumi_policy import EnforcementLevel

from gpu_fabric.policies import (
    fabric_pool_topology,
    fabric_pool_topology_alignment,
    kueue_fabric_keys_covered,
    model_deployment_unprivileged_roles,
)

from support.policy_helpers import (
    assert_metadata,
    assert_no_violations,
    assert_violation,
    of_type,
    replace_props,
)

H100 = "gpustack--nvidia-h100-linux-amd64"


ADVISORY = {fabric_pool_topology_alignment, kueue_fabric_keys_covered, model_deployment_unprivileged_roles}


def kueue_pool(name: str):
    return of_type("gpu-fabric:index:KueuePool") if not name else (
        lambda r: r.type == "gpu-fabric:index:KueuePool" and r.props["pool"]["name"] == name)


def with_topology(resources, **topology):
    return replace_props(resources, kueue_pool(H100), lambda p: p["pool"]["topology"].update(topology))


@pytest.mark.parametrize("policy", [fabric_pool_topology, fabric_pool_topology_alignment], ids=lambda p: p.name)
def test_metadata_and_example_stacks_pass(policy, seed, aws_efa):
    assert_metadata(policy, EnforcementLevel.ADVISORY if policy in ADVISORY else EnforcementLevel.MANDATORY)
    assert_no_violations(policy, seed)
    assert_no_violations(policy, aws_efa)


def test_topology_none_is_refused_and_best_effort_is_advisory(aws_efa):
    none = with_topology(aws_efa, policy="none")
    assert_violation(fabric_pool_topology, none, "policy 'none' does not align")
    best_effort = with_topology(aws_efa, policy="best-effort")
    assert_no_violations(fabric_pool_topology, best_effort)
    violation = assert_violation(fabric_pool_topology_alignment, best_effort, "'best-effort' admits pods")
    assert violation.enforcement == EnforcementLevel.ADVISORY


def test_static_cpu_manager_needs_reserved_cpus(aws_efa):
    assert_violation(fabric_pool_topology, with_topology(aws_efa, cpuManagerPolicy="static"), "reservedSystemCPUs is required")
    assert_no_violations(fabric_pool_topology, with_topology(aws_efa, cpuManagerPolicy="static", reservedSystemCPUs="0-1"))
