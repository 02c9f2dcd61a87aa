""""Did you mean ...?" for a misspelt name: one helper for configuration keys, enum values and
instance types, so every command suggests the same way.

Uses :func:`difflib.get_close_matches` (the standard library's Ratcliff/Obershelp similarity)
with its default cutoff of 0.6, case-insensitively, and suggests at most one name: a list of
guesses reads as noise.
"""

from __future__ import annotations

import difflib
from typing import Iterable, Optional


def closest(word: str, choices: Iterable[str]) -> Optional[str]:
    """The choice most like ``word`` (ignoring case), or ``None`` when nothing is close."""
    options = [choice for choice in dict.fromkeys(choices) if choice != word]
    by_folded = {option.lower(): option for option in reversed(options)}
    matches = difflib.get_close_matches(word.lower(), list(by_folded), n=1)
    return by_folded[matches[0]] if matches else None


def did_you_mean(word: str, choices: Iterable[str], *, prefix: str = "; ") -> str:
    """``"; did you mean 'standalone'?"`` for the closest choice, ``""`` when none is close."""
    match = closest(word, choices)
    return f"{prefix}did you mean {match!r}?" if match else ""
