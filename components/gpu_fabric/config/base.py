"""The base of every configuration model, and the one error type configuration problems raise.

Configuration arrives as camelCase YAML (``Pulumi.<stack>.yaml``) or as TypedDict args from
another team's program. Every model therefore accepts camelCase aliases and snake_case names,
forbids unknown keys (a typo must not silently become a default), and is frozen so a validated
configuration cannot drift between planning and registration.
"""

from __future__ import annotations

import inspect
import math
import re
import types
import typing
from typing import Any, Iterable, Mapping, Sequence, Union

from pydantic import BaseModel, ConfigDict, ValidationError, ValidationInfo, field_validator
from pydantic.alias_generators import to_camel

from gpu_fabric.config.suggestions import did_you_mean
from gpu_fabric.findings import EXIT_POLICY_REFUSAL, EXIT_UNUSABLE_INPUT, FieldPath, Finding, Rule

# Every number crosses Pulumi's wire as a double (google.protobuf.Value), so a larger integer
# arrives changed; no count or size of a fabric comes anywhere near it.
MAX_EXACT_INTEGER = 2**53


class SpecModel(BaseModel):
    """Base class: camelCase aliases, unknown keys refused, immutable after validation.

    A boolean is never accepted where a number belongs: YAML reads ``nodeCount: yes`` as ``True``,
    and pydantic would quietly turn that into ``1``.
    """

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
        str_strip_whitespace=True,
        defer_build=True,
        # Each field's attribute docstring is its description in `gpu-fabric schema` and
        # docs/configuration.md (tests/config/test_schema.py: every field has one). They are read
        # from the source only when a schema is made (config/json_schema.field_descriptions), not
        # with pydantic's use_attribute_docstrings, which reads every model's source at import.
    )

    @field_validator("*", mode="before")
    @classmethod
    def _json_types_only(cls, value: Any, info: ValidationInfo) -> Any:
        field = cls.model_fields.get(info.field_name or "")
        problem = _scalar_type_problem(field.annotation, value) if field is not None else None
        if problem is not None:
            raise ValueError(problem)
        return value


# pydantic reads a field validator's signature for every field it applies to (``inspect_validator`` in
# pydantic/_internal/_decorators.py): 634 times for this one over the configuration models, 5 of the 55 ms of a
# process's first load_config. Kept on the function, its signature is read back at once (``inspect.signature``
# returns a function's ``__signature__``).
_JSON_TYPES_ONLY = SpecModel.__dict__["_json_types_only"].__func__
setattr(_JSON_TYPES_ONLY, "__signature__", inspect.signature(_JSON_TYPES_ONLY))


def _type_options(annotation: Any) -> tuple[Any, ...]:
    """The alternatives of a ``Union``/``Optional``/``Annotated`` annotation (itself otherwise)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _type_options(typing.get_args(annotation)[0])
    if origin is typing.Union or origin is types.UnionType:
        return tuple(option for arg in typing.get_args(annotation) for option in _type_options(arg))
    return (annotation,)


def _takes_strings(options: tuple[Any, ...]) -> bool:
    return any(option is str or option is Any or (typing.get_origin(option) is typing.Literal
                                                  and any(isinstance(arg, str) for arg in typing.get_args(option)))
               for option in options)


def _scalar_type_problem(annotation: Any, value: Any) -> str | None:
    """Why ``value`` is not of the JSON type ``annotation`` wants (also inside lists), or ``None``.

    Strict, as the JSON Schema (``gpu-fabric schema``) and docs/configuration.md say: pydantic's lax
    mode would take ``nodeCount: "2"``, ``eksAutoMode: "no"`` or ``0``, and YAML's ``nodeCount: yes``
    (``True``) as ``1``. ``pulumi config set --path`` writes ``true``/``false`` as booleans and integers
    as numbers (pulumi.com/docs/iac/cli/commands/pulumi_config_set), so what it writes passes.
    """
    options = _type_options(annotation)
    wants_number = bool({int, float} & set(options))
    if isinstance(value, bool):
        if wants_number and bool not in options:
            return "expected a number, not a boolean (true/false)"
        return None
    if isinstance(value, str):
        if _takes_strings(options):
            return None
        if wants_number:
            return f"expected a number, not the string {value[:32]!r}: write it without quotes"
        if bool in options:
            return f"expected true or false, not the string {value[:32]!r}"
        return None
    if isinstance(value, (int, float)) and bool in options and not wants_number and not _takes_strings(options):
        return f"expected true or false, not the number {value!r}"
    if isinstance(value, list):
        items = [typing.get_args(option)[0] for option in options
                 if typing.get_origin(option) is list and typing.get_args(option)]
        for item_type in items:
            for item in value:
                problem = _scalar_type_problem(item_type, item)
                if problem is not None:
                    return problem
    return None


def _numbers(value: Any, location: Sequence[Any] = ()) -> Iterable[tuple[Sequence[Any], int | float]]:
    """``(location, number)`` for every number (not a boolean) inside nested mappings and lists."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        yield location, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _numbers(item, [*location, key])
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            yield from _numbers(item, [*location, index])


