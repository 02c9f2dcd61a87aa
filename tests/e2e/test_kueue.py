"""Kueue itself admitting the walkthrough's Step 1 Pod against the quota a standalone stack declares.

``scripts/control-plane start --kueue`` runs Kueue's controller beside the API server, its webhooks
wired to 127.0.0.1 the way Kueue's own integration tests wire them. The walkthrough's stack, switched
to ``queueOwner: standalone`` (gpu-fabric then owns the ResourceFlavor, the ClusterQueue that meters
the accelerators and the fabric keys, and the tenant's LocalQueue ``gpustack-fnv64-<hash>``), goes up
under the real engine; then the walkthrough's Step 1 Pod, labelled with that LocalQueue, is gated by
Kueue's webhook, gets a Workload, is admitted against the ClusterQueue and ungated; Pods beyond the
quota the stack declared (computed from the ClusterQueue's ``nominalQuota``, not a constant) stay
gated with their Workload pending. The stack is destroyed at the end with Kueue still running: its
finalizers on the ClusterQueue and the ResourceFlavor must not leave ``pulumi destroy`` hanging.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Iterable, Optional

import pytest
import yaml

from e2e.engine import (ControlPlane, PulumiWorkspace, control_plane_state, gpu_fabric, kueue_log_tail,
                        output_of, rendered_objects, wait_for)

ROOT = Path(__file__).resolve().parents[2]
STACK = "seed-rdma"
KUEUE = "kueue.x-k8s.io/v1beta2"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
GATE = "kueue.x-k8s.io/admission"
SHARED = "device.gpustack.ai/rdma.shared"
# The walkthrough's Step 1 ("Request RDMA") container limits: one whole accelerator and one shared
# RDMA endpoint (gpustack/gpustack-operator docs/walkthroughs/rdma/network-endpoints.md, "RDMA Networking Walkthrough").
STEP1_LIMITS = {"nvidia.com/gpu": "1", SHARED: "1"}
DEADLINE = 60.0


@pytest.fixture
def kueue_cluster(engine_bin: Path, tmp_path: Path):
    """A fresh control plane with Kueue running (or ``$GPU_FABRIC_E2E_KUBECONFIG``'s cluster, which
    must run Kueue with its pod integration)."""
    own = os.environ.get("GPU_FABRIC_E2E_KUBECONFIG")
    if own:
        plane = ControlPlane.existing(Path(own))
        hooks = plane.resource("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration").get().to_dict()
        if not any(hook.get("name") == "mpod.kb.io" for item in hooks.get("items", [])
                   for hook in item.get("webhooks") or []):
            pytest.skip("the cluster in GPU_FABRIC_E2E_KUBECONFIG runs no Kueue pod webhook (mpod.kb.io)")
        yield plane
        return
    started = time.monotonic()
    plane = ControlPlane.start(tmp_path / "plane", engine_bin, kueue=True)
    state = control_plane_state(plane)
    print(f"\ncontrol plane with Kueue up in {time.monotonic() - started:.1f}s (of which Kueue: certificates, "
          f"launch, /readyz and webhooks answering {state.get('kueue', {}).get('readySeconds')}s)")
    try:
        yield plane
    finally:
        plane.stop()


# ------------------------------------------------------------------------------------------ helpers


def _quantity(value: Any) -> float:
    from kubernetes.utils import parse_quantity

    return float(parse_quantity(str(value)))


def _condition(obj: Optional[dict], kind: str) -> dict:
    for condition in ((obj or {}).get("status") or {}).get("conditions") or []:
        if condition.get("type") == kind:
            return condition
    return {}


def _is_true(obj: Optional[dict], kind: str) -> bool:
    return _condition(obj, kind).get("status") == "True"


def _gates(pod: Optional[dict]) -> list[str]:
    spec = (pod or {}).get("spec") or {}
    return [gate["name"] for gate in spec.get("schedulingGates", spec.get("scheduling_gates")) or []]


def _only(objects: Iterable[dict], kind: str, namespace: Optional[str] = None) -> dict:
    found = [o for o in objects if o["kind"] == kind and (namespace is None or o["metadata"].get("namespace") == namespace)]
    assert len(found) == 1, f"expected one {kind}{' in ' + namespace if namespace else ''}, rendered {len(found)}"
    return found[0]


def _nominal_quotas(cluster_queue: dict) -> dict[str, float]:
    """``nominalQuota`` per resource of the ClusterQueue's single flavor (gpu-fabric writes one per pool)."""
    quotas: dict[str, float] = {}
    for group in cluster_queue["spec"]["resourceGroups"]:
        for flavor in group["flavors"]:
            for resource in flavor["resources"]:
                assert resource["name"] not in quotas, f"{resource['name']} metered by more than one flavor"
                quotas[resource["name"]] = _quantity(resource["nominalQuota"])
    return quotas


