"""``gpu-fabric schema``: the JSON Schema of the stack configuration.

The schema is generated from the models ``load_config`` validates with. These tests hold it to
that: every example stack validates, every field is described, the schema never refuses what
``load_config`` accepts, and it refuses every row of the bad-input table whose only problems are of
a kind a JSON Schema expresses (unknown keys, types, enum values, bounds, required fields).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator
from pydantic import BaseModel, Field, ValidationError

from support.bad_input import run_cli
from support.stack_configs import PROJECT_DIR

from gpu_fabric.config import json_schema
from gpu_fabric.config.base import ConfigError
from gpu_fabric.config.fabric import CONFIG_NAMESPACE, FabricConfig, config_keys
from gpu_fabric.config.json_schema import DRAFT, configuration_schema, field_descriptions, stack_file_schema
from gpu_fabric.config.reference_doc import reference_markdown
from gpu_fabric.config.stack_file import StackFileError, read_stack_file
from gpu_fabric.validation.configuration import load_config

# pydantic error types whose rule the generated schema states (type, enum, bounds, required, unknown key).
SCHEMA_EXPRESSIBLE = {
    "extra_forbidden", "literal_error", "enum", "missing", "model_type", "model_attributes_type", "dict_type",
    "list_type", "string_type", "int_type", "int_from_float", "float_type", "bool_type", "too_short", "too_long",
    "string_too_short", "string_too_long", "greater_than", "greater_than_equal", "less_than", "less_than_equal",
    "string_pattern_mismatch",
}

EXAMPLE_STACKS = sorted((PROJECT_DIR / "stacks").glob("Pulumi.*.yaml")) + sorted((PROJECT_DIR / "examples").rglob("Pulumi.*.yaml"))


@pytest.fixture(scope="module")
def validator() -> Draft202012Validator:
    schema = stack_file_schema()
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def _errors(validator: Draft202012Validator, document: Any) -> list[str]:
    return [f"{'/'.join(map(str, error.absolute_path))}: {error.message}" for error in validator.iter_errors(document)]


def test_schema_is_draft_2020_12_and_the_cli_prints_it():
    schema = stack_file_schema()
    assert schema["$schema"] == DRAFT == "https://json-schema.org/draft/2020-12/schema"
    outcome = run_cli("schema")
    assert outcome.code == 0, outcome.describe()
    assert json.loads(outcome.out) == schema
    values = json.loads(run_cli("schema", "--config-only").out)
    assert values == configuration_schema() and set(values["properties"]) == set(config_keys())


@pytest.mark.parametrize("path", EXAMPLE_STACKS, ids=lambda p: p.name)
def test_every_example_stack_validates(validator, path):
    assert _errors(validator, yaml.safe_load(path.read_text())) == []


def _models(model: type[BaseModel], seen: dict[str, type[BaseModel]]) -> dict[str, type[BaseModel]]:
    import typing

    if model.__name__ in seen:
        return seen
    seen[model.__name__] = model

    def nested(annotation: Any):
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            yield annotation
        for argument in typing.get_args(annotation):
            yield from nested(argument)

    for field in model.model_fields.values():
        for inner in nested(field.annotation):
            _models(inner, seen)
    return seen


def test_every_field_has_a_description():
    undocumented = [f"{name}.{field}" for name, model in _models(FabricConfig, {}).items()
                    for field in model.model_fields if not field_descriptions(model).get(field, "").strip()]
    assert undocumented == []
    # ... and it reaches the schema: every property of every object carries it.
    schema = configuration_schema()
    objects = [schema, *schema["$defs"].values()]
    assert all(node.get("description") for model in objects for node in model.get("properties", {}).values())


def test_attribute_docstrings_do_not_change_validation():
    # The descriptions are the schema's alone: the strict rules still hold.
    with pytest.raises(ValidationError):
        FabricConfig.model_validate({"namespaces": ["a"], "pools": [], "queueOwner": "x"})
    assert FabricConfig.model_config.get("extra") == "forbid" and FabricConfig.model_config.get("frozen") is True


class _Documented(BaseModel):
    plain: int = 1
    """The plain one,
    on two lines."""
    explicit: int = Field(2, description="Said in Field.")
    """Not this one."""
    undocumented: int = 3
    later: int = 4
    """Documented after an undocumented field."""


class _Redeclared(_Documented):
    plain: int = 5
    later: int = 6
    """The subclass's own."""


def test_field_descriptions_follow_the_attribute_docstring_convention():
    assert field_descriptions(_Documented) == {
        "plain": "The plain one,\non two lines.", "explicit": "Said in Field.",
        "later": "Documented after an undocumented field."}
    # A field declared again without a docstring has none; one inherited keeps its class's.
    assert field_descriptions(_Redeclared) == {"explicit": "Said in Field.", "later": "The subclass's own."}
    properties = _Redeclared.model_json_schema(schema_generator=json_schema.DescribedFields)["properties"]
    assert properties["later"]["description"] == "The subclass's own." and "description" not in properties["plain"]


