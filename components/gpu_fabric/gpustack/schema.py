"""Validate ``worker.gpustack.ai`` objects against the operator's CRD schemas, as the API server does.

The API server checks a custom resource against its CRD's structural schema before any admission
webhook runs. Three of its behaviours matter to anyone writing these objects from code:

* a field the schema does not declare is **pruned** (silently dropped), so a misspelt or retired
  field (``engine.image``) loses its value without an error. Here it is an error;
* a missing required field, a wrong type, a value outside an enum, and a crossed bound (length,
  items, minimum/maximum, int32 range, pattern) are refused;
* ``x-kubernetes-list-type: map`` keys must be unique (the API server's ``Duplicate value``).

A field the schema gives a default counts as present (defaulting runs before validation). An object
schema that declares no properties at all (``metadata``, the elided ``status``) is opaque: its
contents are not judged here (the API server validates ``metadata`` itself). A value that is not
plain JSON data (the policy pack's marker for a value unknown until apply) is not judged either.

The schemas depend on the operator line (:mod:`gpu_fabric.gpustack.profiles`): the pin's are the bundled
copies in ``gpu_fabric/data/gpustack-operator/`` (provenance in the SOURCE.md beside them; commits in
:mod:`gpu_fabric.gpustack.operator_pin`); a released line's folder under ``releases/`` holds either its
own transcription or a ``changes.yaml`` deriving it from another line (its SOURCE.md says which). A
field the line's sources leave open is reported as a warning, never passed in silence. Both ``v1alpha1`` (the CRD) and
``v1`` (the operator's aggregated API, whose types alias the v1alpha1 ones) are checked against the
same schema. This is the one implementation: ``load_config``, the policy pack and ``lint`` call it.
"""

from __future__ import annotations

import copy
import json
import re
from functools import lru_cache
from importlib import resources
from typing import Any, Iterable, Mapping

import yaml

from gpu_fabric.config.constants import AGGREGATED_VERSION, API_VERSIONS, SERVED_CRD_VERSION
from gpu_fabric.gpustack.operator_pin import API_GROUP
from gpu_fabric.findings import Finding, ObjectRef, Severity
from gpu_fabric.gpustack.rules import GPUSTACK_CRD_SCHEMA
from gpu_fabric.gpustack.profiles import Profile, default_profile, pin_profile
from gpu_fabric.config.shapes import mapping_at

SCHEMA_FILES: dict[str, str] = {
    "ModelDeployment": "modeldeployments.worker.gpustack.ai.pascalcase.yaml",
    "KVCacheBackend": "kvcachebackends.worker.gpustack.ai.yaml",
    "KVCachePool": "kvcachepools.worker.gpustack.ai.yaml",
    "KVCachePoolBinding": "kvcachepoolbindings.worker.gpustack.ai.yaml",
}
"""Kind -> bundled CRD file (in a profile's schema folder). Other ``worker.gpustack.ai`` kinds have no bundled schema."""

CHANGES_FILE = "changes.yaml"
"""A derived profile's folder holds this instead of CRD files: ``derived_from`` (another folder) and the
documented ``changes`` per kind (``add``, ``remove``, ``rename`` of a property path)."""

