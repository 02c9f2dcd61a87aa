"""Step 2 decided by the real kube-scheduler: every ResourceClaimTemplate gpu-fabric renders is allocated with
each GPU beside its NICs on one PCIe root, what cannot fit stays Pending, and ``gpu-fabric verify`` reads the
real allocations (passing the aligned, failing a split claim and a GPU claimed without its NIC).

kube-scheduler v1.37.2 (``scripts/engine-tools``' kube-node tool) runs with its default profile against the
control plane (``scripts/control-plane start --scheduler``); Dynamic Resource Allocation is GA there. Nodes
have no kubelet: the scheduler decides from the ResourceSlices and binds, and that is what is judged
(:mod:`e2e.dra_nodes` publishes slices shaped like NVIDIA's GPU driver's and DRANET's for each PCIe layout
gpu-fabric knows).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from e2e.dra_nodes import KubeletlessNodes, device_classes, node_object, resource_slices
from e2e.engine import ControlPlane, gpu_fabric, output_of, render_example_stack, rendered_objects, wait_for
from gpu_fabric.aws.pcie_topology import pcie_topology
from gpu_fabric.kube.dra_claims import PCIE_ROOT_ATTRIBUTE
from gpu_fabric.verify.checks import FAIL, PASS, alignment_checks

NAMESPACE = "team-a"
HOLDERS = "holders"
"""Claims that only occupy devices live outside the stack's claim namespaces, so verify does not judge them."""
UNSCHEDULABLE = "cannot allocate all claims"
TAINT = {"key": "nvidia.com/gpu", "effect": "NoSchedule"}

# Layout -> the GPU counts per claim its stack renders: one root, several roots, the whole node (p5: half of it,
# 4 GPUs with their 16 EFA; the whole node's 40 devices are above the API's 32 results per claim).
LAYOUTS = {"p4d.24xlarge": [2, 4, 8], "p5.48xlarge": [1, 2, 4], "p5en.48xlarge": [1, 2, 8]}


@pytest.fixture(scope="module")
def scheduler_cluster(engine_bin: Path, tmp_path_factory):
    plane = ControlPlane.start(tmp_path_factory.mktemp("dra") / "plane", engine_bin, scheduler=True)
    nodes = KubeletlessNodes(plane.api)
    try:
        for namespace in (NAMESPACE, HOLDERS):
            plane.ensure_namespace(namespace)
        for device_class in device_classes():
            plane.resource("resource.k8s.io/v1", "DeviceClass").create(body=device_class)
        yield plane, nodes
    finally:
        nodes.stop()
        plane.stop()


def render_stack(tmp: Path, name: str, pool: dict[str, Any]) -> list[dict]:
    """Render the dra-efa example stack with its pool replaced by ``pool``; the rendered objects."""
    def edit(config: dict) -> None:
        base = config["gpu-fabric:pools"][0]
        config["gpu-fabric:pools"] = [{**base, **pool, "aws": {**base["aws"], **pool.get("aws", {})}}]

    return rendered_objects(render_example_stack(tmp, "dra-efa", name, edit))


def layout_pool(instance_type: str) -> dict[str, Any]:
    layout = pcie_topology(instance_type)
    assert layout is not None
    short = instance_type.split(".")[0]
    return {"name": f"{short}-dra", "acceleratorsPerNode": layout.gpus, "interfacesPerNode": layout.efa_interfaces,
            "gpusPerClaim": LAYOUTS[instance_type], "nodeLabels": {"gpu-fabric.io/pool": f"{short}-dra"},
            "aws": {"instanceTypes": [instance_type]}}


