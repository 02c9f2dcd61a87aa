"""What a stack policy receives for a component: its registered outputs, as the engine sends them.

``AnalyzeStack`` carries each resource's final outputs (pulumi/pulumi
pkg/resource/deploy/step_generator.go ``AnalyzeResources``), and a component's outputs are exactly what
it passed to ``register_outputs``. Under the real engine the pack once saw a ``KueuePool`` without its
``pool`` and refused the walkthrough's own stack ("selects no rdma pool"); the offline render now hands
the pack the same view, and every component registers its inputs among its outputs.
"""

from __future__ import annotations

import pytest

from gpu_fabric.policies import POLICIES_BY_NAME
from gpu_fabric.program.render import render_stack
from support.policy_helpers import PROJECT_DIR, run

STACKS = ["seed-rdma", "aws-efa", "karpenter-efa", "dra-efa"]


@pytest.mark.parametrize("stack", STACKS)
def test_every_component_registers_its_inputs_among_its_outputs(stack):
    result = render_stack(stack, PROJECT_DIR)
    components = [r for r in result.resources if not r.custom and r.type.startswith("gpu-fabric:index:")]
    assert components
    for resource in components:
        view = resource.policy_resource().stack_view
        missing = sorted(set(resource.policy_inputs) - set(view.props))
        assert missing == [], f"{resource.type} {resource.name}: AnalyzeStack would lack {missing}"


def test_a_pool_component_seen_by_its_outputs_alone_is_what_the_engine_refused():
    # The stack as the engine saw it before the fix: the KueuePool's registered outputs without its inputs.
    result = render_stack("seed-rdma", PROJECT_DIR)
    resources = []
    for rendered in result.resources:
        resource = rendered.policy_resource()
        if rendered.type == "gpu-fabric:index:KueuePool":
            outputs_only = {k: v for k, v in resource.stack_view.props.items() if k not in rendered.policy_inputs}
            resource = type(resource)(resource.type, resource.name, resource.urn, resource.props, resource.parent,
                                      resource.property_dependencies, outputs_only)
        resources.append(resource)
    policy = POLICIES_BY_NAME["efa-domain-placement"]
    refused = run(policy, resources)
    assert any("selects no rdma pool" in v.message for v in refused)
    assert run(policy, [r.policy_resource() for r in result.resources]) == []