_BUNDLED_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""The loader of the bundled schema files: libyaml's when PyYAML has it (a render reads four CRDs, about
100 ms with the pure-Python parser, a tenth of that with libyaml). They are the project's own data, so
the safe loader's construction suffices (user files go through ``config.stack_file``'s strict one);
tests/gpustack/test_operator_schema.py checks both loaders read every bundled file alike."""


def read_bundled_yaml(text: str) -> Any:
    """One bundled YAML document (a CRD or a ``changes.yaml``), read with :data:`_BUNDLED_LOADER`."""
    return yaml.load(text, Loader=_BUNDLED_LOADER)  # noqa: S506 - a safe loader, bundled data


_SCHEMA_OWNER = "the operator's schema"
"""How a message names the schema; :func:`validate_object` names the operator version assumed instead."""

_INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


def _data_folder(folder: str) -> Any:
    root = resources.files("gpu_fabric").joinpath("data", "gpustack-operator")
    return root.joinpath(*folder.split("/")) if folder else root


@lru_cache(maxsize=None)
def _changes(folder: str) -> Mapping[str, Any] | None:
    path = _data_folder(folder).joinpath(CHANGES_FILE)
    return read_bundled_yaml(path.read_text()) if path.is_file() else None


@lru_cache(maxsize=None)
def _crd_in(folder: str, kind: str) -> Mapping[str, Any] | None:
    filename = SCHEMA_FILES.get(kind)
    if filename is None:
        return None
    derivation = _changes(folder)
    if derivation is None:
        return read_bundled_yaml(_data_folder(folder).joinpath(filename).read_text())
    base = _crd_in(str(derivation.get("derived_from") or ""), kind)
    if base is None:  # pragma: no cover - every folder derives from one holding every kind
        return None
    definition = copy.deepcopy(base)
    for version in definition["spec"]["versions"]:
        for change in (derivation.get("changes") or {}).get(kind) or ():
            apply_change(version["schema"]["openAPIV3Schema"], change)
    return definition


def apply_change(schema: dict[str, Any], change: Mapping[str, Any]) -> None:
    """Apply one documented change to an ``openAPIV3Schema``: ``add`` a property (with ``schema``, and
    ``required: true`` to require it), ``remove`` one, or ``rename`` one ``to`` a new name (keeping its
    schema and whether it is required). ``path`` is dotted below the root, ``[]`` marking list items
    (``spec.roles[].instanceType``)."""
    *parents, leaf = str(change["path"]).split(".")
    node = schema
    for part in parents:
        node = node["properties"][part.removesuffix("[]")]
        if part.endswith("[]"):
            node = node["items"]
    properties = node.setdefault("properties", {})
    required = node.get("required") or []
    op = change["op"]
    if op == "add":
        properties[leaf] = copy.deepcopy(dict(change["schema"]))
        if change.get("required"):
            node["required"] = [*required, leaf]
    elif op == "remove":
        properties.pop(leaf)
        node["required"] = [name for name in required if name != leaf]
    elif op == "rename":
        properties[change["to"]] = properties.pop(leaf)
        if leaf in required:
            node["required"] = [change["to"] if name == leaf else name for name in required]
    else:
        raise ValueError(f"unknown schema change {op!r} at {change['path']} (add, remove or rename)")
    if "required" in node and not node["required"]:
        del node["required"]


def _profile(profile: Profile | None) -> Profile:
    return profile if profile is not None else default_profile()


def crd(kind: str, profile: Profile | None = None) -> Mapping[str, Any] | None:
    """The CustomResourceDefinition of ``kind`` under ``profile`` (default: the stack default), or ``None``."""
    return _crd_in(_profile(profile).schema_folder, kind)


def openapi_schema(kind: str, profile: Profile | None = None) -> Mapping[str, Any] | None:
    """The ``openAPIV3Schema`` of ``kind``'s served version under ``profile``, or ``None``."""
    definition = crd(kind, profile)
    if definition is None:
        return None
    for version in definition["spec"]["versions"]:
        if version["name"] == SERVED_CRD_VERSION and version.get("served"):
            return version["schema"]["openAPIV3Schema"]
    return None  # pragma: no cover - every bundled CRD serves v1alpha1


def is_namespaced(kind: str) -> bool:
    """True for the namespaced kinds (ModelDeployment, KVCachePoolBinding); the same on every line."""
    definition = crd(kind, pin_profile())
    return bool(definition and definition["spec"].get("scope") == "Namespaced")


