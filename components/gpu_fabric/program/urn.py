"""Resource URNs exactly as the Pulumi engine computes them.

``urn:pulumi:<stack>::<project>::<qualified type>::<name>``, where the qualified type is the
parent's whole qualified type, ``$``, then the resource's own type -- except under the root stack,
whose type is never prefixed. This mirrors ``NewURN`` in pulumi/pulumi
``sdk/go/common/resource/urn.go`` (the step generator passes the parent URN's ``QualifiedType()``).
Pulumi's Python mock monitor prefixes only the parent's *last* type and also prefixes
``pulumi:pulumi:Stack``, so its URNs never match a real preview or state; ``gpu_fabric.program.render``
uses this module instead.
"""

from __future__ import annotations

from typing import NamedTuple

ROOT_STACK_TYPE = "pulumi:pulumi:Stack"
URN_PREFIX = "urn:pulumi:"
NAME_DELIMITER = "::"
TYPE_DELIMITER = "$"


class UrnParts(NamedTuple):
    """The four parts of a URN."""

    stack: str
    project: str
    qualified_type: str
    name: str

    @property
    def type(self) -> str:
        """The resource's own type token (the last element of the qualified type)."""
        return self.qualified_type.split(TYPE_DELIMITER)[-1]


def parse_urn(urn: str) -> UrnParts:
    """Split a URN; ``ValueError`` when it is not one."""
    if not urn.startswith(URN_PREFIX):
        raise ValueError(f"not a Pulumi URN: {urn!r}")
    parts = urn[len(URN_PREFIX):].split(NAME_DELIMITER, 3)
    if len(parts) != 4:
        raise ValueError(f"not a Pulumi URN: {urn!r}")
    return UrnParts(*parts)


def engine_urn(stack: str, project: str, type_: str, name: str, parent_urn: str = "") -> str:
    """The URN the engine gives a resource of ``type_`` named ``name`` under ``parent_urn``."""
    qualified = type_
    if parent_urn:
        parent_type = parse_urn(parent_urn).qualified_type
        if parent_type != ROOT_STACK_TYPE:
            qualified = parent_type + TYPE_DELIMITER + type_
    return f"{URN_PREFIX}{stack}{NAME_DELIMITER}{project}{NAME_DELIMITER}{qualified}{NAME_DELIMITER}{name}"
