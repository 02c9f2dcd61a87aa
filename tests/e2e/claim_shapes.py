"""DRA claim and pod-claim shapes for the differential test (tests/e2e/test_claim_shapes_differential.py).

Each :class:`Shape` is one object -- a ResourceClaimTemplate or ResourceClaim (``resource.k8s.io/v1``, one
``v1beta1``), or a Pod with ``resourceClaims`` -- in the dra-efa stack's tenant namespace. They come from two
sources, both deterministic:

* :func:`listed_shapes`: the cases issue 40 lists (claim shapes the API server refuses that ``lint --stack``
  passed), the valid shapes the dra-efa stack renders (``p5en-h200-1gpu``/``-8gpu``), and the edges of each
  rule of k8s.io/kubernetes ``pkg/apis/resource/validation/validation.go`` (validateDeviceRequest,
  validateDeviceAllocationMode, validateDeviceConstraint, validateRequestNameRef, validateFullyQualifiedName)
  and ``pkg/apis/core/validation/validation.go`` (validatePodResourceClaim(s), validateResourceClaimNames);
* :func:`generated_shapes`: a seeded generator that combines the same field values at random.

Nothing here knows the verdict: the API server gives it, and the test compares ``lint``'s with it.
"""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass
from typing import Any, Optional

NAMESPACE = "team-a"
"""The dra-efa stack's tenant namespace (stacks/Pulumi.dra-efa.yaml)."""
V1 = "resource.k8s.io/v1"
V1BETA1 = "resource.k8s.io/v1beta1"
PCIE_ROOT = "resource.kubernetes.io/pcieRoot"
GPU_CLASS = "gpu.nvidia.com"
EFA_CLASS = "efa.networking.k8s.aws"
STACK_TEMPLATE = "p5en-h200-1gpu"


@dataclass(frozen=True)
class Shape:
    label: str
    manifest: dict


def exact(device_class: Optional[str] = GPU_CLASS, mode: Optional[str] = "ExactCount",
          count: Any = 1, selectors: Optional[list] = None) -> dict:
    ask: dict[str, Any] = {}
    if device_class is not None:
        ask["deviceClassName"] = device_class
    if mode is not None:
        ask["allocationMode"] = mode
    if count is not None:
        ask["count"] = count
    if selectors is not None:
        ask["selectors"] = selectors
    return ask


def request(name: Optional[str], exactly: Optional[dict] = None, first: Optional[list] = None) -> dict:
    node: dict[str, Any] = {} if name is None else {"name": name}
    if exactly is not None:
        node["exactly"] = exactly
    if first is not None:
        node["firstAvailable"] = first
    return node


def constraint(requests: Optional[list], attribute: Optional[str] = PCIE_ROOT) -> dict:
    node: dict[str, Any] = {}
    if requests is not None:
        node["requests"] = requests
    if attribute is not None:
        node["matchAttribute"] = attribute
    return node


def template(name: str, requests: list, constraints: Optional[list] = None, api_version: str = V1,
             kind: str = "ResourceClaimTemplate") -> dict:
    devices: dict[str, Any] = {"requests": requests}
    if constraints is not None:
        devices["constraints"] = constraints
    spec = {"devices": devices}
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"spec": spec} if kind == "ResourceClaimTemplate" else spec}


def pair(index: int = 0, gpus: int = 1, nics: int = 2) -> tuple[list, dict]:
    """The dra-efa stack's aligned pair: ``gpu-N`` and ``efa-N`` on one PCIe root (kube/claim_templates.py)."""
    return ([request(f"gpu-{index}", exact(GPU_CLASS, count=gpus)), request(f"efa-{index}", exact(EFA_CLASS, count=nics))],
            constraint([f"gpu-{index}", f"efa-{index}"]))


def pod(name: str, claims: list, container_claims: list) -> dict:
    container = {"name": "main", "image": "registry.k8s.io/pause:3.10"}
    if container_claims:
        container["resources"] = {"claims": container_claims}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"containers": [container], "resourceClaims": claims}}