def validate_object(obj: Mapping[str, Any], profile: Profile | None = None) -> list[Finding]:
    """Every schema finding of one ``worker.gpustack.ai`` object under ``profile`` (the operator line).

    Errors: what the API server would refuse or prune. Warnings: fields the line's sources leave
    open (``not confirmed for 0.10.0``). Empty when the object would be stored intact.
    """
    profile = _profile(profile)
    kind = str(obj.get("kind") or "")
    metadata = mapping_at(obj, "metadata")
    name = str(metadata.get("name") or "")
    namespace = metadata.get("namespace")
    found: list[tuple[str, str]] = []

    group, _, version = str(obj.get("apiVersion") or "").partition("/")
    if group == API_GROUP and version not in API_VERSIONS:
        found.append(("apiVersion", f"{API_GROUP}/{version} is not served: the CRDs serve {SERVED_CRD_VERSION} "
                                    f"and the operator's aggregated API serves {AGGREGATED_VERSION}"))
    schema = openapi_schema(kind, profile)
    if schema is None:
        unnamed = ObjectRef(kind or "<no kind>", name, str(namespace) if namespace else None)
        return [Finding.of(GPUSTACK_CRD_SCHEMA, "kind", f"no schema of {API_GROUP} kind {kind!r} is bundled "
                           f"(known: {', '.join(sorted(SCHEMA_FILES))}); it was not validated",
                           severity=Severity.WARNING, subject=unnamed)]
    if not name:
        found.append(("metadata.name", "Required value: every object needs a name"))
    _check(obj, schema, "", found)
    subject = ObjectRef(kind, name, namespace if isinstance(namespace, str) and namespace else None)
    findings = []
    renamed = {f"{where.rpartition('.')[0]}.{note.rename_to}": where
               for note in profile.hints if note.kind == kind and note.rename_to
               for where in present_paths(obj, note.path)}
    owner = f"the schema of GPUStack operator {profile.assumed}"
    for path, message in found:
        if path in renamed:
            continue  # the old spelling's finding already says to write this field, with its value
        message = message.replace(_SCHEMA_OWNER, owner)
        note = profile.hint(kind, _without_indices(path))
        text = note.note.replace("{version}", profile.assumed) if note is not None else ""
        if note is not None and note.rename_to:
            message = (f"unknown field for GPUStack operator {profile.assumed}, which spells it {note.rename_to}: write "
                       f"{note.rename_to}: {_show(_value_at(obj, path))} instead; {text}")
        elif note is not None:
            message = f"{message}; {text}"
        findings.append(Finding.of(GPUSTACK_CRD_SCHEMA, path, message, subject=subject))
    for note in profile.unconfirmed:
        if note.kind == kind:
            findings.extend(Finding.of(GPUSTACK_CRD_SCHEMA, path, f"not confirmed for {profile.assumed}: {note.note} "
                                       f"({note.source})", severity=Severity.WARNING, subject=subject)
                            for path in present_paths(obj, note.path))
    return findings


def _value_at(obj: Any, path: str) -> Any:
    """The value at a concrete path (``spec.roles[1].instanceType``), or ``None``."""
    value = obj
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", path):
        if part.startswith("["):
            index = int(part[1:-1])
            value = value[index] if isinstance(value, (list, tuple)) and index < len(value) else None
        else:
            value = value.get(part) if isinstance(value, Mapping) else None
    return value


def present_paths(obj: Any, path: str) -> list[str]:
    """The concrete paths (``spec.roles[1].image``) at which ``obj`` sets ``path`` (indices removed)."""
    found: list[tuple[str, Any]] = [("", obj)]
    for part in path.split("."):
        step: list[tuple[str, Any]] = []
        for where, value in found:
            if isinstance(value, (list, tuple)):
                value_items = [(f"{where}[{i}]", item) for i, item in enumerate(value)]
            else:
                value_items = [(where, value)]
            for item_where, item in value_items:
                if isinstance(item, Mapping) and part in item and item[part] is not None:
                    step.append((_join(item_where, part), item[part]))
        found = step
    return [where for where, _ in found]


def validate_objects(objects: Iterable[Mapping[str, Any]], profile: Profile | None = None) -> list[Finding]:
    """Schema findings of every ``worker.gpustack.ai`` object among ``objects`` (others are skipped)."""
    findings: list[Finding] = []
    for obj in objects:
        if isinstance(obj, Mapping) and str(obj.get("apiVersion", "")).split("/", 1)[0] == API_GROUP:
            findings.extend(validate_object(obj, profile))
    return findings


def _without_indices(path: str) -> str:
    return re.sub(r"\[[^\]]*\]", "", path)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, (list, tuple)):
        return "array"
    return type(value).__name__


def _is_integer(value: Any) -> bool:
    # The Pulumi engine serializes every number as a double, so 2.0 is the integer 2.
    return (isinstance(value, int) and not isinstance(value, bool)) or (isinstance(value, float) and value.is_integer())


def _has_type(value: Any, expected: str) -> bool:
    if expected == "integer":
        return _is_integer(value)
    if expected == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return _json_type(value) == expected


