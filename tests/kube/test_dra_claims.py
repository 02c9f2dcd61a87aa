"""DRA claims, templates and pods read through their shape; each DRA rule over them."""

from __future__ import annotations

from support.dra_objects import (
    EFA_CLASS,
    GPU_CLASS,
    PCIE_ROOT,
    aligned_spec,
    claim_spec,
    claim_template,
    device_class,
    job,
    pod,
    request,
)

from gpu_fabric.findings import FieldPath, ObjectRef
from gpu_fabric.config.shapes import UNKNOWN
from gpu_fabric.kube.dra_claims import (
    DRA_CLAIM_SHAPE,
    DeviceKinds,
    device_class_driver,
    read_claim,
    read_claim_template,
    read_pod,
)
from gpu_fabric.kube.dra_rules import (
    DRA_CLAIM_TEMPLATE_RENDERED,
    DRA_DRANET_HOST_NETWORK,
    DRA_KUEUE_DEVICE_CLASS_MAPPED,
    DRA_KUEUE_REQUEST_MODE,
    DRA_NUMA_CONSTRAINT_NVIDIA,
    DRA_PCIE_ROOT_CAPACITY,
    DraContext,
    dra_findings,
    kueue_device_class_findings,
    kueue_request_mode_findings,
    numa_constraint_findings,
    pcie_root_capacity_findings,
)

P5EN_ROOTS = {GPU_CLASS: 1, EFA_CLASS: 2}  # p5en.48xlarge: 8 GPUs, 16 EFAs, one GPU and two EFAs per root


def ids(findings):
    return [(f.rule.id, str(f.path)) for f in findings]


def spec_of(spec):
    parsed, problems = read_claim_template(claim_template("t", spec))
    assert problems == []
    return parsed


# -- reading ---------------------------------------------------------------------------------------------


def test_a_template_reads_requests_defaults_and_constraints():
    spec = spec_of(claim_spec([request("gpu", GPU_CLASS, None), request("efa", EFA_CLASS, 2)],
                              [{"requests": ["gpu", "efa"], "matchAttribute": PCIE_ROOT}]))
    gpu, efa = spec.requests
    assert (gpu.exactly.count, gpu.exactly.allocation_mode, efa.exactly.count) == (1, "ExactCount", 2)
    assert str(gpu.path) == "spec.spec.devices.requests[0]"
    (constraint,) = spec.constraints
    assert constraint.requests == ("gpu", "efa") and constraint.match_attribute == PCIE_ROOT
    assert [r.name for r in spec.constrained(constraint)] == ["gpu", "efa"]
    assert spec.subject == ObjectRef("ResourceClaimTemplate", "t", "team-a")


def test_a_constraint_naming_no_request_covers_them_all_and_first_available_lists_its_classes():
    spec = spec_of(claim_spec([{"name": "nic", "firstAvailable": [
        {"name": "efa", "deviceClassName": EFA_CLASS, "count": 2},
        {"name": "roce", "deviceClassName": "roce.networking.k8s.aws"}]}, request("gpu", GPU_CLASS)],
        [{"matchAttribute": PCIE_ROOT}]))
    assert [r.name for r in spec.constrained(spec.constraints[0])] == ["nic", "gpu"]
    nic = spec.requests[0]
    assert nic.device_classes == {EFA_CLASS, "roce.networking.k8s.aws"}
    assert [a.name for a in nic.asks] == ["nic/efa", "nic/roce"] and nic.asks[1].count == 1


