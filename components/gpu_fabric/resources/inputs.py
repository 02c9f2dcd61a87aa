"""Component arguments that may hold ``pulumi.Output``s: validate what is known now, the rest on resolve.

A component validates its arguments with the same pure function whatever their origin (the
spec models, the EFA planner, the transfer analysis). Values that come from other resources
(a cluster's name, a subnet's id, an image built elsewhere) are unknown when the component is
constructed, so :class:`DeferredInputs` stands them in with unique marker strings, validates the
whole configuration with those markers, and puts each ``Output`` back wherever its marker landed
in the resource inputs the builders produced. When an ``Output`` resolves, the same validation runs
again with the real value and an :class:`InvalidInputError` (a ``pulumi.InputPropertiesError``)
names the property.

Values that decide how many resources exist (pools, namespaces, instance types ...) must be plain:
an ``Output`` there is refused at once with the property path and the reason.

This is every component's prelude: each checks its arguments through :meth:`DeferredInputs.validate`
(or :func:`validated`, for a component whose arguments need no markers) before it registers anything,
and every refusal is an :class:`InvalidInputError` naming the component and the property.
"""

import itertools
import secrets
from dataclasses import replace
from typing import Any, Awaitable, Callable, Iterable, Mapping, Optional, Sequence, TypeVar

import pulumi

from gpu_fabric.aws import snake_case
from gpu_fabric.config.base import ConfigError, Problem, as_finding, format_path
from gpu_fabric.config.markers import marker_token

T = TypeVar("T")

Path = tuple[Any, ...]
"""A property path: keys and list indices, e.g. ``("roles", 0, "image")``."""

ANY = "*"
"""In a path pattern: any list index or map key."""


class InvalidInputError(ConfigError, pulumi.InputPropertiesError):
    """Invalid component arguments, each problem tied to its property path.

    A ``ConfigError`` (so a ``ValueError``) for Python callers, and a ``pulumi.InputPropertiesError``
    whose ``errors`` carry the property paths, for the engine and other languages.
    """

    def __init__(self, problems: Iterable[Problem], component: str = "component"):
        ConfigError.__init__(self, problems)
        self.message = f"invalid arguments of {component}:\n  " + "\n  ".join(
            f"{path}: {reason}" for path, reason in self.pairs)
        self.errors = [{"property_path": path, "reason": reason} for path, reason in self.pairs]
        self.args = (self.message,)

    def __str__(self) -> str:
        return self.message


def refusal(component: str, error: ValueError, default_path: str = "<root>",
            describe: Callable[[str], str] = lambda text: text) -> InvalidInputError:
    """``error`` as the component's :class:`InvalidInputError`, each problem at the property it names.

    A ``ConfigError`` keeps its findings (and their paths); a ``ValueError`` whose ``problems`` are
    ``"field: reason"`` lines (``NodeGroupInputError``) is placed at each field; any other, or a message
    ``"field: reason"``, at the field it names, else at ``default_path``. ``describe`` rewrites each message
    (a marker standing for an ``Output`` becomes the property it was given at).
    """
    problems: list[Problem]
    if isinstance(error, ConfigError):
        problems = list(error.problems)
    else:
        problems = [_at_field(str(line), default_path) for line in getattr(error, "problems", None) or [str(error)]]
    findings = [as_finding(problem) for problem in problems]
    return InvalidInputError([replace(finding, message=describe(finding.message)) for finding in findings], component)


def validated(component: str, check: Callable[[], T], default_path: str = "<root>") -> T:
    """The prelude of every component: ``check()``, or its refusal as the component's :class:`InvalidInputError`
    (a ``pulumi.InputPropertiesError`` naming the property) before anything is registered.

    :meth:`DeferredInputs.validate` is the same for arguments that may hold ``Output``s.
    """
    try:
        return check()
    except ValueError as error:
        raise refusal(component, error, default_path) from error


def is_unresolved(value: Any) -> bool:
    """True for values only known later: ``Output``s and awaitables (what ``pulumi.Input`` admits besides ``T``)."""
    return isinstance(value, pulumi.Output) or isinstance(value, Awaitable)


# A marker has the shape the property's own syntax check accepts (gpu_fabric.config.syntax), so validation
# with markers checks everything except the values still unknown; those are checked on resolve.
_MARKER_SHAPES = {
    "vpc_id": "vpc-{token}",
    "subnet_id": "subnet-{token}",
    "security_group_ids": "sg-{token}",
    "cluster_security_group_id": "sg-{token}",
    "capacity_reservation_id": "cr-{token}",
    "node_role_arn": "arn:aws:iam::000000000000:role/{token}",
    "availability_zone": "zz-{token}-1a",
    "kubernetes_version": "0.{digits}",
}


