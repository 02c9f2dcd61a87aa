"""The JSON Schema (draft 2020-12) of a stack file's ``gpu-fabric:`` configuration.

Generated from :class:`~gpu_fabric.config.fabric.FabricConfig`, the very model ``load_config``
validates with, so the schema cannot drift from the code: each field's description is its
attribute docstring (the string right below the field, read from the source here, when a schema is
made, and not each time the models are imported), its type, bounds, enum values and defaults are
pydantic's own schema of the field. ``gpu-fabric schema`` prints it;
``docs/configuration.md`` is generated from it (``scripts/generate_configuration_docs.py``).

What the schema decides is each value's shape: names, types, enum values, bounds, required
fields, unknown keys. What ``load_config`` decides beyond that -- syntax checked by validators
(DNS labels, quantities, instance type names), references between objects, capacities, the
operator's admission, EFA domains, the pack's mandatory policies -- a JSON Schema cannot say, so a
file the schema accepts may still be refused by ``gpu-fabric render`` (never the other way round
for a value written as its JSON type; pydantic also coerces ``"4"`` to ``4``, which the schema,
like an editor, does not).

Field names: the loader takes each field's camelCase alias and its Python (snake_case) name, because
the same models validate stack files (camelCase) and the components' TypedDict arguments
(snake_case). The schema gives the same answer: it takes both spellings (the Python one marked
``deprecated``, so editors steer to camelCase), refuses both at once as the loader does, and lets either
satisfy a required field. The configuration keys themselves (``gpu-fabric:modelDeployments``) are
camelCase only, in the stack program and the schema alike. tests/config/test_schema_loader_agreement.py
walks the example stacks and holds both to it.
"""

from __future__ import annotations

import ast
import copy
import gc
import inspect
import re
import sys
import typing
from functools import lru_cache
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

from gpu_fabric.config.fabric import CONFIG_NAMESPACE, SECRET_CAPABLE_KEYS, FabricConfig

DRAFT = "https://json-schema.org/draft/2020-12/schema"
SCHEMA_ID = "https://gpu-fabric.invalid/schemas/stack-file.json"
"""The schema's ``$id``: a name, not a download location (``.invalid`` is reserved, RFC 2606)."""

SECURE_VALUE = "SecureValue"

# The keys Pulumi itself writes at the top of a stack file (pulumi/pulumi
# sdk/go/common/workspace/project.go, ProjectStack): the schema leaves their content to Pulumi.
PULUMI_STACK_KEYS: dict[str, dict[str, Any]] = {
    "secretsprovider": {"type": "string", "description": "Pulumi's secrets provider of the stack."},
    "encryptedkey": {"type": "string", "description": "Pulumi's encrypted data key of the stack."},
    "encryptionsalt": {"type": "string", "description": "Pulumi's encryption salt of the stack."},
    "environment": {"description": "Pulumi ESC environments the stack imports."},
}


@lru_cache(maxsize=None)
def _module_tree(module_name: str) -> ast.Module | None:
    """The parsed source of a loaded module (``None`` when its source cannot be read).

    The collector is off while ``ast.parse`` runs: in Python 3.11 a finalizer that formats a traceback during
    the parse (an asyncio Future nobody retrieved) parses again and resets the ``ast`` module's shared
    recursion bookkeeping, failing this parse with "AST constructor recursion depth mismatch" (CPython gh-106905).
    """
    try:
        source = inspect.getsource(sys.modules[module_name])
    except (KeyError, OSError, TypeError):
        return None
    enabled = gc.isenabled()
    gc.disable()
    try:
        return ast.parse(source)
    finally:
        if enabled:
            gc.enable()


def _class_node(model: type) -> ast.ClassDef | None:
    """The ``class`` statement that defined ``model``, found by its qualified name in its module's source."""
    tree = _module_tree(model.__module__)
    body: list[ast.stmt] = tree.body if tree is not None else []
    node: ast.ClassDef | None = None
    for part in model.__qualname__.split("."):
        node = next((stmt for stmt in body if isinstance(stmt, ast.ClassDef) and stmt.name == part), None)
        if node is None:
            return None
        body = node.body
    return node


def _attribute_docstrings(model: type) -> dict[str, str]:
    """The attribute docstrings ``model``'s own class body writes: ``name: type`` followed by a string.

    The convention pydantic's ``use_attribute_docstrings`` reads (PEP 257's "attribute docstrings",
    the string statement right after the annotated assignment, cleaned with ``inspect.cleandoc``).
    The models do not set that option: it reads every model's source at import, which a render paid
    for nothing; only the schema and the configuration reference need the descriptions.
    """
    node = _class_node(model)
    if node is None:
        return {}
    docs: dict[str, str] = {}
    for statement, following in zip(node.body, node.body[1:]):
        if (isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)
                and isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant)
                and isinstance(following.value.value, str)):
            docs[statement.target.id] = inspect.cleandoc(following.value.value)
    return docs