def _show(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


_JSON_VALUES = (type(None), bool, int, float, str, Mapping, list, tuple)


def _check(value: Any, schema: Mapping[str, Any], path: str, found: list[tuple[str, str]]) -> None:
    where = path or "<root>"
    if not isinstance(value, _JSON_VALUES):
        return  # a value unknown until apply (the policy pack's marker): nothing to judge yet
    if value is None:
        if not schema.get("nullable"):
            found.append((where, "must not be null: the schema does not allow null here, so the API server would drop it"))
        return
    if schema.get("x-kubernetes-int-or-string"):
        if not (_is_integer(value) or isinstance(value, str)):
            found.append((where, f"must be an integer or a string (a Kubernetes quantity), got {_json_type(value)} {_show(value)}"))
        elif isinstance(value, str) and "pattern" in schema and not re.search(schema["pattern"], value):
            found.append((where, f"{_show(value)} is not a Kubernetes quantity (examples: 2, \"2\", \"16Gi\")"))
        return
    expected = schema.get("type")
    if expected and not _has_type(value, expected):
        found.append((where, f"must be of type {expected}, got {_json_type(value)} {_show(value)}"))
        return
    if "enum" in schema and value not in schema["enum"]:
        supported = ", ".join(_show(v) for v in schema["enum"])
        found.append((where, f"Unsupported value: {_show(value)}: supported values: {supported}"))
    if isinstance(value, str):
        _check_string(value, schema, where, found)
    elif expected in ("integer", "number") and isinstance(value, (int, float)):
        _check_number(value, schema, where, found)
    elif isinstance(value, Mapping):
        _check_object(value, schema, path, found)
    elif isinstance(value, (list, tuple)):
        _check_array(list(value), schema, path, found)


def _check_string(value: str, schema: Mapping[str, Any], where: str, found: list[tuple[str, str]]) -> None:
    if "minLength" in schema and len(value) < schema["minLength"]:
        found.append((where, f"must be at least {schema['minLength']} characters long"))
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        found.append((where, f"Too long: must be at most {schema['maxLength']} characters (got {len(value)})"))
    if "pattern" in schema and not re.search(schema["pattern"], value):
        found.append((where, f"{_show(value)} must match {schema['pattern']}"))


def _check_number(value: float, schema: Mapping[str, Any], where: str, found: list[tuple[str, str]]) -> None:
    if "minimum" in schema and value < schema["minimum"]:
        found.append((where, f"must be greater than or equal to {schema['minimum']} (got {_show(value)})"))
    if "maximum" in schema and value > schema["maximum"]:
        found.append((where, f"must be less than or equal to {schema['maximum']} (got {_show(value)})"))
    bounds = _INT_RANGES.get(str(schema.get("format", "")))
    if bounds and not bounds[0] <= value <= bounds[1]:
        found.append((where, f"must fit in {schema['format']} (got {_show(value)})"))


def _check_object(value: Mapping[str, Any], schema: Mapping[str, Any], path: str, found: list[tuple[str, str]]) -> None:
    properties: Mapping[str, Any] = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    if not properties and additional is None:
        return  # opaque (metadata, status): not judged here
    for key, item in value.items():
        child = _join(path, str(key))
        if key in properties:
            _check(item, properties[key], child, found)
        elif isinstance(additional, Mapping):
            _check(item, additional, child, found)
        else:
            found.append((child, f"unknown field: {_SCHEMA_OWNER} does not declare it, so the API server "
                                 "would prune it and its value would be lost"))
    for key in schema.get("required") or ():
        if key not in value and "default" not in (properties.get(key) or {}):
            found.append((_join(path, key), f"Required value: {_SCHEMA_OWNER} requires this field"))


def _check_array(items: list[Any], schema: Mapping[str, Any], path: str, found: list[tuple[str, str]]) -> None:
    where = path or "<root>"
    if "minItems" in schema and len(items) < schema["minItems"]:
        found.append((where, f"must have at least {schema['minItems']} items"))
    if "maxItems" in schema and len(items) > schema["maxItems"]:
        found.append((where, f"Too many: must have at most {schema['maxItems']} items (got {len(items)})"))
    item_schema = schema.get("items") or {}
    for index, item in enumerate(items):
        _check(item, item_schema, f"{path}[{index}]", found)
    list_type = schema.get("x-kubernetes-list-type")
    if list_type == "map":
        keys = schema.get("x-kubernetes-list-map-keys") or []
        key_schemas = item_schema.get("properties") or {}
        seen: set[str] = set()
        for index, item in enumerate(items):
            if not isinstance(item, Mapping):
                continue
            identity = {k: item.get(k, (key_schemas.get(k) or {}).get("default")) for k in keys}
            token = _show(identity)
            if token in seen:
                found.append((f"{path}[{index}]", f"Duplicate value: {token}"))
            seen.add(token)
    elif list_type == "set":
        tokens = [_show(item) for item in items]
        for index, token in enumerate(tokens):
            if token in tokens[:index]:
                found.append((f"{path}[{index}]", f"Duplicate value: {token}"))