def claim_pod(name: str, node: str, template: str | None = None, claim: str | None = None,
              namespace: str = NAMESPACE, limits: dict[str, Any] | None = None) -> dict[str, Any]:
    """A pod pinned to ``node`` (by hostname label: the scheduler still decides) with one claim or ``limits``."""
    container: dict[str, Any] = {"name": "engine", "image": "registry.k8s.io/pause:3.10", "resources": {}}
    spec: dict[str, Any] = {"automountServiceAccountToken": False, "terminationGracePeriodSeconds": 0,
                            "nodeSelector": {"kubernetes.io/hostname": node},
                            "tolerations": [{**TAINT, "operator": "Exists"}], "containers": [container]}
    if template or claim:
        source = {"resourceClaimTemplateName": template} if template else {"resourceClaimName": claim}
        spec["resourceClaims"] = [{"name": "devices", **source}]
        container["resources"]["claims"] = [{"name": "devices"}]
    if limits:
        container["resources"]["limits"] = limits
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace}, "spec": spec}


class Cluster:
    """Reads and writes of one test against the scheduler's control plane."""

    def __init__(self, plane: ControlPlane, nodes: KubeletlessNodes):
        self.plane, self.nodes = plane, nodes
        self.pods = plane.resource("v1", "Pod")
        self.claims = plane.resource("resource.k8s.io/v1", "ResourceClaim")
        self.slices = plane.resource("resource.k8s.io/v1", "ResourceSlice")

    def add_node(self, name: str, instance_type: str, labels: dict[str, str]) -> dict[str, str]:
        """A kubelet-less node of ``instance_type`` and its drivers' slices; device name -> PCIe root."""
        self.nodes.add(node_object(name, instance_type, labels, [TAINT]))
        slices, root_of = resource_slices(name, instance_type)
        for item in slices:
            self.slices.create(body=item)
        return root_of

    def create(self, obj: dict[str, Any]) -> None:
        kind = self.plane.resource(obj["apiVersion"], obj["kind"])
        kind.create(body=obj, namespace=obj["metadata"].get("namespace"))

    def pod(self, name: str, namespace: str = NAMESPACE) -> dict[str, Any]:
        return self.pods.get(name=name, namespace=namespace).to_dict()

    def unschedulable(self, name: str, namespace: str = NAMESPACE) -> str:
        """The scheduler's message when it marked the pod unschedulable, else ""."""
        for condition in self.pod(name, namespace).get("status", {}).get("conditions") or []:
            if condition.get("type") == "PodScheduled" and condition.get("reason") == "Unschedulable":
                return condition.get("message", "")
        return ""

    def claim_of(self, pod: str, namespace: str = NAMESPACE) -> dict[str, Any]:
        """The allocated ResourceClaim reserved for ``pod``."""
        for item in self.claims.get(namespace=namespace).to_dict()["items"]:
            reserved = (item.get("status") or {}).get("reservedFor") or []
            if any(entry.get("name") == pod for entry in reserved):
                return item
        raise AssertionError(f"no ResourceClaim is reserved for pod {namespace}/{pod}")

    def all_slices(self) -> list[dict[str, Any]]:
        return self.slices.get().to_dict()["items"]


def independent_alignment(claim: dict[str, Any], root_of: dict[str, str]) -> list[str]:
    """Problems of ``claim`` by this test's own reading: each pcieRoot constraint's devices share one root."""
    results = claim["status"]["allocation"]["devices"]["results"]
    problems = []
    for constraint in claim["spec"]["devices"].get("constraints") or []:
        if constraint.get("matchAttribute") != PCIE_ROOT_ATTRIBUTE:
            continue
        names = set(constraint["requests"])
        roots = {root_of[result["device"]] for result in results if result["request"].split("/")[0] in names}
        if len(roots) != 1:
            problems.append(f"requests {sorted(names)} span roots {sorted(roots)}")
    return problems