def field_descriptions(model: type[BaseModel]) -> dict[str, str]:
    """Each field of ``model`` -> its description: ``Field(description=...)``, else its attribute docstring.

    An inherited field keeps the docstring of the class that declared it last (as pydantic copies an
    inherited field's description); a field a subclass declares again has the subclass's.
    """
    descriptions: dict[str, str] = {}
    for name, info in model.model_fields.items():
        if info.description is not None:
            descriptions[name] = info.description
            continue
        owner = next((cls for cls in model.__mro__ if name in cls.__dict__.get("__annotations__", {})), None)
        doc = _attribute_docstrings(owner).get(name) if owner is not None else None
        if doc is not None:
            descriptions[name] = doc
    return descriptions


class DescribedFields(GenerateJsonSchema):
    """pydantic's JSON Schema generator, each model field described by :func:`field_descriptions`.

    The description goes where pydantic puts a field's own (its ``pydantic_js_updates``, after any
    ``title``), so the schema is the one ``use_attribute_docstrings`` gave.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._models: list[type[BaseModel]] = []

    def model_schema(self, schema: core_schema.ModelSchema) -> JsonSchemaValue:
        self._models.append(schema["cls"])
        try:
            return super().model_schema(schema)
        finally:
            self._models.pop()

    def model_fields_schema(self, schema: core_schema.ModelFieldsSchema) -> JsonSchemaValue:
        if self._models:
            descriptions = field_descriptions(self._models[-1])
            fields = {name: _described(field, descriptions.get(name)) for name, field in schema["fields"].items()}
            schema = {**schema, "fields": fields}
        return super().model_fields_schema(schema)


def _described(field: core_schema.ModelField, description: str | None) -> core_schema.ModelField:
    metadata: dict[str, Any] = dict(field.get("metadata") or {})
    updates: dict[str, Any] = dict(metadata.get("pydantic_js_updates") or {})
    if description is None or "description" in updates:
        return field
    title = {"title": updates.pop("title")} if "title" in updates else {}
    metadata["pydantic_js_updates"] = {**title, "description": description, **updates}
    return {**field, "metadata": metadata}  # type: ignore[typeddict-item]


def _markdown_literals(text: str) -> str:
    """reStructuredText ``literal`` -> Markdown `literal` (editors render descriptions as Markdown)."""
    return re.sub(r"``([^`]+)``", r"`\1`", text)


def _clean(node: Any, *, keep_title: bool = False) -> Any:
    """Drop pydantic's generated field titles ("Queueowner"), keep model titles, convert markup."""
    if isinstance(node, list):
        return [_clean(item) for item in node]
    if not isinstance(node, dict):
        return node
    cleaned: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" and not keep_title:
            continue
        if key == "description" and isinstance(value, str):
            cleaned[key] = _markdown_literals(" ".join(value.split()))
        elif key == "$defs":
            cleaned[key] = {name: _clean(schema, keep_title=True) for name, schema in value.items()}
        elif key in ("default", "const", "enum", "examples"):
            cleaned[key] = value
        else:
            cleaned[key] = _clean(value)
    return cleaned


def _models(root: type[BaseModel]) -> dict[str, type[BaseModel]]:
    """Every model reachable from ``root``'s fields, by class name (pydantic's ``$defs`` key)."""
    found: dict[str, type[BaseModel]] = {}
    pending: list[Any] = [root]
    while pending:
        node = pending.pop()
        if isinstance(node, type) and issubclass(node, BaseModel):
            if node.__name__ in found:
                continue
            found[node.__name__] = node
            pending.extend(field.annotation for field in node.model_fields.values())
        else:
            pending.extend(typing.get_args(node))
    return found


def _python_names(model: dict[str, Any], cls: type[BaseModel]) -> None:
    """Let ``model`` (a ``$defs`` entry of ``cls``) take each field's Python name as well as its camelCase alias.

    The loader accepts both (``populate_by_name``: component arguments arrive as snake_case TypedDicts,
    stack files in camelCase), so the schema does too, or an editor would flag a file ``render`` takes.
    The Python name is marked ``deprecated`` (draft 2020-12 meta-data) so editors steer to the
    documented spelling. Both spellings at once are refused, as the loader refuses the second one
    (an unknown field); a required field is satisfied by either.
    """
    properties = model.get("properties")
    if not isinstance(properties, dict):
        return
    required = list(model.get("required", []))
    either: list[dict[str, Any]] = []
    for name, field in cls.model_fields.items():
        alias = field.alias or name
        if alias == name or alias not in properties or name in properties:
            continue
        properties[name] = {**copy.deepcopy(properties[alias]), "deprecated": True,
                            "description": f"The Python name of `{alias}`; write `{alias}`."}
        model.setdefault("dependentSchemas", {})[alias] = {"not": {"required": [name]}}
        if alias in required:
            required.remove(alias)
            either.append({"anyOf": [{"required": [alias]}, {"required": [name]}]})
    if either:
        model["required"] = required
        model["allOf"] = [*model.get("allOf", []), *either]
        if not required:
            del model["required"]


