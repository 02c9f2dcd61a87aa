"""Validate rendered objects as the Kubernetes API server does on create, against upstream CRDs read in place.

Three steps, in the API server's order (k8s.io/apiextensions-apiserver): defaulting from the structural
schema (``default``), the OpenAPI v3 schema (a field the schema does not declare is an error here -- the
server would prune it silently, so a misspelt key would vanish), and the CRD's CEL rules
(``x-kubernetes-validations``), evaluated with cel-python (``celpy``) plus the Kubernetes CEL library
functions the rules of these CRDs use:

* ``find(regex)`` -- Kubernetes regex library (k8s.io/apiserver/pkg/cel/library/regex.go): the first match,
  or ``""``;
* ``split(separator)`` and ``lowerAscii()`` -- cel-go's strings extension, which Kubernetes enables
  (ext.Strings in k8s.io/apiserver/pkg/cel/environment/base.go).

Rules that read ``oldSelf`` are transition rules: the server evaluates them only on update, when an old
object exists, so they do not apply to a create and are skipped.

The CRDs are read from ``../shared/schemas`` (never copied into the project); callers skip when absent.
"""

from __future__ import annotations

import copy
import functools
import re
from pathlib import Path
from typing import Any, Iterator

import celpy
import jsonschema
import pytest
import yaml
from celpy import celtypes

SCHEMAS = Path(__file__).resolve().parents[3] / "shared" / "schemas"
KARPENTER_DIR = SCHEMAS / "karpenter-v1.14.1"
KUEUE_DIR = SCHEMAS / "kueue-v0.19.2"

CRD_FILES = {
    ("karpenter.k8s.aws", "EC2NodeClass"): KARPENTER_DIR / "karpenter.k8s.aws_ec2nodeclasses.yaml",
    ("karpenter.sh", "NodePool"): KARPENTER_DIR / "karpenter.sh_nodepools.yaml",
    ("karpenter.sh", "NodeClaim"): KARPENTER_DIR / "karpenter.sh_nodeclaims.yaml",
    ("kueue.x-k8s.io", "ResourceFlavor"): KUEUE_DIR / "kueue.x-k8s.io_resourceflavors.yaml",
    ("kueue.x-k8s.io", "ClusterQueue"): KUEUE_DIR / "kueue.x-k8s.io_clusterqueues.yaml",
    ("kueue.x-k8s.io", "LocalQueue"): KUEUE_DIR / "kueue.x-k8s.io_localqueues.yaml",
    ("kueue.x-k8s.io", "Cohort"): KUEUE_DIR / "kueue.x-k8s.io_cohorts.yaml",
    ("kueue.x-k8s.io", "Topology"): KUEUE_DIR / "kueue.x-k8s.io_topologies.yaml",
}


def require_crds(directory: Path = KARPENTER_DIR) -> None:
    """Skip the calling test when the CRD folder is not beside the checkout (``../shared``)."""
    if not directory.is_dir():
        pytest.skip(f"upstream CRDs not found at {directory}")


class CrdValidationError(jsonschema.ValidationError):
    """The object would be refused by the API server; ``problems`` lists every reason with its path.

    A ``jsonschema.ValidationError``, so callers written against the plain schema check keep working.
    """

    def __init__(self, kind: str, name: str, problems: list[str]):
        self.problems = problems
        super().__init__(f"{kind} {name} is invalid:\n  " + "\n  ".join(problems))


# -- the CRD -------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _crd(path: Path) -> dict[str, Any]:
    documents = [d for d in yaml.safe_load_all(path.read_text()) if d]
    return documents[0]


def served_schema(group: str, kind: str, version: str) -> dict[str, Any]:
    """The ``openAPIV3Schema`` of ``group/kind`` at ``version`` (KeyError when no such CRD or version)."""
    crd = _crd(CRD_FILES[(group, kind)])
    served = next((v for v in crd["spec"]["versions"] if v["name"] == version), None)
    if served is None:
        raise KeyError(f"{group}/{version} {kind}: the CRD serves no version {version}")
    return served["schema"]["openAPIV3Schema"]


def _strict(schema: Any) -> Any:
    """The schema with unknown fields refused wherever the server would prune them."""
    if isinstance(schema, dict):
        schema = {key: _strict(value) for key, value in schema.items() if key != "x-kubernetes-validations"}
        if "properties" in schema and "additionalProperties" not in schema \
                and not schema.get("x-kubernetes-preserve-unknown-fields"):
            schema["additionalProperties"] = False
        return schema
    if isinstance(schema, list):
        return [_strict(item) for item in schema]
    return schema


@functools.lru_cache(maxsize=None)
def _validator(group: str, kind: str, version: str) -> jsonschema.protocols.Validator:
    schema = _strict(served_schema(group, kind, version))
    schema["properties"]["metadata"] = {"type": "object"}  # ObjectMeta is validated by the server itself
    return jsonschema.Draft7Validator(schema)


# -- defaulting ----------------------------------------------------------------------------------------