@pytest.mark.parametrize("instance_type", sorted(LAYOUTS))
def test_the_scheduler_allocates_every_rendered_template_aligned_and_the_rest_stays_pending(
        scheduler_cluster, tmp_path: Path, instance_type: str):
    plane, nodes = scheduler_cluster
    cluster = Cluster(plane, nodes)
    layout = pcie_topology(instance_type)
    assert layout is not None
    pool = layout_pool(instance_type)
    templates = [obj for obj in render_stack(tmp_path, pool["name"], pool) if obj["kind"] == "ResourceClaimTemplate"]
    assert len(templates) == len(LAYOUTS[instance_type])
    for template in templates:
        cluster.create(template)
    lines = []
    for template in templates:
        gpus = sum(request["exactly"]["count"] for request in template["spec"]["spec"]["devices"]["requests"]
                   if request["exactly"]["deviceClassName"] == "gpu.nvidia.com")
        name = template["metadata"]["name"]
        node = f"{name}-node"
        root_of = cluster.add_node(node, instance_type, pool["nodeLabels"])
        fits = layout.gpus // gpus
        pods = [f"{name}-{index}" for index in range(fits + 1)]
        for pod in pods:
            cluster.create(claim_pod(pod, node, template=name))

        def settled() -> bool:
            bound = [pod for pod in pods if cluster.pod(pod)["spec"].get("nodeName")]
            waiting = [pod for pod in pods if UNSCHEDULABLE in cluster.unschedulable(pod)]
            return len(bound) == fits and len(waiting) == 1

        wait_for(f"{name}: {fits} pods bound to {node} and one Pending ({UNSCHEDULABLE})", settled, timeout=90,
                 explain=lambda: json.dumps({pod: (cluster.pod(pod)["spec"].get("nodeName"), cluster.unschedulable(pod))
                                             for pod in pods}, indent=1) + f"\nheartbeat errors: {nodes.errors}")
        bound = [pod for pod in pods if cluster.pod(pod)["spec"].get("nodeName")]
        claims = [cluster.claim_of(pod) for pod in bound]
        for claim in claims:
            assert independent_alignment(claim, root_of) == [], claim
            held = [r for r in claim["status"]["allocation"]["devices"]["results"] if r["driver"] == "gpu.nvidia.com"]
            assert len(held) == gpus
        checks = alignment_checks(claims, cluster.all_slices())
        assert [check.status for check in checks] == [PASS] * fits, [check.sentence() for check in checks]
        lines.append(f"{instance_type} {name}: {fits} pods bound, every GPU beside its EFA; 1 Pending ({UNSCHEDULABLE})")
    print("\n" + "\n".join(lines))


