"""Read manifests of unknown shape: the value at a key when it has the expected shape, else empty.

Manifests come from YAML files, resource inputs and builders; a malformed object must yield a
finding (``missing``, ``wrong type``), never a ``TypeError``, and static type checking must see
what each read returns.
"""

from typing import Any, Mapping


def mapping_at(obj: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """``obj[key]`` when it is a mapping, else an empty one."""
    value = obj.get(key)
    return value if isinstance(value, Mapping) else {}


def list_at(obj: Mapping[str, Any], key: str) -> list[Any]:
    """``obj[key]`` when it is a list, else an empty one."""
    value = obj.get(key)
    return value if isinstance(value, list) else []
