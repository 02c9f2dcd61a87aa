"""Validate rendered Kueue objects against Kueue v0.19.2's own CRD schemas (from ../shared)."""

from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

SCHEMA_DIR = Path(__file__).resolve().parent.parent.parent / "shared" / "schemas" / "kueue-v0.19.2"
_FILES = {"ResourceFlavor": "resourceflavors", "ClusterQueue": "clusterqueues", "LocalQueue": "localqueues"}


def require_schemas() -> None:
    """Skip the calling test when ``../shared`` is not beside the checkout."""
    if not SCHEMA_DIR.is_dir():
        pytest.skip(f"Kueue CRD schemas not found at {SCHEMA_DIR}")


def _strict(schema: Any) -> Any:
    # API servers prune unknown fields silently; refusing them here catches misspelled keys.
    if isinstance(schema, dict):
        schema = {key: _strict(value) for key, value in schema.items()}
        if "properties" in schema and "additionalProperties" not in schema \
                and not schema.get("x-kubernetes-preserve-unknown-fields"):
            schema["additionalProperties"] = False
        return schema
    if isinstance(schema, list):
        return [_strict(item) for item in schema]
    return schema


def crd_schema(kind: str, version: str = "v1beta2") -> dict:
    """The strict openAPIV3Schema of ``kind`` at ``version``."""
    crd = yaml.safe_load((SCHEMA_DIR / f"kueue.x-k8s.io_{_FILES[kind]}.yaml").read_text())
    served = next(v for v in crd["spec"]["versions"] if v["name"] == version)
    schema = _strict(served["schema"]["openAPIV3Schema"])
    schema["properties"]["metadata"] = {"type": "object"}
    return schema


def validate_kueue_object(manifest: dict) -> None:
    """Raise ``jsonschema.ValidationError`` when ``manifest`` does not conform to its CRD."""
    group, version = manifest["apiVersion"].split("/")
    assert group == "kueue.x-k8s.io"
    jsonschema.validate(manifest, crd_schema(manifest["kind"], version))