def number_problems(value: Any, location: Sequence[Any] = ()) -> Iterable[Finding]:
    """Numbers no configuration may hold, by path: NaN, infinities, and integers beyond 2**53."""
    for where, number in _numbers(value, location):
        if isinstance(number, float) and not math.isfinite(number):
            yield Finding.of(CONFIGURATION, FieldPath.from_location(where), f"{number!r} is not a finite number")
        elif abs(number) > MAX_EXACT_INTEGER:
            yield Finding.of(CONFIGURATION, FieldPath.from_location(where),
                             f"{number:g} is too large (numbers beyond 2**53 do not survive Pulumi's wire)")


FINITE_NUMBERS = Rule(
    "finite-numbers", "no resource input is NaN or infinite: no API takes it and JSON cannot carry it",
    source="https://protobuf.dev/programming-guides/json/ (google.protobuf.Value: NaN and Infinity are not "
           "JSON values) and gpu-fabric",
    policy="finite-numbers")
"""A number that is NaN or infinite in what a resource is given (a component computed it, or a program did)."""


def non_finite_numbers(value: Any, location: Sequence[Any] = ()) -> Iterable[Finding]:
    """Every NaN or infinite number in ``value`` (a resource's inputs), by path, as findings of :data:`FINITE_NUMBERS`."""
    for where, number in _numbers(value, location):
        if isinstance(number, float) and not math.isfinite(number):
            yield Finding.of(FINITE_NUMBERS, FieldPath.from_location(where),
                             f"{number!r} is not a finite number (nothing downstream can take it)")


def field_problem(model: str, path: str, message: str, value: Any = None) -> ValidationError:
    """A problem a model-wide check finds at one field, raised at that field's path (``nodeCount``,
    ``topology.policyOptions``, ``taints[1]``) below the model's own location, so the message names the
    field, not the whole object. Raise it from a ``model_validator``; pydantic prefixes the location."""
    from pydantic_core import InitErrorDetails, PydanticCustomError

    location: list[str | int] = []
    for part in path.split("."):
        name, _, rest = part.partition("[")
        location.append(name)
        location.extend(int(index) for index in re.findall(r"(\d+)\]", "[" + rest) if rest)
    # The message is a context value, not the template: braces in it are not placeholders.
    error = PydanticCustomError("field_problem", "{message}", {"message": message})
    return ValidationError.from_exception_data(model, [InitErrorDetails(type=error, loc=tuple(location), input=value)])


def format_path(location: Sequence[Any]) -> str:
    """Render a pydantic error location as ``modelDeployments[0].roles[1].resources.interface``."""
    path = ""
    for part in location:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path or "<root>"


CONFIGURATION = Rule(
    "configuration", "every field of the configuration (or of a component's arguments) has a value it takes",
    source="components/gpu_fabric/config (the spec models)")
"""The rule of the configuration's own fields: types, ranges, names, unknown keys. A refusal is unusable input."""

Problem = Union[Finding, tuple[str, str]]
"""A configuration problem: a :class:`~gpu_fabric.findings.Finding`, or ``(path, message)`` for one of
:data:`CONFIGURATION`."""


def as_finding(problem: Problem) -> Finding:
    """``problem`` as a finding (a ``(path, message)`` pair is one of :data:`CONFIGURATION`)."""
    if isinstance(problem, Finding):
        return problem
    path, message = problem
    return Finding.of(CONFIGURATION, path, message)


def problem_text(finding: Finding) -> str:
    """How a configuration problem reads after its path: the message, the policy of the pack that refuses
    the same thing at preview when one does, and the rule's id, as ``lint`` and the pack end their lines
    (``... (policy fabric-pool-topology) [fabric-pool-topology]``; docs/rules.md lists every id)."""
    if finding.is_policy_refusal and finding.policy:
        return f"{finding.message} (policy {finding.policy}) {finding.rule_tag}"
    return f"{finding.message} {finding.rule_tag}"