def test_wrong_types_are_findings_naming_the_field_not_crashes():
    template = claim_template("t", {})
    template["spec"]["spec"] = {"devices": {"requests": [
        "gpu", {"name": 3, "exactly": {"deviceClassName": ["x"], "count": "two"}},
        {"name": "efa", "exactly": {"deviceClassName": EFA_CLASS, "selectors": {"cel": "x"}}}],
        "constraints": {"requests": []}}}
    _, problems = read_claim_template(template)
    assert {(f.rule, str(f.path)) for f in problems} == {
        (DRA_CLAIM_SHAPE, "spec.spec.devices.requests[0]"),
        (DRA_CLAIM_SHAPE, "spec.spec.devices.requests[1].name"),
        (DRA_CLAIM_SHAPE, "spec.spec.devices.requests[1].exactly.deviceClassName"),
        (DRA_CLAIM_SHAPE, "spec.spec.devices.requests[1].exactly.count"),
        (DRA_CLAIM_SHAPE, "spec.spec.devices.requests[2].exactly.selectors"),
        (DRA_CLAIM_SHAPE, "spec.spec.devices.constraints"),
    }
    assert all(f.exit_code == 2 and f.subject == ObjectRef("ResourceClaimTemplate", "t", "team-a") for f in problems)
    assert "must be a whole number, not a string" in next(f.message for f in problems if f.path.segments[-1] == "count")


def test_a_claim_spec_that_is_a_string_is_one_finding():
    spec, problems = read_claim({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                                 "metadata": {"name": "c", "namespace": "a"}, "spec": "devices"})
    assert spec.requests == () and ids(problems) == [("dra-claim-shape", "spec")]


def test_unknown_values_read_as_absent_without_findings():
    template = claim_template("t", {"devices": {"requests": [{"name": "gpu", "exactly": UNKNOWN}], "constraints": UNKNOWN}})
    spec, problems = read_claim_template(template)
    assert problems == [] and spec.requests[0].exactly.device_class is None and spec.constraints == ()


def test_a_pod_reads_its_claims_host_network_and_resources():
    manifest = pod(host_network=True, limits={"nvidia.com/gpu": 1})
    view, problems = read_pod(manifest["spec"], FieldPath.of("spec"), None)
    assert problems == [] and view.host_network and view.template_names == {"gpu-efa"}
    assert [(str(p), r) for p, r in view.resources] == [('spec.containers[0].resources.limits["nvidia.com/gpu"]', "nvidia.com/gpu")]
    view, problems = read_pod({"hostNetwork": "yes", "resourceClaims": [{"name": "c", "resourceClaimTemplateName": 7}]},
                              FieldPath.of("spec"), None)
    assert ids(problems) == [("dra-claim-shape", "spec.hostNetwork"),
                             ("dra-claim-shape", "spec.resourceClaims[0].resourceClaimTemplateName")]


def test_a_device_class_pinning_dra_net_is_dranet():
    custom = device_class("efa-p5en", 'device.driver == "dra.net" && device.attributes["dra.net"].rdma == true')
    assert device_class_driver(custom) == "dra.net"
    assert device_class_driver(device_class("odd", "'dra.net' == device.driver")) == "dra.net"
    assert device_class_driver(device_class("any", "device.attributes['x'].y")) is None
    kinds = DeviceKinds().with_classes([custom])
    assert "efa-p5en" in kinds.dranet and "efa-p5en" in kinds.nics


# -- hostNetwork with a DRANET claim --------------------------------------------------------------------


def test_host_network_pod_with_a_dranet_claim_is_refused_at_host_network():
    found = dra_findings([claim_template("gpu-efa", aligned_spec()), job(host_network=True)], DraContext())
    assert ids(found) == [("dra-dranet-host-network", "spec.template.spec.hostNetwork")]
    assert found[0].subject == ObjectRef("Job", "train", "team-a")
    assert "can not claim host devices" in found[0].message and found[0].rule is DRA_DRANET_HOST_NETWORK


def test_host_network_is_fine_with_a_gpu_only_claim_and_without_host_network():
    gpu_only = claim_template("gpu-only", claim_spec([request("gpu", GPU_CLASS)]))
    assert dra_findings([gpu_only, pod(templates=("gpu-only",), host_network=True)], DraContext()) == []
    assert dra_findings([claim_template("gpu-efa", aligned_spec()), pod()], DraContext()) == []


