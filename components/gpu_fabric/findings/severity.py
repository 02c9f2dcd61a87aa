"""How grave one finding is: refused, or admitted with a word of warning."""

from __future__ import annotations

from enum import StrEnum


class Severity(StrEnum):
    """The two verdicts every rule gives (the operator's admission warnings, lint's ``WARNING`` lines)."""

    ERROR = "error"
    """Refused: the object, configuration or resource must change."""
    WARNING = "warning"
    """Admitted, but something is likely wrong or without effect: reported, never refused."""