def apply_defaults(value: Any, schema: dict[str, Any]) -> Any:
    """Structural-schema defaulting: a missing property with a ``default`` takes it, recursively."""
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        for key, sub in properties.items():
            if key not in value and "default" in sub:
                value[key] = copy.deepcopy(sub["default"])
            if key in value:
                value[key] = apply_defaults(value[key], sub)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for key in list(value):
                if key not in properties:
                    value[key] = apply_defaults(value[key], extra)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [apply_defaults(item, schema["items"]) for item in value]
    return value


# -- CEL -----------------------------------------------------------------------------------------------


def _find(text: celtypes.StringType, pattern: celtypes.StringType) -> celtypes.StringType:
    # Kubernetes' regex library: the leftmost match, "" when none (library/regex.go, find).
    match = re.search(str(pattern), str(text))
    return celtypes.StringType(match.group(0) if match else "")


def _split(text: celtypes.StringType, separator: celtypes.StringType) -> celtypes.ListType:
    return celtypes.ListType([celtypes.StringType(part) for part in str(text).split(str(separator))])


def _lower_ascii(text: celtypes.StringType) -> celtypes.StringType:
    return celtypes.StringType("".join(c.lower() if c.isascii() else c for c in str(text)))


KUBERNETES_FUNCTIONS = {"find": _find, "split": _split, "lowerAscii": _lower_ascii}
"""The Kubernetes CEL library functions the rules of these CRDs call that cel-python lacks."""

_ENVIRONMENT = celpy.Environment()


@functools.lru_cache(maxsize=None)
def _program(rule: str) -> Any:
    return _ENVIRONMENT.program(_ENVIRONMENT.compile(rule), functions=KUBERNETES_FUNCTIONS)


def _to_cel(value: Any) -> Any:
    if isinstance(value, bool):
        return celtypes.BoolType(value)
    if isinstance(value, int):
        return celtypes.IntType(value)
    if isinstance(value, float):
        return celtypes.DoubleType(value)
    if isinstance(value, str):
        return celtypes.StringType(value)
    if isinstance(value, list):
        return celtypes.ListType([_to_cel(item) for item in value])
    if isinstance(value, dict):
        return celtypes.MapType({celtypes.StringType(k): _to_cel(v) for k, v in value.items()})
    if value is None:
        return None
    raise TypeError(f"cannot pass {type(value).__name__} to CEL")


def is_transition_rule(rule: str) -> bool:
    """Rules reading ``oldSelf`` run on update only (apiextensions: transition rules)."""
    return re.search(r"\boldSelf\b", rule) is not None


def evaluate_rule(rule: str, value: Any) -> bool:
    """Evaluate one ``x-kubernetes-validations`` rule with ``self`` bound to ``value``.

    An evaluation error counts as a refusal, as on the server ("... evaluation error").
    """
    result = _program(rule).evaluate({"self": _to_cel(value)})
    if isinstance(result, celpy.CELEvalError):
        raise CelEvaluationError(f"{rule}: {result}")
    return bool(result)


class CelEvaluationError(ValueError):
    """A rule could not be evaluated over the value."""


def _walk(value: Any, schema: dict[str, Any], path: str) -> Iterator[tuple[str, dict[str, Any], Any]]:
    yield path, schema, value
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        for key, sub in properties.items():
            if key in value:
                yield from _walk(value[key], sub, f"{path}.{key}")
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for key, item in value.items():
                if key not in properties:
                    yield from _walk(item, extra, f"{path}[{key!r}]")
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            yield from _walk(item, schema["items"], f"{path}[{index}]")


def cel_problems(value: Any, schema: dict[str, Any], root: str = "") -> list[str]:
    """Every CEL rule of the schema the value breaks, as ``path: message``."""
    problems = []
    for path, node, item in _walk(value, schema, root):
        for validation in node.get("x-kubernetes-validations") or []:
            rule = validation["rule"]
            if is_transition_rule(rule):
                continue
            try:
                ok = evaluate_rule(rule, item)
            except CelEvaluationError as error:
                problems.append(f"{path or '<root>'}: evaluation error: {error}")
                continue
            if not ok:
                problems.append(f"{path or '<root>'}: {validation.get('message') or rule}")
    return problems


# -- the whole object ----------------------------------------------------------------------------------


def crd_problems(manifest: dict[str, Any]) -> list[str]:
    """Every reason the API server would refuse to create ``manifest`` (defaulting applied first)."""
    group, _, version = manifest["apiVersion"].rpartition("/")
    kind = manifest["kind"]
    schema = served_schema(group, kind, version)
    defaulted = apply_defaults(copy.deepcopy(manifest), schema)
    problems = [f"{'.'.join(str(p) for p in error.absolute_path) or '<root>'}: {error.message}"
                for error in _validator(group, kind, version).iter_errors(defaulted)]
    if problems:
        return problems  # CEL assumes a value of the declared shape, as the server does
    return cel_problems(defaulted, schema)


def validate_object(manifest: dict[str, Any]) -> None:
    """Raise :class:`CrdValidationError` when the API server would refuse ``manifest``."""
    problems = crd_problems(manifest)
    if problems:
        raise CrdValidationError(manifest["kind"], (manifest.get("metadata") or {}).get("name", "?"), problems)