def _stack(**changes: Any) -> dict[str, Any]:
    document = yaml.safe_load((PROJECT_DIR / "stacks" / "Pulumi.aws-efa.yaml").read_text())
    for path, value in changes.items():
        node = document["config"]
        *parents, last = path.split("/")
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        node[last] = value
    return document


def test_misspelt_key_and_wrong_type_are_refused_at_their_path(validator):
    misspelt = _stack()
    misspelt["config"]["gpu-fabric:pools"][0]["nodeCont"] = 2
    assert any(e.startswith("config/gpu-fabric:pools/0:") and "nodeCont" in e for e in _errors(validator, misspelt))
    wrong_type = _stack(**{"gpu-fabric:pools/0/nodeCount": "two"})
    assert any(e.startswith("config/gpu-fabric:pools/0/nodeCount:") for e in _errors(validator, wrong_type))
    unknown_key = _stack(**{"gpu-fabric:pool": []})
    assert _errors(validator, unknown_key)
    no_namespace = _stack(**{"pools": []})
    assert _errors(validator, no_namespace)
    other_namespace = _stack(**{"kubernetes:context": "anything"})
    assert _errors(validator, other_namespace) == []


def test_secret_capable_keys_take_secure_strings_and_others_do_not(validator):
    secret_env = _stack()
    secret_env["config"]["gpu-fabric:modelDeployments"][0]["roles"][0]["env"] = [
        {"name": "HF_TOKEN", "value": {"secure": "v1:AAAA"}}]
    assert _errors(validator, secret_env) == []
    secret_namespace = _stack(**{"gpu-fabric:namespaces": [{"secure": "v1:AAAA"}]})
    assert _errors(validator, secret_namespace)


def _load_verdict(path: Path) -> tuple[bool, set[str], bool]:
    """(load_config refuses, pydantic's error types at field validation, an unknown top-level key)."""
    raw = read_stack_file(path, CONFIG_NAMESPACE)
    prefix = f"{CONFIG_NAMESPACE}:"
    values = {key[len(prefix):]: value for key, value in raw.items() if key.startswith(prefix)}
    unknown = any(key not in config_keys() for key in values)
    kinds: set[str] = set()
    try:
        FabricConfig.model_validate(values)
    except ValidationError as error:
        kinds = {item["type"] for item in error.errors()}
    try:
        if unknown:
            raise ConfigError([("key", "unknown configuration key")])
        load_config(values, aws_region=raw.get("aws:region"))
        refused = False
    except ConfigError:
        refused = True
    return refused, kinds, unknown


def test_schema_and_load_config_agree_on_the_bad_input_table(validator, tmp_path):
    from support.bad_input_cases import CASES

    decided_by_schema = []
    for case, (text, _) in sorted(CASES.items()):
        path = tmp_path / "Pulumi.x.yaml"
        path.write_bytes(text.encode() if isinstance(text, str) else text)
        try:
            refused, kinds, unknown = _load_verdict(path)
        except StackFileError:
            continue  # not a stack file Pulumi could read: refused before any schema applies
        schema_refuses = bool(_errors(validator, yaml.safe_load(path.read_text())))
        # Never stricter than the render: what the schema refuses, load_config refuses.
        assert refused or not schema_refuses, f"{case}: the schema refuses what load_config accepts"
        if unknown or (kinds and kinds <= SCHEMA_EXPRESSIBLE):
            decided_by_schema.append(case)
            assert schema_refuses, f"{case}: load_config refuses ({sorted(kinds)}), the schema accepts"
    # The table's type, enum, bound and unknown-key rows are among them (the assertion above ran on them).
    assert {"shapes/unknown-key-under-namespace", "shapes/queue-owner-a-number", "shapes/namespaces-a-string"} <= set(decided_by_schema)


def test_configuration_reference_is_current():
    doc = PROJECT_DIR / "docs" / "configuration.md"
    assert doc.read_text(encoding="utf-8") == reference_markdown(), \
        "docs/configuration.md is stale: run python scripts/generate_configuration_docs.py"


def test_reference_documents_every_object_and_field():
    text = reference_markdown()
    schema = configuration_schema()
    for name, model in schema["$defs"].items():
        assert f"\n## {model['title']}\n" in text, name
        for field, node in model.get("properties", {}).items():
            if node.get("deprecated"):  # a field's Python name, the same field as its camelCase one
                assert f"| `{field}` |" not in text, f"{name}.{field}"
                continue
            assert f"| `{field}` |" in text, f"{name}.{field}"
    assert all(f"`{CONFIG_NAMESPACE}:{key}`" in text for key in config_keys())
