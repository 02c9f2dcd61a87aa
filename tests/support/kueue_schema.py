"""Validate rendered Kueue objects against Kueue v0.19.2's own CRDs (from ../shared), as the API server does:
defaulting, the OpenAPI schema with unknown fields refused, and the CRDs' CEL rules (``crd_validation``)."""

import pytest

from support.crd_validation import KUEUE_DIR, CrdValidationError, validate_object

SCHEMA_DIR = KUEUE_DIR

__all__ = ["SCHEMA_DIR", "CrdValidationError", "require_schemas", "validate_kueue_object"]


def require_schemas() -> None:
    """Skip the calling test when ``../shared`` is not beside the checkout."""
    if not SCHEMA_DIR.is_dir():
        pytest.skip(f"Kueue CRD schemas not found at {SCHEMA_DIR}")


def validate_kueue_object(manifest: dict) -> None:
    """Raise ``CrdValidationError`` (a ``jsonschema.ValidationError``) when the API server would refuse ``manifest``."""
    group, _, _ = manifest["apiVersion"].rpartition("/")
    assert group == "kueue.x-k8s.io", f"not a Kueue object: {manifest['apiVersion']}"
    validate_object(manifest)
