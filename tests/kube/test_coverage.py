"""Coverage: scheduling of DaemonSets on pools, and pools left without their fabric resource."""

from __future__ import annotations

import pytest

from gpu_fabric.kube.device_plugins import efa_device_plugin_daemonset, gpustack_device_manager_daemonsets
from gpu_fabric.kube.coverage import (
    CoverageGap,
    PoolPlacement,
    advertised_resources,
    daemonset_schedules_on,
    efa_plugins_on_pools_without_efa,
    uncovered_pools,
)
from gpu_fabric.config.taints import normalize_effect
from gpu_fabric.kube.scheduling import tolerates

EFA_LABELS = {"vpc.amazonaws.com/efa.present": "true", "node.kubernetes.io/instance-type": "p5.48xlarge"}
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "true", "effect": "NO_SCHEDULE"}


def daemonset(pod_spec=None, annotations=None, image="registry.example/anything:v1", args=()):
    """A minimal DaemonSet manifest with the given pod spec fields."""
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "ds", "namespace": "ns", **({"annotations": annotations} if annotations else {})},
        "spec": {
            "selector": {"matchLabels": {"a": "b"}},
            "template": {
                "metadata": {"labels": {"a": "b"}},
                "spec": {"containers": [{"name": "c", "image": image, "args": list(args)}], **(pod_spec or {})},
            },
        },
    }


def with_affinity(*terms):
    return daemonset(
        {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}}
    )


def term(*expressions):
    return {"matchExpressions": list(expressions)}


# --- nodeSelector -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("labels", "schedules", "reason_part"),
    [
        ({"zone": "a", "other": "x"}, True, ""),
        ({}, False, "no label zone"),
        ({"zone": "b"}, False, "carry zone=b"),
    ],
)
def test_node_selector(labels, schedules, reason_part):
    ok, reason = daemonset_schedules_on(daemonset({"nodeSelector": {"zone": "a"}}), labels)
    assert ok is schedules
    assert reason_part in reason


# --- node affinity, every operator --------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "labels", "schedules"),
    [
        ({"key": "k", "operator": "In", "values": ["a", "b"]}, {"k": "b"}, True),
        ({"key": "k", "operator": "In", "values": ["a", "b"]}, {"k": "c"}, False),
        ({"key": "k", "operator": "In", "values": ["a"]}, {}, False),
        ({"key": "k", "operator": "NotIn", "values": ["a"]}, {"k": "b"}, True),
        ({"key": "k", "operator": "NotIn", "values": ["a"]}, {"k": "a"}, False),
        ({"key": "k", "operator": "NotIn", "values": ["a"]}, {}, True),
        ({"key": "k", "operator": "Exists"}, {"k": ""}, True),
        ({"key": "k", "operator": "Exists"}, {}, False),
        ({"key": "k", "operator": "DoesNotExist"}, {}, True),
        ({"key": "k", "operator": "DoesNotExist"}, {"k": "x"}, False),
        ({"key": "k", "operator": "Gt", "values": ["4"]}, {"k": "8"}, True),
        ({"key": "k", "operator": "Gt", "values": ["8"]}, {"k": "8"}, False),
        ({"key": "k", "operator": "Gt", "values": ["4"]}, {"k": "eight"}, False),
        ({"key": "k", "operator": "Gt", "values": ["4"]}, {}, False),
        ({"key": "k", "operator": "Lt", "values": ["4"]}, {"k": "2"}, True),
        ({"key": "k", "operator": "Lt", "values": ["4"]}, {"k": "4"}, False),
        ({"key": "k", "operator": "Lt", "values": ["x"]}, {"k": "2"}, False),
        ({"key": "k", "operator": "Near", "values": ["x"]}, {"k": "x"}, False),
    ],
)
def test_node_affinity_operators(expression, labels, schedules):
    ok, reason = daemonset_schedules_on(with_affinity(term(expression)), labels)
    assert ok is schedules
    assert bool(reason) is not schedules


def test_expressions_within_a_term_are_anded():
    ds = with_affinity(term({"key": "a", "operator": "Exists"}, {"key": "b", "operator": "Exists"}))
    assert daemonset_schedules_on(ds, {"a": "1", "b": "1"})[0]
    assert not daemonset_schedules_on(ds, {"a": "1"})[0]


