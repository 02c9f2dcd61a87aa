"""The JSON Schema and the loader give one answer on every field's spelling.

Walks the example stacks: every field inside a key's value, respelt with its Python name
(``nodeCount`` -> ``node_count``), is accepted by both; written in both spellings at once, refused by both.
"""

from __future__ import annotations

import copy
from typing import Any, Iterator

import typing

import pytest
import yaml
from jsonschema import Draft202012Validator
from pydantic import BaseModel

from gpu_fabric.config.base import ConfigError
from gpu_fabric.config.fabric import CONFIG_NAMESPACE, FabricConfig
from gpu_fabric.config.json_schema import stack_file_schema
from gpu_fabric.validation.configuration import load_config

from support.stack_configs import PROJECT_DIR



def _models(root: type[BaseModel]) -> list[type[BaseModel]]:
    found: list[type[BaseModel]] = []
    pending: list[Any] = [root]
    while pending:
        node = pending.pop()
        if isinstance(node, type) and issubclass(node, BaseModel):
            if node not in found:
                found.append(node)
                pending.extend(field.annotation for field in node.model_fields.values())
        else:
            pending.extend(typing.get_args(node))
    return found


PYTHON_NAMES = {field.alias: name for model in _models(FabricConfig)
                for name, field in model.model_fields.items() if field.alias and field.alias != name}


@pytest.fixture(scope="module")
def validator() -> Draft202012Validator:
    return Draft202012Validator(stack_file_schema())


def _fields(node: Any, path: tuple = ()) -> Iterator[tuple]:
    """The path of every mapping key below the configuration's keys that has a distinct Python name."""
    if isinstance(node, dict):
        for key, value in node.items():
            if len(path) > 1 and key in PYTHON_NAMES:
                yield (*path, key)
            yield from _fields(value, (*path, key))
    elif isinstance(node, list):
        for index, item in enumerate(node):
            yield from _fields(item, (*path, index))


def _variant(document: dict, path: tuple, keep_alias: bool) -> dict:
    changed = copy.deepcopy(document)
    parent = changed
    for part in path[:-1]:
        parent = parent[part]
    alias = path[-1]
    value = parent[alias] if keep_alias else parent.pop(alias)
    parent[PYTHON_NAMES[alias]] = value
    return changed


def _loader_accepts(document: dict) -> bool:
    prefix = f"{CONFIG_NAMESPACE}:"
    values = {key[len(prefix):]: value for key, value in document["config"].items() if key.startswith(prefix)}
    try:
        load_config(values, aws_region=document["config"].get("aws:region"))
    except ConfigError:
        return False
    return True


def _cases() -> list[tuple[str, tuple]]:
    cases = []
    for stack in ("aws-efa", "karpenter-efa", "seed-rdma"):
        document = yaml.safe_load((PROJECT_DIR / "stacks" / f"Pulumi.{stack}.yaml").read_text())
        seen = set()
        for path in _fields(document):
            # One case per field name and key: enough to walk every alias the stacks use, quickly.
            if (path[1], path[-1]) not in seen:
                seen.add((path[1], path[-1]))
                cases.append((stack, path))
    return cases


CASES = _cases()


def test_the_walk_covers_many_fields():
    assert len({path[-1] for _, path in CASES}) >= 10


@pytest.mark.parametrize("stack, path", CASES, ids=[f"{s}:{'.'.join(map(str, p[1:]))}" for s, p in CASES])
def test_schema_and_loader_agree_on_a_fields_python_name(validator, stack, path):
    document = yaml.safe_load((PROJECT_DIR / "stacks" / f"Pulumi.{stack}.yaml").read_text())
    assert _loader_accepts(document) and not list(validator.iter_errors(document))
    respelt = _variant(document, path, keep_alias=False)
    assert _loader_accepts(respelt), "the loader refuses the Python name"
    assert not [e.message for e in validator.iter_errors(respelt)], "the schema refuses the Python name"
    both = _variant(document, path, keep_alias=True)
    assert not _loader_accepts(both)
    assert list(validator.iter_errors(both)), "the schema accepts both spellings at once"


# Issue 40, round 5: the loader took what the schema refuses (pydantic's lax mode); strict is the stance, and it
# is what `pulumi config set --path` writes (integers as numbers, true/false as booleans).
def _set(document: dict, path: tuple, value: Any) -> dict:
    changed = copy.deepcopy(document)
    parent = changed["config"]
    for part in path[:-1]:
        parent = parent.setdefault(part, {}) if isinstance(part, str) and not isinstance(parent, list) else parent[part]
    parent[path[-1]] = value
    return changed


STRICT_CASES = [
    ("seed-rdma", ("gpu-fabric:pools", 0, "nodeCount"), "2"),
    ("dra-efa", ("gpu-fabric:pools", 0, "gpusPerClaim"), ["1", "8"]),
    ("dra-efa", ("gpu-fabric:cluster", "eksAutoMode"), "no"),
    ("dra-efa", ("gpu-fabric:cluster", "eksAutoMode"), 0),
    ("karpenter-efa", ("gpu-fabric:pools", 0, "aws", "karpenter", "associatePublicIpAddress"), "false"),
    ("seed-rdma", ("gpu-fabric:pools", 0, "nodeCount"), True),
]


@pytest.mark.parametrize("stack, path, value", STRICT_CASES)
def test_a_value_of_the_wrong_json_type_is_refused_by_both(stack, path, value, validator):
    document = yaml.safe_load((PROJECT_DIR / "stacks" / f"Pulumi.{stack}.yaml").read_text())
    assert _loader_accepts(document) and not list(validator.iter_errors(document))
    changed = _set(document, path, value)
    assert list(validator.iter_errors(changed)), "the schema refuses it"
    prefix = f"{CONFIG_NAMESPACE}:"
    values = {key[len(prefix):]: item for key, item in changed["config"].items() if key.startswith(prefix)}
    with pytest.raises(ConfigError) as raised:
        load_config(values, aws_region=changed["config"].get("aws:region"))
    assert path[-1] in str(raised.value) and "expected" in str(raised.value)


@pytest.mark.parametrize("stack, path, value", [
    ("seed-rdma", ("gpu-fabric:pools", 0, "nodeCount"), 3),
    ("dra-efa", ("gpu-fabric:cluster", "eksAutoMode"), False),
    ("karpenter-efa", ("gpu-fabric:pools", 0, "aws", "karpenter", "associatePublicIpAddress"), False),
])
def test_what_pulumi_config_set_path_writes_is_taken_by_both(stack, path, value, validator):
    changed = _set(yaml.safe_load((PROJECT_DIR / "stacks" / f"Pulumi.{stack}.yaml").read_text()), path, value)
    assert _loader_accepts(changed) and not list(validator.iter_errors(changed))