def test_a_custom_device_class_of_the_dra_net_driver_counts_as_dranet():
    custom = device_class("fast-nic", 'device.driver == "dra.net"')
    template = claim_template("t", claim_spec([request("nic", "fast-nic")]))
    found = dra_findings([custom, template, pod(templates=("t",), host_network=True)], DraContext())
    assert ids(found) == [("dra-dranet-host-network", "spec.hostNetwork")]


# -- numaNode across an NVIDIA GPU and a NIC ------------------------------------------------------------


def test_numa_constraint_across_nvidia_gpu_and_nic_is_refused():
    for attribute in ("resource.kubernetes.io/numaNode", "dra.net/numaNode"):
        found = numa_constraint_findings(spec_of(aligned_spec(attribute=attribute)), DraContext())
        assert ids(found) == [(DRA_NUMA_CONSTRAINT_NVIDIA.id, "spec.spec.devices.constraints[0].matchAttribute")]
        assert "NIC request efa" in found[0].message and PCIE_ROOT in found[0].message


def test_numa_constraint_over_nics_only_and_pcie_root_pass():
    nics = claim_spec([request("a", EFA_CLASS), request("b", EFA_CLASS)], [{"matchAttribute": "dra.net/numaNode"}])
    assert numa_constraint_findings(spec_of(nics), DraContext()) == []
    assert numa_constraint_findings(spec_of(aligned_spec()), DraContext()) == []


# -- pcieRoot capacity ------------------------------------------------------------------------------------


def test_pcie_root_constraint_within_one_root_passes_on_p5en():
    assert pcie_root_capacity_findings(spec_of(aligned_spec(1, 2)), DraContext(per_root_counts=P5EN_ROOTS)) == []


def test_pcie_root_constraint_over_eight_gpus_is_refused_on_p5en():
    found = pcie_root_capacity_findings(spec_of(aligned_spec(8, 16)), DraContext(per_root_counts=P5EN_ROOTS))
    assert ids(found) == [(DRA_PCIE_ROOT_CAPACITY.id, "spec.spec.devices.constraints[0]")] * 2
    assert "16 efa.networking.k8s.aws devices on one PCIe root, which holds 2" in found[0].message
    assert "8 gpu.nvidia.com devices" in found[1].message


def test_pcie_root_capacity_is_undecided_without_counts_or_with_all():
    assert pcie_root_capacity_findings(spec_of(aligned_spec(8, 16)), DraContext()) == []
    every = claim_spec([request("gpu", GPU_CLASS), request("efa", EFA_CLASS, None, allocationMode="All")],
                       [{"matchAttribute": PCIE_ROOT}])
    assert pcie_root_capacity_findings(spec_of(every), DraContext(per_root_counts=P5EN_ROOTS)) == []


def test_pcie_root_capacity_counts_the_smallest_first_available_alternative():
    spec = claim_spec([request("gpu", GPU_CLASS), {"name": "nic", "firstAvailable": [
        {"name": "four", "deviceClassName": EFA_CLASS, "count": 4}, {"name": "two", "deviceClassName": EFA_CLASS, "count": 2}]}],
        [{"matchAttribute": PCIE_ROOT}])
    assert pcie_root_capacity_findings(spec_of(spec), DraContext(per_root_counts=P5EN_ROOTS)) == []
    spec["devices"]["requests"][1]["firstAvailable"][1]["count"] = 3
    assert len(pcie_root_capacity_findings(spec_of(spec), DraContext(per_root_counts=P5EN_ROOTS))) == 1


# -- Kueue -----------------------------------------------------------------------------------------------


def test_first_available_and_all_are_refused_under_kueue_only():
    spec = spec_of(claim_spec([
        {"name": "nic", "firstAvailable": [{"name": "efa", "deviceClassName": EFA_CLASS}]},
        request("all-efa", EFA_CLASS, None, allocationMode="All")]))
    found = kueue_request_mode_findings(spec, DraContext(kueue_managed=True))
    assert ids(found) == [(DRA_KUEUE_REQUEST_MODE.id, "spec.spec.devices.requests[0].firstAvailable"),
                          (DRA_KUEUE_REQUEST_MODE.id, "spec.spec.devices.requests[1].exactly.allocationMode")]
    assert all(f.exit_code == 2 for f in found)
    assert kueue_request_mode_findings(spec, DraContext()) == []
    gated = kueue_request_mode_findings(spec, DraContext(kueue_managed=True, kueue_prioritized_list=True))
    assert ids(gated) == [(DRA_KUEUE_REQUEST_MODE.id, "spec.spec.devices.requests[1].exactly.allocationMode")]