def test_terms_are_ored_and_every_failure_is_reported():
    ds = with_affinity(term({"key": "a", "operator": "Exists"}), term({"key": "b", "operator": "Exists"}))
    assert daemonset_schedules_on(ds, {"b": "1"})[0]
    ok, reason = daemonset_schedules_on(ds, {"c": "1"})
    assert not ok
    assert "no label a" in reason and "no label b" in reason


@pytest.mark.parametrize(
    "terms",
    [
        (),
        ({},),
        ({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]},),
    ],
)
def test_terms_that_match_no_pool_node(terms):
    assert not daemonset_schedules_on(with_affinity(*terms), {"a": "1"})[0]


def test_preferred_affinity_does_not_restrict():
    preferred = {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": term({"key": "x", "operator": "Exists"})}]}
    assert daemonset_schedules_on(daemonset({"affinity": {"nodeAffinity": preferred}}), {})[0]


def test_node_selector_and_affinity_both_apply():
    ds = with_affinity(term({"key": "eks.amazonaws.com/compute-type", "operator": "NotIn", "values": ["auto"]}))
    ds["spec"]["template"]["spec"]["nodeSelector"] = {"vpc.amazonaws.com/efa.present": "true"}
    assert daemonset_schedules_on(ds, EFA_LABELS)[0]
    assert not daemonset_schedules_on(ds, {**EFA_LABELS, "eks.amazonaws.com/compute-type": "auto"})[0]
    assert not daemonset_schedules_on(ds, {"node.kubernetes.io/instance-type": "p5.48xlarge"})[0]


# --- taints and tolerations ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("toleration", "taint", "expected"),
    [
        ({"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}, {"key": "k", "value": "v", "effect": "NoSchedule"}, True),
        ({"key": "k", "value": "v", "effect": "NoSchedule"}, {"key": "k", "value": "v", "effect": "NoSchedule"}, True),
        ({"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}, {"key": "k", "value": "w", "effect": "NoSchedule"}, False),
        ({"key": "k", "operator": "Exists", "effect": "NoSchedule"}, {"key": "k", "value": "w", "effect": "NoSchedule"}, True),
        ({"key": "k", "operator": "Exists", "effect": "NoSchedule"}, {"key": "j", "effect": "NoSchedule"}, False),
        ({"key": "k", "operator": "Exists", "effect": "NoExecute"}, {"key": "k", "effect": "NoSchedule"}, False),
        ({"key": "k", "operator": "Exists"}, {"key": "k", "effect": "NoExecute"}, True),
        ({"operator": "Exists"}, {"key": "anything", "value": "x", "effect": "NoExecute"}, True),
        ({"operator": "Exists", "effect": "NoSchedule"}, {"key": "anything", "effect": "NoExecute"}, False),
        ({"key": "k", "operator": "Equal", "effect": "NoSchedule"}, {"key": "k", "effect": "NoSchedule"}, True),
        ({"key": "k", "operator": "Exists", "effect": "NoSchedule"}, {"key": "k", "effect": "NO_SCHEDULE"}, True),
        ({"key": "k", "operator": "Exists", "effect": "NO_EXECUTE"}, {"key": "k", "effect": "NoExecute"}, True),
        ({"key": "k", "operator": "Exists", "effect": "NoSchedule"}, {"key": "k", "effect": "PREFER_NO_SCHEDULE"}, False),
    ],
)
def test_toleration_matrix(toleration, taint, expected):
    assert tolerates(toleration, taint) is expected


@pytest.mark.parametrize(
    ("spelling", "kubernetes"),
    [
        ("NO_SCHEDULE", "NoSchedule"),
        ("NO_EXECUTE", "NoExecute"),
        ("PREFER_NO_SCHEDULE", "PreferNoSchedule"),
        ("NoSchedule", "NoSchedule"),
        ("NoExecute", "NoExecute"),
        ("PreferNoSchedule", "PreferNoSchedule"),
    ],
)
def test_effect_spellings(spelling, kubernetes):
    assert normalize_effect(spelling) == kubernetes


def test_unknown_effect_is_refused():
    with pytest.raises(ValueError, match="NO_SCHEDULE"):
        normalize_effect("noschedule")


@pytest.mark.parametrize(
    ("taint", "schedules"),
    [
        ({"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}, False),
        ({"key": "nvidia.com/gpu", "value": "true", "effect": "NO_EXECUTE"}, False),
        ({"key": "nvidia.com/gpu", "value": "true", "effect": "PREFER_NO_SCHEDULE"}, True),
        ({"key": "nvidia.com/gpu", "value": "true", "effect": "PreferNoSchedule"}, True),
    ],
)
def test_only_blocking_effects_keep_pods_off(taint, schedules):
    ok, reason = daemonset_schedules_on(daemonset(), {}, [taint])
    assert ok is schedules
    if not schedules:
        assert reason.startswith("taint nvidia.com/gpu=true:")


def test_daemonset_controller_tolerations_are_implied():
    node_condition_taints = [
        {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"},
        {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"},
    ]
    assert daemonset_schedules_on(daemonset(), {}, node_condition_taints)[0]
    network = [{"key": "node.kubernetes.io/network-unavailable", "effect": "NoSchedule"}]
    assert not daemonset_schedules_on(daemonset(), {}, network)[0]
    assert daemonset_schedules_on(daemonset({"hostNetwork": True}), {}, network)[0]


def test_pod_template_tolerations_apply():
    ds = daemonset({"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]})
    assert daemonset_schedules_on(ds, {}, [GPU_TAINT])[0]


# --- advertised resources -----------------------------------------------------------------------


def test_advertised_resources_by_image_annotation_or_neither():
    assert advertised_resources(daemonset(image="602401143452.dkr.ecr.us-east-1.amazonaws.com/eks/aws-efa-k8s-device-plugin:v0.5.6")) == {
        "vpc.amazonaws.com/efa"
    }
    assert advertised_resources(daemonset(annotations={"gpu-fabric.io/advertises": "vpc.amazonaws.com/efa, example.com/x"})) == {
        "vpc.amazonaws.com/efa",
        "example.com/x",
    }
    assert advertised_resources(daemonset(image="gpustack/gpustack-operator:v0.9.0", args=["gpustack-operator", "worker"])) == set()
    assert advertised_resources(daemonset()) == set()


# --- pools --------------------------------------------------------------------------------------


def efa_pool(name="p5", labels=EFA_LABELS, taints=(GPU_TAINT,)):
    return PoolPlacement(name=name, fabric="efa", labels=labels, taints=taints)


def rdma_pool(name="h100-ib", manufacturer="nvidia", labels=None, taints=(GPU_TAINT,)):
    return PoolPlacement(name=name, fabric="rdma", labels=labels or {}, taints=taints, manufacturer=manufacturer)


def test_pool_placement_validates():
    with pytest.raises(ValueError, match="fabric"):
        PoolPlacement(name="x", fabric="infiniband", labels={}, taints=())
    with pytest.raises(ValueError, match="manufacturer"):
        PoolPlacement(name="x", fabric="rdma", labels={}, taints=(), manufacturer="intel")
    with pytest.raises(ValueError, match="effect"):
        PoolPlacement(name="x", fabric="efa", labels={}, taints=({"key": "k", "effect": "Never"},))


def test_manufacturer_implies_the_nfd_label():
    assert rdma_pool().node_labels() == {"feature.node.kubernetes.io/pci-10de.present": "true"}
    explicit = rdma_pool(labels={"feature.node.kubernetes.io/pci-10de.present": "false"})
    assert explicit.node_labels()["feature.node.kubernetes.io/pci-10de.present"] == "false"


def test_efa_pool_covered_by_builder_output_with_tolerations():
    plugin = efa_device_plugin_daemonset(tolerations_from_taints=[GPU_TAINT])
    assert uncovered_pools([efa_pool()], [plugin]) == []


def test_efa_pool_with_untolerated_taint_is_a_gap():
    (gap,) = uncovered_pools([efa_pool()], [efa_device_plugin_daemonset()])
    assert gap.pool == "p5" and gap.fabric == "efa"
    assert "taint nvidia.com/gpu=true:NoSchedule is not tolerated" in gap.reason
    assert "kube-system/aws-efa-k8s-device-plugin" in gap.reason


def test_efa_pool_without_the_label_is_a_gap():
    plugin = efa_device_plugin_daemonset(tolerations_from_taints=[GPU_TAINT])
    (gap,) = uncovered_pools([efa_pool(labels={"node.kubernetes.io/instance-type": "p5.48xlarge"})], [plugin])
    assert "vpc.amazonaws.com/efa.present" in gap.reason


def test_efa_pool_without_any_plugin_is_a_gap():
    assert uncovered_pools([efa_pool()], []) == [
        CoverageGap("p5", "efa", "no DaemonSet advertises vpc.amazonaws.com/efa (AWS EFA device plugin)")
    ]


def test_chart_style_instance_type_allowlist_misses_new_types():
    # The chart's shape: an instance-type allowlist plus the Auto Mode exclusion.
    chart_style = with_affinity(
        term(
            {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["p5.48xlarge"]},
            {"key": "eks.amazonaws.com/compute-type", "operator": "NotIn", "values": ["auto"]},
        )
    )
    chart_style["spec"]["template"]["spec"]["containers"][0]["image"] = "x/eks/aws-efa-k8s-device-plugin:v0.5.20"
    chart_style["spec"]["template"]["spec"]["tolerations"] = [{"operator": "Exists"}]
    p5 = efa_pool()
    p6 = efa_pool("p6", labels={**EFA_LABELS, "node.kubernetes.io/instance-type": "p6-b300.48xlarge"})
    (gap,) = uncovered_pools([p5, p6], [chart_style])
    assert gap.pool == "p6" and "p6-b300.48xlarge" in gap.reason


def test_any_covering_daemonset_suffices():
    untolerating = efa_device_plugin_daemonset(name="strict")
    tolerating = efa_device_plugin_daemonset(name="lenient", tolerations_from_taints=[GPU_TAINT])
    assert uncovered_pools([efa_pool()], [untolerating, tolerating]) == []


def test_rdma_pool_covered_by_device_manager_of_its_manufacturer():
    managers = gpustack_device_manager_daemonsets(manufacturers=["nvidia"], tolerations_from_taints=[GPU_TAINT])
    assert uncovered_pools([rdma_pool()], managers) == []
    (gap,) = uncovered_pools([rdma_pool(manufacturer="amd")], managers)
    assert "pci-10de" in gap.reason


def test_rdma_pool_of_unknown_manufacturer_without_nfd_labels_is_a_gap():
    managers = gpustack_device_manager_daemonsets(manufacturers=["nvidia"], tolerations_from_taints=[GPU_TAINT])
    (gap,) = uncovered_pools([rdma_pool(manufacturer=None)], managers)
    assert "feature.node.kubernetes.io/pci-10de.present" in gap.reason


def test_rdma_pool_needs_a_device_manager_not_the_efa_plugin():
    (gap,) = uncovered_pools([rdma_pool(taints=())], [efa_device_plugin_daemonset()])
    assert "device.gpustack.ai/rdma" in gap.reason


def test_external_device_manager():
    assert uncovered_pools([rdma_pool()], [], external_rdma_plugin=True) == []
    assert uncovered_pools([rdma_pool()], [], external_rdma_plugin=True, manufacturers_served={"nvidia"}) == []
    (gap,) = uncovered_pools([rdma_pool(manufacturer="amd")], [], external_rdma_plugin=True, manufacturers_served={"nvidia"})
    assert "'amd'" in gap.reason
    # The flag concerns RDMA only: EFA pools still need the EFA plugin.
    assert [gap.pool for gap in uncovered_pools([efa_pool()], [], external_rdma_plugin=True)] == ["p5"]


def test_pools_without_fabric_need_nothing():
    assert uncovered_pools([PoolPlacement(name="cpu", fabric="none", labels={}, taints=())], []) == []


def test_daemonsets_from_pulumi_inputs_and_builders_look_the_same():
    # Coverage reads only metadata and spec, so any object carrying them (manifest or resource
    # props) is judged the same way.
    plugin = efa_device_plugin_daemonset(tolerations_from_taints=[GPU_TAINT])
    props = {"metadata": plugin["metadata"], "spec": plugin["spec"]}
    assert uncovered_pools([efa_pool()], [props]) == []


def test_efa_plugin_on_pools_without_efa():
    label_selected = efa_device_plugin_daemonset(tolerations_from_taints=[GPU_TAINT])
    tolerate_all = daemonset({"tolerations": [{"operator": "Exists"}]}, image="x/aws-efa-k8s-device-plugin:v0.5.20")
    cpu = PoolPlacement(name="cpu", fabric="none", labels={"node.kubernetes.io/instance-type": "m7i.large"}, taints=())
    assert efa_plugins_on_pools_without_efa([efa_pool(), cpu], [label_selected]) == []
    (finding,) = efa_plugins_on_pools_without_efa([efa_pool(), cpu], [tolerate_all])
    assert finding.pool == "cpu" and "ns/ds" in finding.reason
