"""Stack files are read as the engine would pass them: JSON values only, every problem with its place."""

import pytest

from gpu_fabric.config.stack_file import StackFileError, near_miss, parse_yaml, read_stack_file


def read(tmp_path, data):
    path = tmp_path / "Pulumi.x.yaml"
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return read_stack_file(path, "gpu-fabric")


def refusal(tmp_path, data) -> str:
    with pytest.raises(StackFileError) as caught:
        read(tmp_path, data)
    assert caught.value.path.endswith("Pulumi.x.yaml")
    return str(caught.value)


def test_small_anchors_and_merge_keys_are_fine(tmp_path):
    text = ("config:\n  gpu-fabric:pools:\n    - &base {name: a, fabric: none, acceleratorsPerNode: 0, nodeCount: 1}\n"
            "    - <<: *base\n      name: b\n  aws:region: us-east-1\n")
    config = read(tmp_path, text)
    assert [pool["name"] for pool in config["gpu-fabric:pools"]] == ["a", "b"]
    assert config["gpu-fabric:pools"][1]["nodeCount"] == 1 and config["aws:region"] == "us-east-1"


def test_byte_order_mark_and_empty_files_are_fine(tmp_path):
    assert read(tmp_path, b"\xef\xbb\xbfconfig:\n  gpu-fabric:queueOwner: gpustack\n") == {"gpu-fabric:queueOwner": "gpustack"}
    assert read(tmp_path, "") == {}
    assert read(tmp_path, "encryptionsalt: abc\n") == {}


def test_duplicate_key_names_both_lines(tmp_path):
    message = refusal(tmp_path, "config:\n  gpu-fabric:queueOwner: gpustack\n  gpu-fabric:queueOwner: standalone\n")
    assert "line 3: key 'gpu-fabric:queueOwner' appears more than once" in message and "first on line 2" in message


def test_syntax_error_names_line_and_column(tmp_path):
    assert "not valid YAML: line 3, column 1" in refusal(tmp_path, "config:\n  a: [1\n")


def test_not_utf8_names_the_offset(tmp_path):
    assert "not UTF-8 text: byte 0xff at offset 8" in refusal(tmp_path, b"config: \xff\n")


def test_non_json_values_are_named_by_path(tmp_path):
    message = refusal(tmp_path, "config:\n  gpu-fabric:pools:\n    - since: 2024-01-02\n      blob: !!binary aGk=\n")
    assert "config.gpu-fabric:pools[0].since: a date" in message
    assert "config.gpu-fabric:pools[0].blob: binary data is not a JSON value" in message


def test_several_documents_are_refused(tmp_path):
    assert "2 YAML documents" in refusal(tmp_path, "config: {}\n---\nconfig: {}\n")


def test_recursive_alias_is_refused():
    with pytest.raises(ValueError, match="alias"):
        parse_yaml("a: &a [*a]\n")


@pytest.mark.parametrize("namespace", ["gpu_fabric", "GPU-Fabric", "gpufabric", "gpu-fabrik", "gpu-fabrics"])
def test_near_misses(namespace):
    assert near_miss(namespace, "gpu-fabric")


@pytest.mark.parametrize("namespace", ["gpu-fabric", "aws", "kubernetes", "pulumi", "gpustack"])
def test_other_namespaces_are_not_near_misses(namespace):
    assert not near_miss(namespace, "gpu-fabric")


def test_devices_and_oversized_input_are_refused_without_reading_them_whole(tmp_path):
    import os

    from gpu_fabric.config.stack_file import read_input

    if os.path.exists("/dev/zero"):
        with pytest.raises(ValueError, match="not a regular file"):
            read_input("/dev/zero")
    big = tmp_path / "big.yaml"
    big.write_bytes(b"a: 1\n" * 100)
    with pytest.raises(ValueError, match="larger than"):
        read_input(big, limit=50)
    assert read_input(big, limit=500) == b"a: 1\n" * 100