def _matches(path: Path, pattern: Path) -> bool:
    return len(path) == len(pattern) and all(
        p == ANY or p == k or (isinstance(k, str) and p == snake_case(k)) for k, p in zip(path, pattern))


def _display(path: Path) -> str:
    return format_path(path)


def _at_field(problem: str, default_path: str) -> tuple[str, str]:
    """``"instanceTypes: reason"`` -> ``("instanceTypes", "reason")``; other text at ``default_path``."""
    field, colon, reason = problem.partition(": ")
    if colon and field.replace(".", "").isidentifier():
        return field, reason
    return default_path, problem


def _unknown_keys(args: Mapping[str, Any], args_type: type) -> list[tuple[str, str]]:
    # Nested keys are the spec models' business (they refuse unknown fields); a misspelt top-level
    # key would otherwise be ignored silently and its default used.
    known = set(getattr(args_type, "__required_keys__", set())) | set(getattr(args_type, "__optional_keys__", set()))
    problems = []
    for key in args:
        if key not in known:
            close = snake_case(str(key))
            hint = f" (did you mean {close}?)" if close in known else f" (known: {', '.join(sorted(known))})"
            problems.append((str(key), f"unknown argument of {args_type.__name__}{hint}"))
    return problems


def _without_secret(text: str, secret: Any) -> str:
    """``text`` with every string of the secret ``secret`` (a value, or the strings in a list or mapping) as
    ``[secret]``: validators quote the value they refuse, and a refusal is printed and recorded."""
    found: list[str] = []
    pending = [secret]
    while pending:
        value = pending.pop()
        if isinstance(value, str) and value:
            found.append(value)
        elif isinstance(value, Mapping):
            pending.extend(value.values())
        elif isinstance(value, (list, tuple)):
            pending.extend(value)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            found.append(str(value))
    for value in sorted(found, key=len, reverse=True):
        text = text.replace(value, "[secret]")
    return text