class Queueing:
    """Pods in the tenant namespace and the Workloads Kueue makes of them."""

    def __init__(self, cluster: ControlPlane, namespace: str, local_queue: str):
        self.cluster = cluster
        self.namespace = namespace
        self.local_queue = local_queue
        self.pods = cluster.resource("v1", "Pod")
        self.workloads = cluster.resource(KUEUE, "Workload")
        self.last: dict[str, Any] = {}

    def explain(self, *names: str) -> str:
        seen = "\n".join(f"--- last seen {key}\n{yaml.safe_dump(value, sort_keys=False)}"
                         for key, value in self.last.items() if not names or key.split(" ", 1)[-1] in names)
        return f"{seen}\n{kueue_log_tail(self.cluster)}"

    def create(self, name: str, limits: dict[str, str]) -> dict:
        """The walkthrough's Step 1 Pod under ``name`` with ``limits``, labelled with the LocalQueue."""
        pod = {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": self.namespace, "labels": {QUEUE_LABEL: self.local_queue}},
            "spec": {"restartPolicy": "Never", "containers": [{
                "name": "trainer", "image": "ubuntu:24.04", "command": ["sleep", "3600"],
                "resources": {"limits": dict(limits)}}]},
        }
        return self.pods.create(body=pod, namespace=self.namespace).to_dict()

    def pod(self, name: str) -> Optional[dict]:
        from kubernetes.dynamic.exceptions import NotFoundError

        try:
            found = self.pods.get(name=name, namespace=self.namespace).to_dict()
        except NotFoundError:
            found = None
        self.last[f"pod {name}"] = found
        return found

    def workload(self, name: str) -> Optional[dict]:
        """The Workload Kueue created for Pod ``name`` (owned by it)."""
        pod = self.pod(name)
        if pod is None:
            return None
        uid = pod["metadata"]["uid"]
        items = self.workloads.get(namespace=self.namespace).to_dict().get("items", [])
        owned = [w for w in items if any(ref.get("uid") == uid for ref in w["metadata"].get("ownerReferences") or [])]
        self.last[f"workload {name}"] = owned[0] if owned else None
        return owned[0] if owned else None

    def wait_admitted(self, name: str) -> dict:
        workload = wait_for(f"Kueue admits the Workload of Pod {self.namespace}/{name}",
                            lambda: (lambda w: w if _is_true(w, "Admitted") else None)(self.workload(name)),
                            timeout=DEADLINE, explain=lambda: self.explain(name))
        pod = wait_for(f"Kueue removes the scheduling gate {GATE} from Pod {self.namespace}/{name}",
                       lambda: (lambda p: p if p and GATE not in _gates(p) else None)(self.pod(name)),
                       timeout=DEADLINE, explain=lambda: self.explain(name))
        return {"workload": workload, "pod": pod}

    def wait_refused_for_quota(self, name: str, resource: str) -> dict:
        """Kueue tried Pod ``name``'s Workload and found no quota for ``resource``: QuotaReserved False
        naming it; then the Workload is not admitted and the Pod keeps its gate."""
        def pending() -> Optional[dict]:
            workload = self.workload(name)
            reserved = _condition(workload, "QuotaReserved")
            if reserved.get("status") == "False" and resource in reserved.get("message", ""):
                return workload
            return None

        workload = wait_for(f"Kueue leaves the Workload of Pod {self.namespace}/{name} pending on {resource} quota",
                            pending, timeout=DEADLINE, explain=lambda: self.explain(name))
        assert not _is_true(workload, "Admitted"), self.explain(name)
        assert (workload.get("status") or {}).get("admission") is None, self.explain(name)
        assert GATE in _gates(self.pod(name)), self.explain(name)
        return workload

    def wait_split(self, names: list[str], admitted: int, resource: str) -> str:
        """Of the Pods ``names`` (created together: Kueue orders equal creation times as it likes),
        exactly ``admitted`` are admitted and ungated and the rest held for ``resource``; the name of
        one held Pod is returned."""
        def split() -> Optional[tuple[list[str], list[str]]]:
            workloads = {name: self.workload(name) for name in names}
            pods = {name: self.pod(name) for name in names}
            done = [n for n, w in workloads.items() if _is_true(w, "Admitted") and GATE not in _gates(pods[n])]
            held = [n for n, w in workloads.items() if _condition(w, "QuotaReserved").get("status") == "False"
                    and resource in _condition(w, "QuotaReserved").get("message", "")]
            return (done, held) if len(done) == admitted and len(held) == len(names) - admitted else None

        done, held = wait_for(f"Kueue admits {admitted} of Pods {names} and holds the rest on {resource} quota",
                              split, timeout=DEADLINE, explain=lambda: self.explain(*names))
        for name in held:
            self.wait_refused_for_quota(name, resource)
        return held[0]

    def delete_all(self, names: Iterable[str]) -> None:
        for name in names:
            self.pods.delete(name=name, namespace=self.namespace)
        wait_for(f"Pods {sorted(names)} gone (Kueue drops its finalizer)",
                 lambda: all(self.pod(name) is None for name in names), timeout=DEADLINE,
                 explain=lambda: self.explain())


