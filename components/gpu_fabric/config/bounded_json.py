"""JSON read from a command line or a value, within bounds: nesting depth and the digits of a number.

``json.loads`` recurses once per nesting level (100,000 ``[`` raise ``RecursionError``) and turns every
integer into an ``int``, which Python refuses beyond 4,300 digits with a ``ValueError`` that is no
``JSONDecodeError`` (sys.int_info.str_digits_check_threshold). :func:`loads` refuses both up front
with a :class:`JSONBoundsError` -- a ``ValueError`` saying what is out of bounds -- so a reader handles
one exception.
"""

from __future__ import annotations

import json
from typing import Any

MAX_DEPTH = 100
"""Nesting levels a JSON value may have (the stack file's limit for YAML flow collections)."""
MAX_NUMBER_DIGITS = 100
"""Characters a JSON number may have: far beyond any setting, far below what ``int()`` refuses."""


class JSONBoundsError(ValueError):
    """The text is not JSON, or is JSON beyond the bounds; the message says which, never quoting it whole."""


def _depth(text: str) -> int:
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > MAX_DEPTH:
                    return deepest
        elif char in "]}":
            depth -= 1
    return deepest


def _number(text: str, kind: Any) -> Any:
    if len(text) > MAX_NUMBER_DIGITS:
        raise JSONBoundsError(f"a number of {len(text):,} characters (at most {MAX_NUMBER_DIGITS})")
    return kind(text)


def loads(text: str) -> Any:
    """``json.loads(text)`` within :data:`MAX_DEPTH` and :data:`MAX_NUMBER_DIGITS`; raises :class:`JSONBoundsError`."""
    if _depth(text) > MAX_DEPTH:
        raise JSONBoundsError(f"nested more than {MAX_DEPTH} levels deep")
    try:
        return json.loads(text, parse_int=lambda digits: _number(digits, int),
                          parse_float=lambda digits: _number(digits, float))
    except JSONBoundsError:
        raise
    except json.JSONDecodeError as error:
        raise JSONBoundsError(f"not JSON ({error.msg} at column {error.colno})") from None
    except (ValueError, RecursionError) as error:  # not reached within the bounds; kept as the one exception
        raise JSONBoundsError(f"not JSON ({error})") from None
