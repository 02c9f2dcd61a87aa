"""The API server's validation as the floor of ``dra-claim-shape`` (issue 40).

Each verdict below is kube-apiserver's, as tests/e2e/test_claim_shapes_differential.py records it by server-side
dry run (Kubernetes 1.37): every shape it refuses is a ``dra-claim-shape`` finding at the field it names
(k8s.io/kubernetes pkg/apis/resource/validation/validation.go, pkg/apis/core/validation/validation.go), and every
shape it accepts reads without one.
"""

from __future__ import annotations

import copy

import pytest
from support.dra_objects import EFA_CLASS, GPU_CLASS, PCIE_ROOT, aligned_spec, claim_template, pod

from gpu_fabric.config.shapes import UNKNOWN
from gpu_fabric.findings import FieldPath
from gpu_fabric.kube.dra_claims import DRA_CLAIM_SHAPE, read_claim, read_claim_template, read_pod
from gpu_fabric.kube.dra_rules import DRA_NUMA_CONSTRAINT_NVIDIA, DraContext, dra_findings


def shape_paths(manifest):
    read = read_claim_template if manifest["kind"] == "ResourceClaimTemplate" else read_claim
    _, found = read(manifest)
    assert all(f.rule_id == DRA_CLAIM_SHAPE.id for f in found)
    return [str(f.path) for f in found]


def edited(edit):
    template = claim_template("t", aligned_spec())
    edit(template["spec"]["spec"]["devices"])
    return template


def ask(devices, index=0):
    return devices["requests"][index]["exactly"]


REQ = "spec.spec.devices.requests[0]"
CONSTRAINT = "spec.spec.devices.constraints[0]"

REFUSED = [
    ("count -1", lambda d: ask(d).update(count=-1), f"{REQ}.exactly.count"),
    ("allocationMode all", lambda d: ask(d).update(allocationMode="all"), f"{REQ}.exactly.allocationMode"),
    ("All with a count", lambda d: ask(d).update(allocationMode="All", count=2), f"{REQ}.exactly.count"),
    ("unqualified matchAttribute", lambda d: d["constraints"][0].update(matchAttribute="pcieRoot"),
     f"{CONSTRAINT}.matchAttribute"),
    ("upper-case domain", lambda d: d["constraints"][0].update(matchAttribute="Resource.kubernetes.io/pcieRoot"),
     f"{CONSTRAINT}.matchAttribute"),
    ("name not a C identifier", lambda d: d["constraints"][0].update(matchAttribute="dra.net/pcie-root"),
     f"{CONSTRAINT}.matchAttribute"),
    ("no matchAttribute", lambda d: d["constraints"][0].pop("matchAttribute"), f"{CONSTRAINT}.matchAttribute"),
    ("both exactly and firstAvailable",
     lambda d: d["requests"][0].update(firstAvailable=[{"name": "a", "deviceClassName": GPU_CLASS}]), REQ),
    ("neither exactly nor firstAvailable", lambda d: d["requests"][0].pop("exactly"), REQ),
    ("no deviceClassName", lambda d: ask(d).pop("deviceClassName"), f"{REQ}.exactly.deviceClassName"),
    ("unknown request", lambda d: d["constraints"][0].update(requests=["gpu", "nic"]), f"{CONSTRAINT}.requests[1]"),
    ("subrequest of an exactly request", lambda d: d["constraints"][0].update(requests=["gpu/a"]),
     f"{CONSTRAINT}.requests[0]"),
    ("request named twice", lambda d: d["requests"][1].update(name="gpu"), "spec.spec.devices.requests[1].name"),
    ("request name not a label", lambda d: d["requests"][0].update(name="GPU"), f"{REQ}.name"),
    ("selector without cel", lambda d: ask(d).update(selectors=[{}]), f"{REQ}.exactly.selectors[0].cel"),
    ("33 requests", lambda d: d.update(requests=[
        {"name": f"r{i}", "exactly": {"deviceClassName": GPU_CLASS}} for i in range(33)], constraints=[]),
     "spec.spec.devices.requests"),
]


@pytest.mark.parametrize("case, edit, path", REFUSED, ids=[case[0] for case in REFUSED])
def test_a_shape_the_api_server_refuses_is_a_shape_finding_at_its_field(case, edit, path):
    assert path in shape_paths(edited(edit))