def test_verify_reads_the_real_allocations_and_fails_split_and_unpaired_claims(scheduler_cluster, tmp_path: Path):
    plane, nodes = scheduler_cluster
    cluster = Cluster(plane, nodes)
    stack_objects = render_stack(tmp_path, "dra-efa", {})
    for template in (obj for obj in stack_objects if obj["kind"] == "ResourceClaimTemplate"):
        cluster.create(template)
    node = "ip-10-0-1-1.ec2.internal"
    root_of = cluster.add_node(node, "p5en.48xlarge", {
        "gpu-fabric.io/pool": "p5en-h200", "gpu-fabric.io/device-allocation": "dra", "vpc.amazonaws.com/efa.present": "true"})
    roots = sorted(set(root_of.values()))
    free_gpu_roots, free_efa_roots = {roots[0], roots[1], roots[2]}, {roots[0], roots[7]}

    def hold(name: str, device_class: str, keep_free: set[str]) -> None:
        # Occupy every device of the class except those on keep_free's roots (a pod must use a claim to allocate it).
        expression = " && ".join(f'device.attributes["resource.kubernetes.io"].pcieRoot != "{root}"'
                                 for root in sorted(keep_free))
        cluster.create({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                        "metadata": {"name": name, "namespace": HOLDERS},
                        "spec": {"devices": {"requests": [{"name": "all", "exactly": {
                            "deviceClassName": device_class, "allocationMode": "All",
                            "selectors": [{"cel": {"expression": expression}}]}}]}}})
        cluster.create(claim_pod(name, node, claim=name, namespace=HOLDERS))

    hold("hold-gpus", "gpu.nvidia.com", free_gpu_roots)
    hold("hold-efa", "efa.networking.k8s.aws", free_efa_roots)
    wait_for("holder pods bound", lambda: all(cluster.pod(p, HOLDERS)["spec"].get("nodeName")
                                              for p in ("hold-gpus", "hold-efa")), timeout=60)

    # The stack's template pairs a GPU with its root's EFA: only roots[0] can, so it gets roots[0].
    cluster.create(claim_pod("aligned", node, template="p5en-h200-1gpu"))
    wait_for("aligned pod bound", lambda: cluster.pod("aligned")["spec"].get("nodeName"), timeout=60)
    aligned = cluster.claim_of("aligned")
    assert {root_of[r["device"]] for r in aligned["status"]["allocation"]["devices"]["results"]} == {roots[0]}

    # The same counts without the constraint: the free GPU and the free EFA sit on different roots, and it is bound.
    unconstrained = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                     "metadata": {"name": "no-root-constraint", "namespace": NAMESPACE},
                     "spec": {"spec": {"devices": {"requests": [
                         {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 1}},
                         {"name": "efa", "exactly": {"deviceClassName": "efa.networking.k8s.aws", "count": 2}}]}}}}
    cluster.create(unconstrained)
    cluster.create(claim_pod("split", node, template="no-root-constraint"))
    wait_for("split pod bound", lambda: cluster.pod("split")["spec"].get("nodeName"), timeout=60)

    # Device-plugin keys on the DRA node: nothing advertises them while the GPU class has no extendedResourceName.
    cluster.create(claim_pod("efa-key", node, limits={"vpc.amazonaws.com/efa": 2}))
    cluster.create(claim_pod("gpu-key-before", node, limits={"nvidia.com/gpu": 1}))
    wait_for("plugin-key pods unschedulable", lambda: "Insufficient vpc.amazonaws.com/efa" in cluster.unschedulable("efa-key")
             and "Insufficient nvidia.com/gpu" in cluster.unschedulable("gpu-key-before"), timeout=60)
    cluster.pods.delete(name="gpu-key-before", namespace=NAMESPACE, body={"gracePeriodSeconds": 0})
    # NVIDIA's chart sets extendedResourceName on resource.k8s.io/v1: now the same request is scheduled through an
    # implicit claim holding a GPU and no EFA.
    classes = plane.resource("resource.k8s.io/v1", "DeviceClass")
    gpu_class = classes.get(name="gpu.nvidia.com").to_dict()
    gpu_class["spec"]["extendedResourceName"] = "nvidia.com/gpu"
    classes.replace(body=gpu_class)
    cluster.create(claim_pod("gpu-key", node, limits={"nvidia.com/gpu": 1}))
    wait_for("nvidia.com/gpu pod bound through an implicit claim", lambda: cluster.pod("gpu-key")["spec"].get("nodeName"),
             timeout=60, explain=lambda: cluster.unschedulable("gpu-key"))
    implicit = cluster.claim_of("gpu-key")
    assert "extended-resources" in implicit["metadata"]["name"]
    assert {r["driver"] for r in implicit["status"]["allocation"]["devices"]["results"]} == {"gpu.nvidia.com"}
    assert "Insufficient vpc.amazonaws.com/efa" in cluster.unschedulable("efa-key")

    done = gpu_fabric("verify", "--stack", "dra-efa", "--kubeconfig", str(plane.kubeconfig), "--json")
    assert done.returncode == 1, output_of(done)
    report = json.loads(done.stdout)
    verdicts = {row["subject"]: row for row in report["deviceAlignment"]}
    assert verdicts[f"pod {NAMESPACE}/aligned"]["status"] == PASS, verdicts
    split = verdicts[f"pod {NAMESPACE}/split"]
    assert split["status"] == FAIL and "has no NIC of the claim on its root" in split["detail"], split
    unpaired = verdicts[f"pod {NAMESPACE}/gpu-key"]
    assert unpaired["status"] == FAIL and "claimed without a NIC" in unpaired["detail"], unpaired
    assert not any(subject.startswith(f"pod {HOLDERS}/") for subject in verdicts)
    print("\nverify --stack dra-efa against the real scheduler's allocations: "
          + ", ".join(f"{subject} {row['status']}" for subject, row in sorted(verdicts.items())))