def listed_shapes() -> list[Shape]:
    shapes: list[Shape] = []

    def add(label: str, manifest: dict) -> None:
        shapes.append(Shape(label, manifest))

    # -- the stack's own shapes (gpu-fabric render --stack dra-efa): valid
    requests, aligned = pair()
    add("stack 1gpu template", template("stack-1gpu", requests, [aligned]))
    eight_requests, eight_constraints = [], []
    for index in range(8):
        more, bound = pair(index)
        eight_requests += more
        eight_constraints.append(bound)
    add("stack 8gpu template", template("stack-8gpu", eight_requests, eight_constraints))
    add("stack 1gpu claim", template("claim-1gpu", requests, [aligned], kind="ResourceClaim"))

    # -- issue 40's list
    for count in (0, -1):
        add(f"count {count}", template(f"count-{count + 1}", [request("gpu", exact(count=count))]))
    add("allocationMode all (lower case)", template("mode-all-lower", [request("gpu", exact(mode="all", count=None))]))
    add("allocationMode exactcount (lower case)", template("mode-exact-lower", [request("gpu", exact(mode="exactcount"))]))
    add("unqualified matchAttribute", template("unqualified", requests, [constraint(["gpu-0", "efa-0"], "pcieRoot")]))
    add("both exactly and firstAvailable", template("both", [request("gpu", exact(), [{"name": "a", **exact()}])]))
    add("neither exactly nor firstAvailable", template("neither", [request("gpu")]))
    add("no deviceClassName", template("no-class", [request("gpu", exact(device_class=None))]))
    add("no deviceClassName in a subrequest", template("no-class-sub", [request("gpu", first=[{"name": "a", **exact(None)}])]))
    add("constraint naming an unknown request", template("unknown-ref", requests, [constraint(["gpu-0", "nic-0"])]))
    add("constraint naming an unknown subrequest", template(
        "unknown-sub", [request("gpu", first=[{"name": "big", **exact()}])], [constraint(["gpu/small"])]))
    add("constraint naming a known subrequest", template(
        "known-sub", [request("gpu", first=[{"name": "big", **exact()}]), request("efa", exact(EFA_CLASS))],
        [constraint(["gpu/big", "efa"])]))
    add("constraint naming a subrequest of an exactly request", template(
        "sub-of-exact", requests, [constraint(["gpu-0/x", "efa-0"])]))
    add("v1beta1 aligning an NVIDIA GPU on numaNode", {
        "apiVersion": V1BETA1, "kind": "ResourceClaimTemplate",
        "metadata": {"name": "beta-numa", "namespace": NAMESPACE},
        "spec": {"spec": {"devices": {
            "requests": [{"name": "gpu", "deviceClassName": GPU_CLASS, "count": 1},
                         {"name": "efa", "deviceClassName": EFA_CLASS, "count": 2}],
            "constraints": [{"requests": ["gpu", "efa"], "matchAttribute": "resource.kubernetes.io/numaNode"}]}}}})
    add("v1beta1 aligned on pcieRoot", {
        "apiVersion": V1BETA1, "kind": "ResourceClaimTemplate",
        "metadata": {"name": "beta-pcie", "namespace": NAMESPACE},
        "spec": {"spec": {"devices": {
            "requests": [{"name": "gpu", "deviceClassName": GPU_CLASS},
                         {"name": "efa", "deviceClassName": EFA_CLASS, "allocationMode": "ExactCount", "count": 2}],
            "constraints": [{"requests": ["gpu", "efa"], "matchAttribute": PCIE_ROOT}]}}}})
    add("v1beta1 request with no deviceClassName", {
        "apiVersion": V1BETA1, "kind": "ResourceClaimTemplate",
        "metadata": {"name": "beta-no-class", "namespace": NAMESPACE},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "count": 1}]}}}})
    add("v1beta1 request with count 0", {
        "apiVersion": V1BETA1, "kind": "ResourceClaimTemplate",
        "metadata": {"name": "beta-count-0", "namespace": NAMESPACE},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "deviceClassName": GPU_CLASS, "count": 0}]}}}})

    # -- the edges of validation.go beside the listed cases
    add("allocationMode All", template("mode-all", [request("gpu", exact(mode="All", count=None))]))
    add("allocationMode All with a count", template("mode-all-count", [request("gpu", exact(mode="All", count=2))]))
    add("allocationMode absent, count 3", template("mode-absent", [request("gpu", exact(mode=None, count=3))]))
    add("request without a name", template("no-name", [request(None, exact())]))
    add("request name not a DNS label", template("bad-name", [request("GPU_0", exact())]))
    add("two requests of one name", template("dup-name", [request("gpu", exact()), request("gpu", exact(EFA_CLASS))]))
    add("deviceClassName not a DNS subdomain", template("bad-class", [request("gpu", exact("GPU_Class"))]))
    add("constraint without matchAttribute", template("no-attribute", requests, [constraint(["gpu-0", "efa-0"], None)]))
    add("constraint naming no request", template("all-requests", requests, [constraint(None)]))
    add("constraint naming a request twice", template("dup-ref", requests, [constraint(["gpu-0", "gpu-0"])]))
    add("matchAttribute with an upper-case domain", template("upper-domain", requests, [constraint(None, "Resource.k8s.io/pcieRoot")]))
    add("matchAttribute with a hyphenated name", template("hyphen-id", requests, [constraint(None, "resource.kubernetes.io/pcie-root")]))
    add("matchAttribute with an empty domain", template("empty-domain", requests, [constraint(None, "/pcieRoot")]))
    add("matchAttribute name over 32 characters", template("long-id", requests, [constraint(None, "dra.net/" + "a" * 33)]))
    add("matchAttribute with two slashes", template("two-slashes", requests, [constraint(None, "a.b/c/d")]))
    add("distinctAttribute instead of matchAttribute", template("distinct", requests, [
        {"requests": ["gpu-0", "efa-0"], "distinctAttribute": PCIE_ROOT}]))
    add("firstAvailable with two alternatives", template("first-two", [request("gpu", first=[
        {"name": "eight", **exact(count=8)}, {"name": "one", **exact()}])]))
    add("firstAvailable alternatives of one name", template("first-dup", [request("gpu", first=[
        {"name": "a", **exact(count=8)}, {"name": "a", **exact()}])]))
    add("firstAvailable alternative without a name", template("first-no-name", [request("gpu", first=[exact()])]))
    add("firstAvailable alternative with count 0", template("first-count-0", [request("gpu", first=[{"name": "a", **exact(count=0)}])]))
    add("33 requests", template("too-many", [request(f"r{i}", exact()) for i in range(33)]))
    add("32 requests", template("just-enough", [request(f"r{i}", exact()) for i in range(32)]))
    add("9 firstAvailable alternatives", template("first-nine", [request("gpu", first=[
        {"name": f"a{i}", **exact()} for i in range(9)])]))
    add("selector with a CEL expression", template("cel", [request("gpu", exact(selectors=[
        {"cel": {"expression": 'device.driver == "gpu.nvidia.com"'}}]))]))
    add("selector without cel", template("no-cel", [request("gpu", exact(selectors=[{}]))]))

    # -- pods' resourceClaims (core validation)
    claim = {"name": "gpu", "resourceClaimTemplateName": STACK_TEMPLATE}
    add("pod with the stack's template", pod("pod-ok", [claim], [{"name": "gpu"}]))
    add("pod claim with two sources", pod("pod-two", [{**claim, "resourceClaimName": "shared"}], [{"name": "gpu"}]))
    add("pod claim with no source", pod("pod-none", [{"name": "gpu"}], [{"name": "gpu"}]))
    add("pod claim with no name", pod("pod-unnamed", [{"resourceClaimTemplateName": STACK_TEMPLATE}], []))
    add("pod claim name not a DNS label", pod("pod-bad-name", [{**claim, "name": "GPU"}], [{"name": "GPU"}]))
    add("two pod claims of one name", pod("pod-dup", [claim, {"name": "gpu", "resourceClaimName": "shared"}],
                                          [{"name": "gpu"}]))
    add("container claim naming no pod claim", pod("pod-dangling", [claim], [{"name": "nic"}]))
    add("container claim naming a claim twice", pod("pod-twice", [claim], [{"name": "gpu"}, {"name": "gpu"}]))
    add("container claim without a name", pod("pod-claim-unnamed", [claim], [{}]))
    add("pod claim unused by any container", pod("pod-unused", [claim], []))
    add("pod claim naming a resourceClaimName", pod("pod-claim-name", [{"name": "gpu", "resourceClaimName": "shared"}],
                                                    [{"name": "gpu"}]))
    add("pod claim template name not a DNS subdomain", pod(
        "pod-bad-template", [{"name": "gpu", "resourceClaimTemplateName": "Bad_Template"}], [{"name": "gpu"}]))
    return shapes


