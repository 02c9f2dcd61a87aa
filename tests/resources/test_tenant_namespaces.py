"""The stack owns the tenant namespaces it declares (docs/stacks.md#tenant-namespaces).

Each one is a ``NamespacePatch`` (created when absent, adopted when present) with ``retain_on_delete``
(never deleted), and every object the stack registers in one depends on it, so ``pulumi up`` on a control
plane without the namespaces creates them first (issue 38: 13 objects created, 9 failed with
``namespaces "inference-prod" not found``). Checked on every example stack under Pulumi's mock runtime;
tests/e2e/test_tenant_namespaces.py proves the same under the real engine.
"""

import pytest

from gpu_fabric.program.render import render_stack
from gpu_fabric.resources.fabric import GpuFabric
from support.stack_configs import PROJECT_DIR, as_args, seed_values, stack_values

STACKS = sorted(path.name[len("Pulumi."):-len(".yaml")] for path in (PROJECT_DIR / "stacks").glob("Pulumi.*.yaml"))
NAMESPACE_PATCH = "kubernetes:core/v1:NamespacePatch"


@pytest.fixture(scope="module", params=STACKS)
def rendered(request):
    return request.param, render_stack(request.param, PROJECT_DIR).resources


def test_every_declared_namespace_is_a_retained_namespace_patch(rendered):
    stack, resources = rendered
    namespaces = {r.inputs["metadata"]["name"]: r for r in resources if r.type == NAMESPACE_PATCH}
    assert sorted(namespaces) == sorted(stack_values(stack)["namespaces"])
    for name, resource in namespaces.items():
        assert resource.retain_on_delete, f"{stack}: namespace {name} would be deleted by pulumi destroy"
        assert resource.inputs == {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def test_every_object_in_a_tenant_namespace_depends_on_it(rendered):
    stack, resources = rendered
    namespaces = {r.inputs["metadata"]["name"]: r.urn for r in resources if r.type == NAMESPACE_PATCH}
    inside = [r for r in resources if r.is_kubernetes_object and r.inputs["metadata"].get("namespace") in namespaces]
    assert inside, f"{stack}: no object in a tenant namespace, nothing to check"
    waiting = {f"{r.inputs['kind']} {r.inputs['metadata']['namespace']}/{r.inputs['metadata']['name']}":
               namespaces[r.inputs["metadata"]["namespace"]] in r.depends_on for r in inside}
    assert all(waiting.values()), f"{stack}: objects not waiting for their namespace: {waiting}"
    # Nothing else waits for a namespace: cluster-scoped and system-namespace objects go in parallel.
    outside = [r.name for r in resources if r not in inside and set(namespaces.values()) & set(r.depends_on)]
    assert outside == []


def test_a_stack_with_two_namespaces_orders_each_object_after_its_own():
    values = seed_values()
    values["namespaces"] = ["team-a", "inference-prod"]
    result = render_stack("x", config={}, program=lambda: GpuFabric("fabric", as_args(values)))
    urns = {r.inputs["metadata"]["name"]: r.urn for r in result.resources if r.type == NAMESPACE_PATCH}
    queues = {r.inputs["metadata"]["namespace"]: r.depends_on for r in result.resources
              if r.is_kubernetes_object and r.inputs["kind"] == "LocalQueue"}
    assert set(queues) == {"team-a", "inference-prod"}
    for namespace, depends_on in queues.items():
        assert urns[namespace] in depends_on
        assert [u for u in urns.values() if u in depends_on] == [urns[namespace]]
