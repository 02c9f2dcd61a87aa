"""Kueue builders: names, coverage of fabric keys, explicit namespaces, and conformance to Kueue's CRDs."""

import copy

import jsonschema
import pytest

from gpu_fabric.kube.kueue import (
    cluster_queue,
    kueue_manifests,
    local_queue,
    pool_kueue_manifests,
    pool_quotas,
    resource_flavor,
)
from gpu_fabric.validation.configuration import load_config
from gpu_fabric.config.pool import PoolSpec
from support.kueue_schema import require_schemas, validate_kueue_object
from support.stack_configs import seed_values

RDMA_POOL = PoolSpec.model_validate({
    "name": "gpustack--nvidia-a10g-linux-amd64", "fabric": "rdma", "acceleratorsPerNode": 4,
    "interfacesPerNode": 2, "partitionedInterfacesPerNode": 8, "nodeCount": 3,
    "nodeLabels": {"feature.gpustack.ai/rdma.capable": "true"},
    "taints": [{"key": "nvidia.com/gpu", "effect": "NO_SCHEDULE"}, {"key": "dedicated", "value": "llm", "effect": "NoExecute"}],
})
EFA_POOL = PoolSpec.model_validate({
    "name": "gpustack--nvidia-h100-linux-amd64", "fabric": "efa", "acceleratorsPerNode": 8,
    "interfacesPerNode": 32, "nodeCount": 2, "cpuPerNode": 192, "memoryPerNode": "2Ti",
})
CPU_POOL = PoolSpec.model_validate({"name": "gpustack--generic-linux-amd64", "fabric": "none",
                                    "acceleratorsPerNode": 0, "nodeCount": 4, "cpuPerNode": 64})


@pytest.mark.parametrize("pool, expected", [
    (RDMA_POOL, [("nvidia.com/gpu", 12), ("device.gpustack.ai/rdma", 6), ("device.gpustack.ai/rdma.shared", 384),
                 ("device.gpustack.ai/rdma.partitioned", 24)]),
    (EFA_POOL, [("nvidia.com/gpu", 16), ("vpc.amazonaws.com/efa", 64), ("cpu", 384), ("memory", "4Ti")]),
    (CPU_POOL, [("cpu", 256)]),
])
def test_quotas_cover_accelerators_and_every_fabric_key(pool, expected):
    assert pool_quotas(pool) == expected


def test_cluster_queue_meters_what_it_covers():
    queue = cluster_queue(RDMA_POOL, ["team-b", "team-a", "team-a"])
    group = queue["spec"]["resourceGroups"][0]
    assert group["coveredResources"] == [name for name, _ in pool_quotas(RDMA_POOL)]
    assert [r["name"] for r in group["flavors"][0]["resources"]] == group["coveredResources"]
    assert group["flavors"][0]["name"] == RDMA_POOL.name


@pytest.mark.parametrize("pool", [RDMA_POOL, EFA_POOL, CPU_POOL])
def test_quotas_are_written_as_the_canonical_strings_kueue_stores_back(pool):
    # Kueue's ClusterQueue webhook rewrites nominalQuota (a resource.Quantity) as its canonical string;
    # a number here was a change at the first preview after `pulumi up` against a real Kueue.
    resources = cluster_queue(pool, ["team-a"])["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    assert [(r["name"], r["nominalQuota"]) for r in resources] == [(name, str(quota)) for name, quota in pool_quotas(pool)]
    assert all(isinstance(r["nominalQuota"], str) for r in resources)


def test_namespace_selector_is_explicit_and_never_null():
    selector = cluster_queue(RDMA_POOL, ["team-b", "team-a"])["spec"]["namespaceSelector"]
    assert selector == {"matchExpressions": [
        {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["team-a", "team-b"]}]}


def test_flavor_carries_labels_and_tolerations():
    flavor = resource_flavor(RDMA_POOL)
    assert flavor["spec"]["nodeLabels"] == {"feature.gpustack.ai/rdma.capable": "true"}
    assert flavor["spec"]["tolerations"] == [
        {"key": "dedicated", "operator": "Equal", "value": "llm", "effect": "NoExecute"},
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
    ]


def test_local_queue_matches_the_operator_entrance():
    queue = local_queue("gpustack--nvidia-a10g-linux-amd64", "team-a")
    assert queue["metadata"] == {"name": "gpustack-fnv64-c4680bb149644f1c", "namespace": "team-a",
                                 "annotations": {"schedule.gpustack.ai/queue": "gpustack--nvidia-a10g-linux-amd64"}}
    assert queue["spec"] == {"clusterQueue": "gpustack--nvidia-a10g-linux-amd64"}


def test_owner_decides_which_objects_exist():
    assert [m["kind"] for m in pool_kueue_manifests(RDMA_POOL, ["a", "b"], "gpustack")] == ["LocalQueue", "LocalQueue"]
    assert [m["kind"] for m in pool_kueue_manifests(RDMA_POOL, ["a", "b"], "standalone")] == \
        ["ResourceFlavor", "ClusterQueue", "LocalQueue", "LocalQueue"]


def test_seed_configuration_gives_team_a_its_entrance_queue():
    manifests = kueue_manifests(load_config(seed_values()))
    assert [(m["kind"], m["metadata"]["namespace"], m["metadata"]["name"], m["spec"]["clusterQueue"]) for m in manifests] == [
        ("LocalQueue", "team-a", "gpustack-fnv64-c4680bb149644f1c", "gpustack--nvidia-a10g-linux-amd64")]


@pytest.mark.parametrize("pool", [RDMA_POOL, EFA_POOL, CPU_POOL], ids=lambda p: p.name)
def test_every_rendered_kueue_object_conforms_to_kueue_v0_19_2(pool):
    require_schemas()
    for manifest in pool_kueue_manifests(pool, ["team-a", "team-b"], "standalone"):
        validate_kueue_object(manifest)


def test_schema_check_catches_a_misspelled_field():
    require_schemas()
    queue = copy.deepcopy(cluster_queue(RDMA_POOL, ["team-a"]))
    queue["spec"]["cohort"] = "v1beta1-spelling"
    with pytest.raises(jsonschema.ValidationError):
        validate_kueue_object(queue)
