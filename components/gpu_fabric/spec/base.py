"""The base of every configuration model, and the one error type configuration problems raise.

Configuration arrives as camelCase YAML (``Pulumi.<stack>.yaml``) or as TypedDict args from
another team's program. Every model therefore accepts camelCase aliases and snake_case names,
forbids unknown keys (a typo must not silently become a default), and is frozen so a validated
configuration cannot drift between planning and registration.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.alias_generators import to_camel


class SpecModel(BaseModel):
    """Base class: camelCase aliases, unknown keys refused, immutable after validation."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
        str_strip_whitespace=True,
    )


def format_path(location: Sequence[Any]) -> str:
    """Render a pydantic error location as ``modelDeployments[0].roles[1].resources.interface``."""
    path = ""
    for part in location:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path or "<root>"


class ConfigError(ValueError):
    """One or more configuration problems, each tied to the field path that caused it."""

    def __init__(self, problems: Iterable[tuple[str, str]]):
        self.problems: list[tuple[str, str]] = sorted(set(problems))
        super().__init__(self.describe())

    def describe(self) -> str:
        """Return one line per problem: ``path: message``."""
        lines = [f"{path}: {message}" for path, message in self.problems]
        heading = "invalid gpu-fabric configuration"
        return heading + (":\n  " + "\n  ".join(lines) if lines else "")

    @classmethod
    def from_validation_error(cls, error: ValidationError, prefix: Sequence[Any] = ()) -> "ConfigError":
        """Convert a pydantic ``ValidationError`` (camelCase locations) into a ``ConfigError``."""
        problems = []
        for item in error.errors(include_url=False):
            location = [*prefix, *_without_union_tags(item["loc"])]
            problems.append((format_path(location), _plain_message(item)))
        return cls(problems)


def _without_union_tags(location: Sequence[Any]) -> list[Any]:
    # pydantic adds the chosen union member or a "function-after[...]" marker to the location;
    # users never wrote those keys, so they must not appear in the path we show them.
    return [part for part in location if not (isinstance(part, str) and ("[" in part or part in {"str", "int"}))]


def _plain_message(item: dict[str, Any]) -> str:
    message = str(item["msg"])
    for prefix in ("Value error, ", "Assertion failed, "):
        if message.startswith(prefix):
            message = message[len(prefix):]
    if item.get("type") == "extra_forbidden":
        message = "unknown field (check the spelling; fields are camelCase)"
    return message