def required_fields(model: dict[str, Any]) -> set[str]:
    """The camelCase fields a ``$defs`` entry requires (given in either spelling, see :func:`_python_names`)."""
    names = set(model.get("required", []))
    for rule in model.get("allOf", []):
        options = rule.get("anyOf", []) if isinstance(rule, dict) else []
        if options and isinstance(options[0], dict) and options[0].get("required"):
            names.add(options[0]["required"][0])
    return names


def configuration_schema() -> dict[str, Any]:
    """The schema of the ``gpu-fabric:`` values alone: ``{queueOwner: ..., pools: [...], ...}``."""
    schema = FabricConfig.model_json_schema(by_alias=True, mode="validation", schema_generator=DescribedFields)
    schema = _clean(schema, keep_title=True)
    models = _models(FabricConfig)
    for name, model in schema.get("$defs", {}).items():
        if name in models:
            _python_names(model, models[name])
    # Not at the top: the stack program knows its configuration keys in camelCase only.
    return {"$schema": DRAFT, **schema}


def _secure_strings(node: Any, defs: dict[str, Any], secret_defs: dict[str, Any]) -> Any:
    """``node`` with every string value also accepting a Pulumi secret (``{secure: ...}``).

    Model definitions reached this way are copied as ``<Name>OrSecure`` so that the keys that may
    not hold secrets keep their plain definitions.
    """
    if isinstance(node, list):
        return [_secure_strings(item, defs, secret_defs) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        if name == SECURE_VALUE:
            return node
        secret_name = f"{name}OrSecure"
        if secret_name not in secret_defs:
            secret_defs[secret_name] = {}  # claimed first: a recursive model refers to itself
            secret_defs[secret_name] = _secure_strings(defs[name], defs, secret_defs)
        return {**node, "$ref": f"#/$defs/{secret_name}"}
    result = {key: (value if key in ("default", "const", "enum", "examples", "required", "description")
                    else _secure_strings(value, defs, secret_defs)) for key, value in node.items()}
    if result.get("type") == "string":
        description = result.pop("description", None)
        options = {"anyOf": [result, {"$ref": f"#/$defs/{SECURE_VALUE}"}]}
        return {**options, **({"description": description} if description else {})}
    return result


def stack_file_schema() -> dict[str, Any]:
    """The schema of a whole ``Pulumi.<stack>.yaml``: its ``config:`` mapping, ``gpu-fabric:*`` keys checked.

    Other namespaces (``aws:region``, ``kubernetes:...``) are left to their providers. A
    ``gpu-fabric:`` key the stack does not know is refused, and so is a key without a namespace
    (Pulumi refuses it). The keys that may be Pulumi secrets (``modelDeployments``,
    ``kvCacheBackends``, ``kvCachePools``, ``kvCachePoolBindings``) accept ``{secure: ...}`` wherever
    a string goes.
    """
    values = configuration_schema()
    defs: dict[str, Any] = dict(values.get("$defs", {}))
    secret_defs: dict[str, Any] = {}
    properties: dict[str, Any] = {}
    for key, schema in values["properties"].items():
        if key in SECRET_CAPABLE_KEYS:
            schema = _secure_strings(copy.deepcopy(schema), defs, secret_defs)
        properties[f"{CONFIG_NAMESPACE}:{key}"] = schema
    defs.update(secret_defs)
    defs[SECURE_VALUE] = {
        "title": SECURE_VALUE,
        "description": "A Pulumi secret as `pulumi config set --secret` writes it (ciphertext).",
        "type": "object",
        "properties": {"secure": {"type": "string"}},
        "required": ["secure"],
        "additionalProperties": False,
    }
    config = {
        "type": "object",
        "description": "Configuration of the stack, keyed `namespace:key`; the `gpu-fabric:` keys are the fabric.",
        "properties": properties,
        "required": [f"{CONFIG_NAMESPACE}:{key}" for key in values.get("required", [])],
        "propertyNames": {
            "pattern": "^[^:]+:.+$",
            "anyOf": [{"enum": sorted(properties)}, {"not": {"pattern": f"^{re.escape(CONFIG_NAMESPACE)}:"}}],
        },
    }
    return {
        "$schema": DRAFT,
        "$id": SCHEMA_ID,
        "title": "gpu-fabric stack file (Pulumi.<stack>.yaml)",
        "description": _markdown_literals(" ".join(str(values.get("description", "")).split()))
        + " Generated by `gpu-fabric schema` from the models `gpu-fabric render` validates with.",
        "type": "object",
        "properties": {"config": config, **PULUMI_STACK_KEYS},
        "$defs": dict(sorted(defs.items())),
    }
