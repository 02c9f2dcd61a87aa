"""LocalQueue naming: the operator's FNV-1a 64 entrance queue names."""

import re

from hypothesis import given, strategies as st

from gpu_fabric.gpustack.naming import fnv1a_64, local_queue_name


def test_seed_pool_vector():
    assert local_queue_name("gpustack--nvidia-a10g-linux-amd64") == "gpustack-fnv64-c4680bb149644f1c"


def test_gpustack_runtime_vector():
    # Pinned by gpustack/runtime's own test suite (tests/gpustack_runtime/deployer/, for
    # gpustack_runtime/deployer/kuberentes.py ``_apply_instance_type_admission``).
    assert local_queue_name("gpustack--nvidia-geforce-rtx-4090-linux-amd64") == "gpustack-fnv64-1a7145d0a5248d55"


def test_fnv1a_64_reference_values():
    # Published FNV-1a 64 test vectors.
    assert fnv1a_64(b"") == 0xCBF29CE484222325
    assert fnv1a_64(b"a") == 0xAF63DC4C8601EC8C
    assert fnv1a_64(b"foobar") == 0x85944171F73967E8


@given(st.text(min_size=1, max_size=253))
def test_names_are_31_lowercase_hex_characters_and_stable(cluster_queue):
    name = local_queue_name(cluster_queue)
    assert len(name) == 31
    assert re.fullmatch(r"gpustack-fnv64-[0-9a-f]{16}", name)
    assert local_queue_name(cluster_queue) == name


def test_empty_name_is_refused():
    try:
        local_queue_name("")
    except ValueError as error:
        assert "cluster_queue" in str(error)
    else:
        raise AssertionError("an empty ClusterQueue name must be refused")