class DeferredInputs:
    """The arguments of one component with every ``Output`` replaced by a marker.

    ``deferrable``: path patterns (``ANY`` for an index or key) where an ``Output`` is accepted.
    ``plain_reasons``: for a top-level key that must be plain, why (shown when an ``Output`` is given).
    """

    def __init__(
        self,
        component: str,
        args: Mapping[str, Any],
        args_type: type,
        deferrable: Sequence[Path],
        plain_reasons: Mapping[str, str],
    ) -> None:
        self.component = component
        self._token = secrets.token_hex(4)
        self._counter = itertools.count()
        self._deferred: dict[str, tuple[Path, pulumi.Output[Any]]] = {}
        self._checked: dict[str, pulumi.Output[Any]] = {}
        # One marker per Output object: the same Output given at two properties (one cluster's name
        # for two pools) is one value, and compares equal to itself while validation runs.
        self._marker_of: dict[int, str] = {}
        self._given: list[Any] = []  # keeps each given Output alive, so its id() stays its own
        problems: list[tuple[str, str]] = _unknown_keys(args, args_type)
        self.values: dict[str, Any] = self._extract(dict(args), (), deferrable, plain_reasons, problems)
        """The arguments with markers where ``Output``s were: what validation reads."""
        if problems:
            raise InvalidInputError(problems, component)

    @property
    def deferred_paths(self) -> list[Path]:
        """Paths of the arguments that are ``Output``s."""
        return [path for path, _ in self._deferred.values()]

    def _marker(self, path: Path) -> str:
        number = next(self._counter)
        token = marker_token(int(self._token, 16), number)
        field = next((str(part) for part in reversed(path) if isinstance(part, str)), "")
        shape = _MARKER_SHAPES.get(snake_case(field), "{token}")
        return shape.format(token=token, digits=f"{int(self._token, 16)}{number:04d}")

    def is_deferred(self, value: Any) -> bool:
        """True for a marker standing in for an ``Output``: checks that compare the value itself must wait."""
        return isinstance(value, str) and value in self._deferred

    def _extract(self, value: Any, path: Path, deferrable: Sequence[Path],
                 plain_reasons: Mapping[str, str], problems: list[tuple[str, str]]) -> Any:
        if is_unresolved(value):
            if not any(_matches(path, pattern) for pattern in deferrable):
                reason = plain_reasons.get(path[0], "") if path else ""
                problems.append((_display(path), "must be a plain value, not an Output" + (f": {reason}" if reason else "")))
                return None
            known = self._marker_of.get(id(value))
            if known is not None:
                return known
            marker = self._marker(path)
            self._marker_of[id(value)] = marker
            self._given.append(value)
            self._deferred[marker] = (path, pulumi.Output.from_input(value))
            return marker
        if isinstance(value, Mapping):
            return {key: self._extract(item, (*path, key), deferrable, plain_reasons, problems) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [self._extract(item, (*path, i), deferrable, plain_reasons, problems) for i, item in enumerate(value)]
        return value

    def describe(self, text: str) -> str:
        """``text`` with each marker replaced by the property whose ``Output`` it stands for."""
        for marker, (path, _) in self._deferred.items():
            if marker in text:
                text = text.replace(marker, f"<Output given at {_display(path)}>")
        return text

    def validate(self, check: Callable[[dict[str, Any]], T], default_path: str = "<root>") -> T:
        """``check(values)``; a refusal becomes an :class:`InvalidInputError` of this component.

        A ``ConfigError`` keeps its paths; a ``ValueError`` whose ``problems`` are ``"field: reason"``
        lines (``NodeGroupInputError``) is placed at each field; any other at ``default_path``.
        Messages name the property of an ``Output`` rather than the marker that stood for it. The
        original error stays the ``__cause__``.
        """
        try:
            return check(self.values)
        except ValueError as error:
            raise refusal(self.component, error, default_path, self.describe) from error

    def substitute(self, marker: str, resolved: Any) -> dict[str, Any]:
        """The arguments with one marker replaced by its resolved value (the others stay markers)."""

        def walk(value: Any) -> Any:
            if isinstance(value, str) and value == marker:
                return resolved
            if isinstance(value, Mapping):
                return {key: walk(item) for key, item in value.items()}
            if isinstance(value, list):
                return [walk(item) for item in value]
            return value

        result: dict[str, Any] = walk(self.values)
        return result

    def check_on_resolve(self, validate: Callable[[dict[str, Any]], object]) -> None:
        """Run ``validate`` again on each ``Output``'s resolved value; refuse it naming the property.

        ``validate`` is the very function that checked the arguments with markers; it raises
        ``ConfigError`` (or ``ValueError``) on a problem.
        """
        for marker, (path, output) in self._deferred.items():
            # Whether the Output is a secret travels beside its value: a refusal must not quote a secret.
            secret: pulumi.Output[bool] = pulumi.Output.from_input(output.is_secret())  # type: ignore[arg-type]
            checker = self._checker(marker, path, validate)

            def check_pair(pair: list[Any], check: Callable[[Any, bool], Any] = checker) -> Any:
                return check(pair[0], bool(pair[1]))

            self._checked[marker] = pulumi.Output.all(output, secret).apply(check_pair)

    def _checker(self, marker: str, path: Path, validate: Callable[[dict[str, Any]], object]) -> Callable[[Any, bool], Any]:
        def check(resolved: Any, secret: bool) -> Any:
            if resolved is None:
                raise InvalidInputError([(_display(path), "resolved to no value")], self.component)
            try:
                validate(self.substitute(marker, resolved))
            except ConfigError as error:
                problems: list[Problem] = list(error.problems)
                if secret:
                    problems = [replace(finding, message=_without_secret(finding.message, resolved))
                                for finding in error.problems]
                raise InvalidInputError(problems, self.component) from None
            except ValueError as error:
                reason = _without_secret(str(error), resolved) if secret else str(error)
                raise InvalidInputError([(_display(path), reason)], self.component) from None
            return resolved

        return check

    def restore(self, value: T) -> T:
        """``value`` (resource inputs or child arguments) with each marker replaced by its ``Output``.

        The checked ``Output`` when :meth:`check_on_resolve` ran, so a resource that reads the value
        waits for its validation. A marker inside a longer string means a builder embedded the value
        in text, which an ``Output`` cannot be: that property must be plain.
        """
        result: T = self._restore(value)
        return result

    def _restore(self, value: Any) -> Any:
        if isinstance(value, str):
            if value in self._deferred:
                return self._checked.get(value) or self._deferred[value][1]
            embedded = next((marker for marker in self._deferred if marker in value), None)
            if embedded is not None:
                path = self._deferred[embedded][0]
                raise InvalidInputError([(_display(path), "must be a plain value, not an Output: it is written into text")],
                                        self.component)
            return value
        if isinstance(value, Mapping):
            return {key: self._restore(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [self._restore(item) for item in value]
        return value

    def get(self, key: str, default: Optional[Any] = None) -> Any:
        """A top-level argument as validation sees it (a marker where an ``Output`` was)."""
        return self.values.get(key, default)