def path_text(finding: Finding) -> str:
    """The finding's configuration path as printed (``<root>`` for the configuration as a whole)."""
    return str(finding.path) or "<root>"


class ConfigError(ValueError):
    """One or more configuration problems (:class:`~gpu_fabric.findings.Finding`), each at the field path
    that caused it.

    Its exit status is a property of its findings (:attr:`exit_code`): 1 when a mandatory policy of the pack
    refuses every one of them (well-formed input, refused as the pack would refuse it at preview), else 2.
    """

    def __init__(self, problems: Iterable[Problem]):
        unique: dict[tuple[str, str], Finding] = {}
        for problem in problems:
            finding = as_finding(problem)
            unique.setdefault((path_text(finding), problem_text(finding)), finding)
        self.problems: list[Finding] = [unique[key] for key in sorted(unique)]
        super().__init__(self.describe())

    @property
    def pairs(self) -> list[tuple[str, str]]:
        """``(path, message)`` of every problem, as :meth:`describe` prints them."""
        return [(path_text(finding), problem_text(finding)) for finding in self.problems]

    def describe(self) -> str:
        """Return one line per problem: ``path: message``."""
        lines = [f"{path}: {message}" for path, message in self.pairs]
        heading = "invalid gpu-fabric configuration"
        return heading + (":\n  " + "\n  ".join(lines) if lines else "")

    @property
    def is_policy_refusal(self) -> bool:
        """Every problem is an error a mandatory policy of the pack refuses (:attr:`Finding.is_policy_refusal`)."""
        return bool(self.problems) and all(finding.is_policy_refusal for finding in self.problems)

    @property
    def exit_code(self) -> int:
        """1 for a refusal by mandatory policies alone, 2 for unusable input."""
        return EXIT_POLICY_REFUSAL if self.is_policy_refusal else EXIT_UNUSABLE_INPUT

    @property
    def policies(self) -> list[str]:
        """The refusing policies' names, sorted."""
        return sorted({finding.policy for finding in self.problems if finding.is_policy_refusal and finding.policy})

    @classmethod
    def from_validation_error(cls, error: ValidationError, prefix: Sequence[Any] = (),
                              model: type[BaseModel] | None = None) -> "ConfigError":
        """Convert a pydantic ``ValidationError`` (camelCase locations) into a ``ConfigError``.

        ``model`` (the model that was validated) lets an unknown field name its closest known one.
        """
        problems = []
        for item in error.errors(include_url=False):
            location = [*prefix, *_without_union_tags(item["loc"])]
            message = _plain_message(dict(item))
            if item.get("type") == "extra_forbidden" and model is not None and item["loc"]:
                word = item["loc"][-1]
                if isinstance(word, str):
                    message += did_you_mean(word, field_names_at(model, item["loc"][:-1]))
            problems.append(Finding.of(CONFIGURATION, FieldPath.from_location(location), message))
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
    if item.get("type") in ("literal_error", "enum") and isinstance(item.get("input"), str):
        # pydantic-core spells the choices "'a', 'b' or 'c'" in ctx.expected.
        choices = re.findall(r"'([^']*)'", str((item.get("ctx") or {}).get("expected", "")))
        message += did_you_mean(item["input"], choices)
    return message


def field_names_at(model: type[BaseModel], location: Sequence[Any]) -> list[str]:
    """The camelCase field names of the model(s) found at ``location`` below ``model``.

    ``location`` is pydantic's raw error location: field names or aliases, list indexes, and the
    class names pydantic adds for union members, which select among the union's models.
    """
    candidates = list(_type_options(model))
    for part in location:
        following: list[Any] = []
        for candidate in candidates:
            origin = typing.get_origin(candidate)
            if isinstance(part, int) and origin in (list, tuple) and typing.get_args(candidate):
                following.extend(_type_options(typing.get_args(candidate)[0]))
            elif isinstance(part, str) and origin is dict and len(typing.get_args(candidate)) == 2:
                following.extend(_type_options(typing.get_args(candidate)[1]))
            elif isinstance(part, str) and isinstance(candidate, type) and issubclass(candidate, BaseModel):
                if candidate.__name__ == part:  # a union member's tag: this member, same level
                    following.append(candidate)
                    continue
                for name, field in candidate.model_fields.items():
                    if part in (name, field.alias):
                        following.extend(_type_options(field.annotation))
        candidates = following
    names: list[str] = []
    for candidate in candidates:
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            names.extend(field.alias or name for name, field in candidate.model_fields.items())
    return list(dict.fromkeys(names))
