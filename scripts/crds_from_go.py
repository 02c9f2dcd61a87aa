"""Transcribe the GPUStack operator's ``zz_generated.crds.go`` into the CRD schema YAML gpu-fabric bundles.

The operator ships no CRD YAML: its CRDs are Go literals of ``apiextensions.k8s.io/v1`` types in
``api/worker/v1alpha1/zz_generated.crds.go`` (one ``crd_gpustack_api_worker_v1alpha1_<Kind>()``
function per kind), which it applies itself. This script reads that file at a release tag and writes
one YAML file per kind into a profile's schema folder, so a docs-derived profile
(``components/gpu_fabric/data/gpustack-operator/releases/v0.X/changes.yaml``) can be replaced by the
release's real schema::

    python scripts/crds_from_go.py zz_generated.crds.go \\
        --out components/gpu_fabric/data/gpustack-operator/releases/v0.11 \\
        --source "gpustack/gpustack-operator api/worker/v1alpha1/zz_generated.crds.go at tag v0.11.2"

then delete that folder's ``changes.yaml`` and update its SOURCE.md and the profile's ``schema_basis``.

What it keeps, as the bundled transcriptions do: every structural element of each schema (type,
properties, required, enum, default, bounds, pattern, format, nullable, ``x-kubernetes-*``,
validations); descriptions are dropped and ``status`` is cut down to ``type: object`` (clients never
write status). Only the kinds gpu-fabric validates are written unless ``--all`` is given; file names
are the ones ``gpu_fabric.gpustack.schema.SCHEMA_FILES`` reads.

The reader understands the Go that ``zz_generated.crds.go`` is made of: composite literals (keyed,
positional, maps), ``&`` addresses, string and raw-string literals, numbers, ``true``/``false``/``nil``,
and the calls ``ptr.To[T](x)``, ``ptr.To(x)``, ``int64(x)`` and ``[]byte(x)``. Anything else is
refused with its line number rather than guessed.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any, Iterator

import yaml

_TOKEN = re.compile(r"""
    (?P<space>\s+|//[^\n]*|/\*.*?\*/)
  | (?P<raw>`[^`]*`)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<number>-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)
  | (?P<punct>[{}\[\](),:&*])
""", re.VERBOSE | re.DOTALL)

_FUNCTION = re.compile(r"func\s+crd_[A-Za-z0-9_]*?_(?P<kind>[A-Za-z0-9]+)\(\)\s*\*[A-Za-z0-9_.]+\s*\{\s*return\s+")


class GoLiteralError(ValueError):
    """Go the reader does not understand; the message names the line."""


class _Tokens:
    def __init__(self, text: str, start: int = 0):
        self.text = text
        self.items: list[tuple[str, str, int]] = list(self._scan(start))
        self.position = 0

    def _scan(self, start: int) -> Iterator[tuple[str, str, int]]:
        index = start
        while index < len(self.text):
            match = _TOKEN.match(self.text, index)
            if match is None:
                raise GoLiteralError(f"line {self._line(index)}: unexpected {self.text[index]!r}")
            kind = match.lastgroup or ""
            if kind != "space":
                yield kind, match.group(), index
            index = match.end()

    def _line(self, offset: int) -> int:
        return self.text.count("\n", 0, offset) + 1

    def peek(self, ahead: int = 0) -> tuple[str, str]:
        if self.position + ahead >= len(self.items):
            return "eof", ""
        kind, value, _ = self.items[self.position + ahead]
        return kind, value

    def take(self, expected: str | None = None) -> str:
        kind, value = self.peek()
        if kind == "eof" or (expected is not None and value != expected):
            raise GoLiteralError(f"line {self.line()}: expected {expected!r}, found {value or 'end of file'!r}")
        self.position += 1
        return value

    def line(self) -> int:
        if self.position >= len(self.items):
            return self._line(len(self.text))
        return self._line(self.items[self.position][2])


def _string(token: str) -> str:
    if token.startswith("`"):
        return token[1:-1]
    return json.loads(token)  # Go's interpreted string escapes used here are JSON's


def _type(tokens: _Tokens) -> str:
    """A type expression (``[]T``, ``map[K]V``, ``pkg.Name``, ``*T``), as text."""
    kind, value = tokens.peek()
    if value == "[":
        tokens.take("[")
        tokens.take("]")
        return "[]" + _type(tokens)
    if value == "*":
        tokens.take("*")
        return "*" + _type(tokens)
    if value == "map":
        tokens.take("map")
        tokens.take("[")
        key = _type(tokens)
        tokens.take("]")
        return f"map[{key}]" + _type(tokens)
    if kind != "ident":
        raise GoLiteralError(f"line {tokens.line()}: expected a type, found {value!r}")
    return tokens.take()


def _value(tokens: _Tokens) -> Any:
    kind, value = tokens.peek()
    if value == "&":
        tokens.take("&")
        return _value(tokens)
    if kind in ("string", "raw"):
        return _string(tokens.take())
    if kind == "number":
        text = tokens.take()
        return float(text) if any(c in text for c in ".eE") else int(text)
    if value == "{":
        return _composite(tokens, "")
    if kind == "ident" and value in ("true", "false", "nil"):
        tokens.take()
        return {"true": True, "false": False, "nil": None}[value]
    type_name = _type(tokens)
    if tokens.peek()[1] == "[":  # generic instantiation: ptr.To[string]
        tokens.take("[")
        _type(tokens)
        tokens.take("]")
    after = tokens.peek()[1]
    if after == "(":
        return _call(tokens, type_name)
    if after == "{":
        return _composite(tokens, type_name)
    raise GoLiteralError(f"line {tokens.line()}: {type_name} is neither a literal nor a call")


def _call(tokens: _Tokens, function: str) -> Any:
    if function not in ("ptr.To", "int64", "int32", "float64", "[]byte", "string"):
        raise GoLiteralError(f"line {tokens.line()}: call of {function} is not part of a generated CRD")
    tokens.take("(")
    argument = _value(tokens)
    tokens.take(")")
    return argument


def _composite(tokens: _Tokens, type_name: str) -> Any:
    """``{...}``: a dict for keyed elements (struct fields or map entries), a list for positional ones."""
    tokens.take("{")
    keyed: dict[Any, Any] = {}
    positional: list[Any] = []
    while tokens.peek()[1] != "}":
        kind, _ = tokens.peek()
        if kind in ("ident", "string") and tokens.peek(1)[1] == ":":
            key = tokens.take()
            tokens.take(":")
            keyed[_string(key) if kind == "string" else key] = _value(tokens)
        else:
            positional.append(_value(tokens))
        if tokens.peek()[1] == ",":
            tokens.take(",")
        elif tokens.peek()[1] != "}":
            raise GoLiteralError(f"line {tokens.line()}: expected ',' or '}}', found {tokens.peek()[1]!r}")
    tokens.take("}")
    if keyed and positional:
        raise GoLiteralError(f"line {tokens.line()}: a literal mixes keyed and positional elements")
    if positional or type_name.startswith("[]"):
        return positional
    return keyed


# -- Go field names -> the JSON names of apiextensions.k8s.io/v1 -----------------------------------------------

_NAMES = {"APIVersion": "apiVersion", "OpenAPIV3Schema": "openAPIV3Schema", "JSONPath": "jsonPath", "XIntOrString":
          "x-kubernetes-int-or-string", "ObjectMeta": "metadata"}
_DROPPED = {"Description"}


def json_name(go_field: str) -> str:
    """``XListMapKeys`` -> ``x-kubernetes-list-map-keys``; ``MinLength`` -> ``minLength``."""
    if go_field in _NAMES:
        return _NAMES[go_field]
    if go_field.startswith("X") and go_field[1:2].isupper():
        return "x-kubernetes-" + re.sub(r"(?<!^)(?=[A-Z])", "-", go_field[1:]).lower()
    return go_field[0].lower() + go_field[1:]


def _schema(props: Any) -> Any:
    """A ``JSONSchemaProps`` literal as the JSON schema the API server stores."""
    if not isinstance(props, dict):
        return props
    out: dict[str, Any] = {}
    for field, value in props.items():
        if field in _DROPPED:
            continue
        name = json_name(field)
        if field == "Properties":
            out[name] = {key: _schema(item) for key, item in value.items()}
        elif field == "Items":  # JSONSchemaPropsOrArray
            out[name] = _schema(value["Schema"]) if "Schema" in value else [_schema(s) for s in value.get("JSONSchemas", [])]
        elif field == "AdditionalProperties":  # JSONSchemaPropsOrBool
            out[name] = _schema(value["Schema"]) if value.get("Schema") is not None else bool(value.get("Allows"))
        elif field in ("AnyOf", "OneOf", "AllOf"):
            out[name] = [_schema(item) for item in value]
        elif field == "Not":
            out[name] = _schema(value)
        elif field == "Enum":  # []JSON{Raw: ...}
            out[name] = [json.loads(item["Raw"]) for item in value]
        elif field == "Default":  # *JSON{Raw: ...}
            out[name] = json.loads(value["Raw"])
        elif field == "XValidations":
            out[name] = [{json_name(k): v for k, v in rule.items()} for rule in value]
        else:
            out[name] = value
    return out


def _plain(value: Any) -> Any:
    """A non-schema literal (names, versions, printer columns) with JSON field names."""
    if isinstance(value, dict):
        return {json_name(k): _plain(v) for k, v in value.items() if k not in _DROPPED}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def _definition(literal: dict[str, Any]) -> dict[str, Any]:
    """A ``CustomResourceDefinition`` literal as the YAML object, descriptions dropped and status elided."""
    type_meta = literal.get("TypeMeta") or {}
    definition: dict[str, Any] = {json_name(k): v for k, v in type_meta.items()}
    definition["metadata"] = _plain(literal.get("ObjectMeta") or {})
    spec = _plain({k: v for k, v in (literal.get("Spec") or {}).items() if k != "Versions"})
    versions = []
    for version in (literal.get("Spec") or {}).get("Versions") or []:
        rendered = _plain({k: v for k, v in version.items() if k != "Schema"})
        if "Subresources" in version:
            rendered["subresources"] = {json_name(k): {} for k in version["Subresources"]}
        schema_props = ((version.get("Schema") or {}).get("OpenAPIV3Schema")) or {}
        openapi = _schema(schema_props)
        if "status" in openapi.get("properties", {}):
            openapi["properties"]["status"] = {"type": "object"}
        rendered["schema"] = {"openAPIV3Schema": openapi}
        versions.append(rendered)
    spec["versions"] = versions
    definition["spec"] = spec
    return definition


def read_definitions(text: str) -> dict[str, dict[str, Any]]:
    """Kind -> CRD object, for every ``crd_..._<Kind>()`` function of a ``zz_generated.crds.go`` text."""
    definitions: dict[str, dict[str, Any]] = {}
    for match in _FUNCTION.finditer(text):
        tokens = _Tokens(text[: _literal_end(text, match.end())], match.end())
        literal = _value(tokens)
        if not isinstance(literal, dict):
            raise GoLiteralError(f"line {text.count(chr(10), 0, match.end()) + 1}: crd function returns no struct literal")
        definitions[match.group("kind")] = _definition(literal)
    if not definitions:
        raise GoLiteralError("no crd_<...>_<Kind>() function found: is this zz_generated.crds.go?")
    return definitions


def _literal_end(text: str, start: int) -> int:
    """The offset just past the composite literal starting at ``start`` (braces matched outside strings)."""
    depth = 0
    tokens = _Tokens(text, start)
    for kind, value, offset in tokens.items:
        if kind == "punct" and value == "{":
            depth += 1
        elif kind == "punct" and value == "}":
            depth -= 1
            if depth == 0:
                return offset + 1
    raise GoLiteralError("unterminated composite literal")


def write_definitions(definitions: dict[str, dict[str, Any]], out: Path, source: str, every_kind: bool = False) -> list[Path]:
    """Write each kind gpu-fabric bundles (every kind with ``every_kind``) to ``out``; return the files written."""
    from gpu_fabric.gpustack.schema import SCHEMA_FILES

    out.mkdir(parents=True, exist_ok=True)
    written = []
    for kind, definition in sorted(definitions.items()):
        filename = SCHEMA_FILES.get(kind) or (f"{definition['metadata']['name']}.yaml" if every_kind else None)
        if filename is None:
            continue
        header = f"# Transcribed by scripts/crds_from_go.py from {source}\n# (func crd_..._{kind}). Descriptions omitted, status elided.\n"
        path = out / filename
        path.write_text(header + yaml.safe_dump(definition, sort_keys=False, width=120))
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("go_file", type=Path, help="api/worker/v1alpha1/zz_generated.crds.go of an operator release")
    parser.add_argument("--out", type=Path, required=True, help="the profile's schema folder")
    parser.add_argument("--source", required=True, help="where the file came from (repository, path, tag or commit)")
    parser.add_argument("--all", action="store_true", help="write every kind, not only the ones gpu-fabric validates")
    args = parser.parse_args(argv)
    try:
        definitions = read_definitions(args.go_file.read_text())
    except (OSError, GoLiteralError) as error:
        print(f"crds_from_go: {args.go_file}: {error}", file=sys.stderr)
        return 2
    for path in write_definitions(definitions, args.out, args.source, args.all):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