ACCEPTED = [
    ("count 0 (defaulted to 1)", lambda d: ask(d).update(count=0)),
    ("allocationMode absent", lambda d: ask(d).pop("allocationMode", None)),
    ("All without a count", lambda d: (ask(d).update(allocationMode="All"), ask(d).pop("count"))),
    ("constraint naming no request", lambda d: d["constraints"][0].pop("requests")),
    ("distinctAttribute", lambda d: d["constraints"][0].update(
        distinctAttribute=d["constraints"][0].pop("matchAttribute"))),
    ("request/subrequest of a firstAvailable request", lambda d: (
        d["requests"][0].pop("exactly"),
        d["requests"][0].update(firstAvailable=[{"name": "one", "deviceClassName": GPU_CLASS}]),
        d["constraints"][0].update(requests=["gpu/one", "efa"]))),
]


@pytest.mark.parametrize("case, edit", ACCEPTED, ids=[case[0] for case in ACCEPTED])
def test_a_shape_the_api_server_accepts_reads_without_a_finding(case, edit):
    assert shape_paths(edited(edit)) == []


def test_count_zero_reads_as_the_default_one():
    spec, _ = read_claim_template(edited(lambda d: ask(d).update(count=0)))
    assert spec.requests[0].exactly.count == 1


def test_a_v1beta1_template_is_read_with_its_request_level_fields():
    """v1beta1 keeps ``exactly``'s fields on the request (validation.go ResourceNormalizationRules): such a
    template is well formed, and a numaNode constraint over its NVIDIA GPU is refused like a v1 one's."""
    beta = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": "beta", "namespace": "team-a"},
            "spec": {"spec": {"devices": {
                "requests": [{"name": "gpu", "deviceClassName": GPU_CLASS, "count": 1},
                             {"name": "efa", "deviceClassName": EFA_CLASS, "count": 2}],
                "constraints": [{"requests": ["gpu", "efa"], "matchAttribute": "resource.kubernetes.io/numaNode"}]}}}}
    spec, found = read_claim_template(beta)
    assert found == [] and [r.exactly.device_class for r in spec.requests] == [GPU_CLASS, EFA_CLASS]
    assert [f.rule_id for f in dra_findings([beta], DraContext())] == [DRA_NUMA_CONSTRAINT_NVIDIA.id]
    no_class = copy.deepcopy(beta)
    no_class["spec"]["spec"]["devices"]["requests"][0].pop("deviceClassName")
    assert "spec.spec.devices.requests[0].deviceClassName" in shape_paths(no_class)
    aligned = copy.deepcopy(beta)
    aligned["spec"]["spec"]["devices"]["constraints"][0]["matchAttribute"] = PCIE_ROOT
    assert dra_findings([aligned], DraContext()) == []


def pod_paths(spec):
    _, found = read_pod(spec, FieldPath.of("spec"), None)
    return [str(f.path) for f in found]


def test_pod_claims_the_api_server_refuses():
    base = pod()["spec"]
    claim = base["resourceClaims"][0]
    cases = {
        "spec.resourceClaims[0]": [{**claim, "resourceClaimName": "shared"}],  # two sources
        "spec.resourceClaims[0].name": [{"resourceClaimTemplateName": "gpu-efa"}],  # no name
        "spec.resourceClaims[1].name": [claim, {"name": claim["name"], "resourceClaimName": "shared"}],
    }
    for path, claims in cases.items():
        assert path in pod_paths({**base, "resourceClaims": claims}), path
    assert "spec.resourceClaims[0]" in pod_paths({**base, "resourceClaims": [{"name": claim["name"]}]})  # no source
    dangling = copy.deepcopy(base)
    dangling["containers"][0]["resources"]["claims"] = [{"name": "nic"}]
    assert pod_paths(dangling) == ["spec.containers[0].resources.claims[0].name"]
    twice = copy.deepcopy(base)
    twice["containers"][0]["resources"]["claims"] *= 2
    assert pod_paths(twice) == ["spec.containers[0].resources.claims[1].name"]
    assert pod_paths(base) == []


def test_unknown_names_decide_no_reference():
    template = edited(lambda d: d["requests"][0].update(name=UNKNOWN))
    assert shape_paths(template) == []
    spec = copy.deepcopy(pod()["spec"])
    spec["resourceClaims"][0]["name"] = UNKNOWN
    assert pod_paths(spec) == []