def test_an_unmapped_device_class_under_kueue_is_refused():
    spec = spec_of(aligned_spec())
    found = kueue_device_class_findings(spec, DraContext(kueue_managed=True, mapped_device_classes=frozenset({GPU_CLASS})))
    assert ids(found) == [(DRA_KUEUE_DEVICE_CLASS_MAPPED.id, "spec.spec.devices.requests[1].exactly.deviceClassName")]
    assert "efa.networking.k8s.aws" in found[0].message and "mapped: gpu.nvidia.com" in found[0].message
    mapped = frozenset({GPU_CLASS, EFA_CLASS})
    assert kueue_device_class_findings(spec, DraContext(kueue_managed=True, mapped_device_classes=mapped)) == []
    assert kueue_device_class_findings(spec, DraContext(kueue_managed=True)) == []  # mappings unknown: undecided


# -- template references and device-plugin keys --------------------------------------------------------


def test_a_claim_naming_a_template_the_stack_does_not_render_is_refused():
    rendered = frozenset({("team-a", "gpu-efa")})
    found = dra_findings([pod(templates=("gpu-efa", "gpu-efa-x"))], DraContext(rendered_templates=rendered))
    assert ids(found) == [(DRA_CLAIM_TEMPLATE_RENDERED.id, "spec.resourceClaims[1].resourceClaimTemplateName")]
    assert "gpu-efa-x" in found[0].message and "rendered: gpu-efa" in found[0].message
    elsewhere = dra_findings([pod(namespace="team-b")], DraContext(rendered_templates=rendered))
    assert ids(elsewhere) == [(DRA_CLAIM_TEMPLATE_RENDERED.id, "spec.resourceClaims[0].resourceClaimTemplateName")]
    assert dra_findings([pod(templates=("nope",))], DraContext()) == []  # not known: undecided


def test_dra_findings_reads_shapes_of_claims_templates_and_pods():
    template = claim_template("t", {})
    template["spec"] = ["not", "a", "mapping"]
    manifests = [template, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"resourceClaims": "x"}}]
    assert ids(dra_findings(manifests, DraContext())) == [("dra-claim-shape", "spec"), ("dra-claim-shape", "spec.resourceClaims")]


def test_a_host_network_pod_naming_a_dranet_resource_claim_is_refused_too():
    named = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "shared-efa", "namespace": "team-a"},
             "spec": aligned_spec()}
    manifest = pod(templates=(), host_network=True)
    manifest["spec"]["resourceClaims"] = [{"name": "efa", "resourceClaimName": "shared-efa"}]
    found = dra_findings([named, manifest], DraContext())
    assert ids(found) == [("dra-dranet-host-network", "spec.hostNetwork")]
    assert "(ResourceClaim shared-efa)" in found[0].message
    other_namespace = dict(named, metadata={"name": "shared-efa", "namespace": "team-b"})
    assert dra_findings([other_namespace, manifest], DraContext()) == []


def test_a_constraint_whose_requests_are_unknown_at_preview_decides_nothing():
    from gpu_fabric.config.shapes import UNKNOWN

    spec = aligned_spec(gpus=2, efas=4)
    spec["devices"]["constraints"][0]["requests"] = UNKNOWN
    context = DraContext(per_root_counts={"gpu.nvidia.com": 1, "efa.networking.k8s.aws": 2})
    assert dra_findings([claim_template("t", spec)], context) == []
    spec["devices"]["constraints"][0]["requests"] = ["gpu", UNKNOWN]
    assert dra_findings([claim_template("t", spec)], context) == []