# -------------------------------------------------------------------------------------------- test


def test_standalone_queues_admit_step1_pod_and_hold_the_rest(kueue_cluster: ControlPlane, engine_bin: Path,
                                                             tmp_path: Path):
    cluster = kueue_cluster
    began = time.monotonic()
    workspace = PulumiWorkspace.copy_of(ROOT, tmp_path / "project", engine_bin, cluster.kubeconfig, tmp_path)
    stack_file = workspace.project / "stacks" / f"Pulumi.{STACK}.yaml"
    stack = yaml.safe_load(stack_file.read_text())
    stack["config"]["gpu-fabric:queueOwner"] = "standalone"
    stack_file.write_text(yaml.safe_dump(stack, sort_keys=False))

    out = tmp_path / "render"
    done = gpu_fabric("render", "--project", str(workspace.project), "--stack", STACK, "--out", str(out), "--quiet")
    assert done.returncode == 0, output_of(done)
    objects = rendered_objects(out)
    namespace = stack["config"]["gpu-fabric:namespaces"][0]
    local_queue = _only(objects, "LocalQueue", namespace)
    cluster_queue = _only(objects, "ClusterQueue")
    flavor = _only(objects, "ResourceFlavor")
    assert local_queue["metadata"]["name"].startswith("gpustack-fnv64-"), local_queue
    assert local_queue["spec"]["clusterQueue"] == cluster_queue["metadata"]["name"]

    for name in stack["config"]["gpu-fabric:namespaces"]:
        cluster.ensure_namespace(name)
    workspace.stack_init(STACK)
    # The pack under the real engine is test_preview's and test_lifecycle's subject; here only what
    # Kueue makes of the applied objects counts.
    up = workspace.pulumi("up", "--stack", STACK, "--yes", "--skip-preview")
    assert up.returncode == 0, output_of(up) + "\n" + kueue_log_tail(cluster)
    absent = [f"{o['kind']} {o['metadata'].get('namespace', '')}/{o['metadata']['name']}"
              for o in objects if cluster.get(o) is None]
    assert absent == []
    applied = time.monotonic()

    # What the server holds is what Kueue meters: its webhooks defaulted the stack's objects (the
    # finalizer) and its controllers must find the queues usable.
    queue = Queueing(cluster, namespace, local_queue["metadata"]["name"])
    stored_cq = wait_for("Kueue marks the stack's ClusterQueue Active",
                         lambda: (lambda cq: cq if _is_true(cq, "Active") else None)(cluster.get(cluster_queue)),
                         timeout=DEADLINE, explain=lambda: f"{cluster.get(cluster_queue)}\n{kueue_log_tail(cluster)}")
    wait_for("Kueue marks the stack's LocalQueue Active",
             lambda: _is_true(cluster.get(local_queue), "Active"), timeout=DEADLINE,
             explain=lambda: f"{cluster.get(local_queue)}\n{kueue_log_tail(cluster)}")
    assert "kueue.x-k8s.io/resource-in-use" in stored_cq["metadata"].get("finalizers", []), stored_cq["metadata"]
    quotas = _nominal_quotas(stored_cq)
    assert quotas == _nominal_quotas(cluster_queue), "the server holds other quotas than the stack rendered"
    assert SHARED in quotas and quotas[SHARED] >= 1, quotas

    # Step 1: the walkthrough's Pod. Kueue's webhook gates it at creation, its pod controller makes a
    # Workload, the scheduler admits it against the ClusterQueue and the gate comes off, the flavor's
    # node labels in its nodeSelector.
    marks = {"applied": time.monotonic()}
    created = queue.create("trainer-0", STEP1_LIMITS)
    assert GATE in _gates(created), f"Kueue's webhook did not gate the Pod: {created['spec']}"
    first = queue.wait_admitted("trainer-0")
    marks["Step 1 Pod admitted and ungated"] = time.monotonic()
    admission = first["workload"]["status"]["admission"]
    assert admission["clusterQueue"] == cluster_queue["metadata"]["name"], admission
    assigned = admission["podSetAssignments"][0]
    assert set(assigned["flavors"].values()) == {flavor["metadata"]["name"]}, assigned
    node_selector = first["pod"]["spec"].get("nodeSelector") or first["pod"]["spec"].get("node_selector") or {}
    for key, value in (flavor["spec"].get("nodeLabels") or {}).items():
        assert node_selector.get(key) == value, f"flavor label {key} not injected: {node_selector}"

    # As many Step 1 Pods as the declared quota holds, and one more: whichever metered key runs out
    # first (the walkthrough's Pod takes a whole accelerator with its endpoint) holds the last one.
    requests = {key: _quantity(value) for key, value in STEP1_LIMITS.items()}
    assert set(requests) <= set(quotas), f"the ClusterQueue does not meter {set(requests) - set(quotas)}"
    fits = {key: int(quotas[key] // amount) for key, amount in requests.items()}
    capacity = min(fits.values())
    binding = min(fits, key=fits.get)
    assert capacity >= 1, fits
    print(f"\nClusterQueue {cluster_queue['metadata']['name']} nominalQuota {quotas}: "
          f"{capacity} Step 1 Pods fit ({binding} runs out first; per key {fits})")
    trainers = [f"trainer-{i}" for i in range(capacity + 1)]
    for name in trainers[1:]:
        queue.create(name, STEP1_LIMITS)
    queue.wait_split(trainers[1:], capacity - 1, binding)
    marks[f"{capacity - 1} more admitted and Pod {capacity + 1} held on {binding}"] = time.monotonic()

    # The shared RDMA endpoints the stack declared, exactly: the rest of device.gpustack.ai/rdma.shared
    # in one Pod (admitted), then one endpoint more (held until quota frees up).
    rest = int(quotas[SHARED] - capacity * requests[SHARED])
    fillers = []
    if rest > 0:
        queue.create("rdma-rest", {SHARED: str(rest)})
        queue.wait_admitted("rdma-rest")
        fillers.append("rdma-rest")
        marks[f"rest of {SHARED} admitted"] = time.monotonic()
    queue.create("rdma-over", {SHARED: "1"})
    queue.wait_refused_for_quota("rdma-over", SHARED)
    marks[f"one {SHARED} more held"] = time.monotonic()
    if fillers:
        queue.delete_all(fillers)
        marks["filler deleted"] = time.monotonic()
        queue.wait_admitted("rdma-over")
        marks["held Pod admitted once quota freed"] = time.monotonic()
    admitted_all = time.monotonic()

    # Kueue's webhooks and status writes must be no drift for the stack (checked here, asserted last
    # so destroy still runs), and with the Pods gone Kueue releases its finalizers so destroy finishes.
    again = workspace.pulumi("preview", "--stack", STACK, "--expect-no-changes", "--diff")
    drift = None if again.returncode == 0 else output_of(again)
    queue.delete_all(trainers + ["rdma-over"])
    destroy = workspace.pulumi("destroy", "--stack", STACK, "--yes")
    assert destroy.returncode == 0, output_of(destroy) + "\n" + kueue_log_tail(cluster)
    # Tenant namespaces are retained on delete by design (docs/stacks.md#tenant-namespaces): everything else goes.
    left = [f"{o['kind']} {o['metadata'].get('namespace', '')}/{o['metadata']['name']}: "
            f"finalizers {(cluster.get(o) or {}).get('metadata', {}).get('finalizers')}"
            for o in objects if o["kind"] != "Namespace" and cluster.get(o) is not None]
    assert all(cluster.get(o) is not None for o in objects if o["kind"] == "Namespace")
    assert left == [], kueue_log_tail(cluster)
    steps = list(marks.items())
    print("Kueue: " + ", ".join(f"{name} +{at - before:.1f}s" for (_, before), (name, at) in zip(steps, steps[1:])))
    print(f"render+up {applied - began:.1f}s, Kueue admission checks {admitted_all - applied:.1f}s, "
          f"preview+destroy {time.monotonic() - admitted_all:.1f}s")
    # Kueue's mutating ClusterQueue webhook (CREATE only) re-serializes the object through Go types:
    # a nominalQuota written as a JSON number comes back as the quantity string ("8"), which the
    # next preview shows as an update until a second `pulumi up` writes the numbers back.
    assert drift is None, f"with Kueue running, the stack does not preview clean after `pulumi up`:\n{drift}"
