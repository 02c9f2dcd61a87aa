"""The offline instance catalog: the bundled table (:mod:`gpu_fabric.aws.catalog.table`) as a catalog."""

from __future__ import annotations

from typing import Sequence

from gpu_fabric.aws.catalog.table import load_bundled_items
from gpu_fabric.aws.catalog.types import UnknownInstanceTypeError, with_interface_types


class BundledInstanceCatalog:
    """The offline catalog: ``data/ec2_instance_types.json.gz`` (see scripts/generate_instance_catalog.py)."""

    source_name = "bundled"

    def names(self) -> list[str]:
        """Every instance type in the bundled table, sorted."""
        return sorted(load_bundled_items())

    def describe(self, instance_types: Sequence[str]) -> dict[str, dict]:
        items = load_bundled_items()
        unknown = [name for name in instance_types if name not in items]
        if unknown:
            raise UnknownInstanceTypeError(unknown, "bundled table", known=items)
        return {name: with_interface_types(items[name]) for name in dict.fromkeys(instance_types)}