# -- the seeded generator ------------------------------------------------------------------------------

# Valid values first and most often (weights below), so that both verdicts come up often.
_NAMES = ["gpu", "efa", "gpu-1", "nic", "GPU", "", None]
_CLASSES = [GPU_CLASS, EFA_CLASS, None, "", "Bad_Class"]
_MODES = ["ExactCount", None, "All", "all", "exactCount"]
_COUNTS = [1, 2, None, 0, -3]
_ATTRIBUTES = [PCIE_ROOT, "dra.net/numaNode", "gpu.nvidia.com/uuid", "pcieRoot", None, "bad domain/x"]


def _pick(rng: random.Random, values: list, valid: int) -> Any:
    """One of ``values``, the first ``valid`` of them 24 times as likely as each of the rest."""
    return rng.choices(values, weights=[24 if i < valid else 1 for i in range(len(values))])[0]


def _random_ask(rng: random.Random) -> dict:
    mode = _pick(rng, _MODES, 2)
    count = None if mode == "All" and rng.random() < 0.8 else _pick(rng, _COUNTS, 4)
    return exact(_pick(rng, _CLASSES, 2), mode, count)


def _random_request(rng: random.Random, name: Optional[str]) -> dict:
    form = _pick(rng, ["exactly", "first", "both", "neither"], 2)
    exactly = _random_ask(rng) if form in ("exactly", "both") else None
    first = None
    if form in ("first", "both"):
        first = [{**({} if sub is None else {"name": sub}), **_random_ask(rng)}
                 for sub in rng.sample(["a", "b", "c", None], rng.randint(1, 3))]
    return request(name, exactly, first)


def generated_shapes(seed: int = 40, count: int = 80) -> list[Shape]:
    """``count`` ResourceClaimTemplates combining the field values above at random (``seed`` fixes them)."""
    rng = random.Random(seed)
    shapes = []
    for index in range(count):
        names: list = rng.sample(_NAMES[:4], rng.randint(1, 3))
        if rng.random() < 0.2:  # a name the API refuses, or one named twice
            names[rng.randrange(len(names))] = rng.choice(_NAMES[4:] + names)
        requests = [_random_request(rng, name) for name in names]
        constraints = None
        if rng.random() < 0.6:
            known = [name for name in names if name]
            pool = known + known + ["nic-9", "gpu/a", "efa/b"]
            refs = rng.sample(pool, rng.randint(0, min(2, len(pool))))
            constraints = [constraint(refs or None, _pick(rng, _ATTRIBUTES, 3))]
        shapes.append(Shape(f"generated #{index}", template(f"gen-{index}", copy.deepcopy(requests), constraints)))
    return shapes
