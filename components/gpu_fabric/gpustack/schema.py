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

The schemas are the bundled copies in ``gpu_fabric/data/gpustack-operator/`` (provenance in the
SOURCE.md beside them; commits in :mod:`gpu_fabric.gpustack.operator_pin`). Both ``v1alpha1`` (the CRD) and
``v1`` (the operator's aggregated API, whose types alias the v1alpha1 ones) are checked against the
same schema. This is the one implementation: ``load_config``, the policy pack and ``lint`` call it.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from importlib import resources
from typing import Any, Iterable, Mapping

import yaml

from gpu_fabric.config.constants import AGGREGATED_VERSION, API_VERSIONS, SERVED_CRD_VERSION
from gpu_fabric.gpustack.operator_pin import API_GROUP
from gpu_fabric.gpustack.findings import Finding
from gpu_fabric.config.shapes import mapping_at

SCHEMA_FILES: dict[str, str] = {
    "ModelDeployment": "modeldeployments.worker.gpustack.ai.pascalcase.yaml",
    "KVCacheBackend": "kvcachebackends.worker.gpustack.ai.yaml",
    "KVCachePool": "kvcachepools.worker.gpustack.ai.yaml",
    "KVCachePoolBinding": "kvcachepoolbindings.worker.gpustack.ai.yaml",
}
"""Kind -> bundled CRD file. Other ``worker.gpustack.ai`` kinds have no bundled schema."""

# A pruned field is lost silently; where the replacement is known, the finding says what to write.
_PRUNED_FIELD_HINTS: dict[tuple[str, str], str] = {
    ("ModelDeployment", "spec.engine.image"): (
        "name the image on each role (spec.roles[].image), or set spec.engine.version and let the "
        "operator synthesize gpustack/runner:<backend><runtime>-<engine><version>"),
    ("ModelDeployment", "spec.engineVersion"): "the engine version is spec.engine.version",
    ("KVCachePoolBinding", "spec.quotaCeiling"): "the binding's quota is spec.quota.ceiling",
}

_INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


@lru_cache(maxsize=None)
def crd(kind: str) -> Mapping[str, Any] | None:
    """The bundled CustomResourceDefinition of ``kind``, or ``None`` when none is bundled."""
    filename = SCHEMA_FILES.get(kind)
    if filename is None:
        return None
    text = resources.files("gpu_fabric").joinpath("data", "gpustack-operator", filename).read_text()
    return yaml.safe_load(text)


def openapi_schema(kind: str) -> Mapping[str, Any] | None:
    """The ``openAPIV3Schema`` of ``kind``'s served version, or ``None``."""
    definition = crd(kind)
    if definition is None:
        return None
    for version in definition["spec"]["versions"]:
        if version["name"] == SERVED_CRD_VERSION and version.get("served"):
            return version["schema"]["openAPIV3Schema"]
    return None  # pragma: no cover - every bundled CRD serves v1alpha1


def is_namespaced(kind: str) -> bool:
    """True for the namespaced kinds (ModelDeployment, KVCachePoolBinding)."""
    definition = crd(kind)
    return bool(definition and definition["spec"].get("scope") == "Namespaced")


def validate_object(obj: Mapping[str, Any]) -> list[Finding]:
    """Every schema violation of one ``worker.gpustack.ai`` object (empty when it would be stored intact)."""
    kind = str(obj.get("kind") or "")
    metadata = mapping_at(obj, "metadata")
    name = str(metadata.get("name") or "")
    namespace = metadata.get("namespace")
    found: list[tuple[str, str]] = []

    group, _, version = str(obj.get("apiVersion") or "").partition("/")
    if group == API_GROUP and version not in API_VERSIONS:
        found.append(("apiVersion", f"{API_GROUP}/{version} is not served: the CRDs serve {SERVED_CRD_VERSION} "
                                    f"and the operator's aggregated API serves {AGGREGATED_VERSION}"))
    schema = openapi_schema(kind)
    if schema is None:
        return [Finding(kind or "<no kind>", name, "kind", f"no schema of {API_GROUP} kind {kind!r} is bundled "
                        f"(known: {', '.join(sorted(SCHEMA_FILES))}); it was not validated", namespace, "warning")]
    if not name:
        found.append(("metadata.name", "Required value: every object needs a name"))
    _check(obj, schema, "", found)
    findings = []
    for path, message in found:
        hint = _PRUNED_FIELD_HINTS.get((kind, _without_indices(path)))
        findings.append(Finding(kind, name, path, f"{message}; {hint}" if hint else message,
                                namespace if isinstance(namespace, str) else None))
    return findings


def validate_objects(objects: Iterable[Mapping[str, Any]]) -> list[Finding]:
    """Schema violations of every ``worker.gpustack.ai`` object among ``objects`` (others are skipped)."""
    findings: list[Finding] = []
    for obj in objects:
        if isinstance(obj, Mapping) and str(obj.get("apiVersion", "")).split("/", 1)[0] == API_GROUP:
            findings.extend(validate_object(obj))
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
            found.append((child, "unknown field: the operator's schema does not declare it, so the API server "
                                 "would prune it and its value would be lost"))
    for key in schema.get("required") or ():
        if key not in value and "default" not in (properties.get(key) or {}):
            found.append((_join(path, key), "Required value: the operator's schema requires this field"))


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
