"""The ``fabric-workloads`` policies (mandatory and advisory): the workload rules of ``lint --stack`` over a stack's workload resources."""

import copy

from gpu_fabric.policies.workloads import fabric_workloads, fabric_workloads_advisory

from support.policy_helpers import assert_metadata, assert_no_violations, assert_violation, component, k8s
from support.stack_configs import stack_values
from support.workloads import pod_spec, wrap, with_container


def _kueue_pools():
    return [component("gpu-fabric:index:KueuePool", {"pool": pool}, pool["name"]) for pool in stack_values("aws-efa")["pools"]]


def test_the_pack_applies_the_same_rules_to_workload_resources():
    assert_metadata(fabric_workloads)
    assert_metadata(fabric_workloads_advisory, enforcement=fabric_workloads_advisory.enforcement_level)
    wrong = pod_spec()
    del wrong["containers"][0]["resources"]["limits"]["hugepages-2Mi"]
    deployment = k8s(wrap("Deployment", wrong))
    assert_violation(fabric_workloads, [*_kueue_pools(), deployment], "without hugepages-2Mi", urn=deployment.urn)
    assert_no_violations(fabric_workloads, [*_kueue_pools(), k8s(wrap("Deployment", pod_spec()))])
    dead = k8s(wrap("StatefulSet", with_container(env=[{"name": "NCCL_IB_HCA", "value": "x"}])))
    assert_violation(fabric_workloads_advisory, [*_kueue_pools(), dead], "does not configure NixlConnector")
    assert_no_violations(fabric_workloads, [*_kueue_pools(), copy.deepcopy(dead)])
