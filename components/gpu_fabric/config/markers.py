"""Marker strings: what stands in for a ``pulumi.Output`` while a configuration is validated.

A component validates its arguments before their ``Output``s resolve (``gpu_fabric.resources.inputs``
puts a marker of the property's own shape where each ``Output`` was). Checks below the Pulumi layer
that compare values across objects (two pools' zones) must recognise such a marker and wait for the
real value, so the marker's spelling is written here, once, below every check that reads it.
"""

from __future__ import annotations

import re
from typing import Any

_MARKER_TOKEN = re.compile(r"gfout[a-p]+n[a-p]+x")


def marker_token(session: int, number: int) -> str:
    """The token of marker ``number`` of one validation ``session``: letters only (``a``-``p``)."""
    return f"gfout{_letters(session)}n{_letters(number)}x"


def is_marker(value: Any) -> bool:
    """True for a value that stands in for an ``Output`` (in any ``DeferredInputs``' shape).

    Checks that compare values across objects (two pools' zones) skip such values: they are compared
    when known, by the planner that runs again on resolution, or not at all.
    """
    return isinstance(value, str) and bool(_MARKER_TOKEN.search(value))


def _letters(number: int) -> str:
    # Letters only (a-p for each hex digit): valid in every name shape, including AZ region words.
    return "".join(chr(ord("a") + int(digit, 16)) for digit in f"{number:x}")
