"""A structured field path: the segments of ``pools[0].topology.policy`` and its one rendering.

Every verdict names the field it is about. The segments are kept apart (a field name, a list index,
a map key) so that a path can be moved under another (a manifest's ``spec.roles[0]`` under the
configuration item ``modelDeployments[1]``) without editing text; :meth:`FieldPath.__str__` is the one
place that spells a path, exactly as gpu-fabric has always printed it:

* names joined by dots: ``pools[0].topology.policy``;
* list indices in brackets: ``containers[0]``;
* map keys that hold dots or slashes in brackets, quoted or bare as the rule that names them chose:
  ``resources.limits["vpc.amazonaws.com/efa"]``, ``nodeSelector[kubernetes.io/arch]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Sequence, Union


@dataclass(frozen=True)
class Key:
    """A map key written in brackets (``["vpc.amazonaws.com/efa"]`` quoted, ``[kubernetes.io/arch]`` bare)."""

    name: str
    quoted: bool = True

    def __str__(self) -> str:
        return f'["{self.name}"]' if self.quoted else f"[{self.name}]"


Segment = Union[str, int, Key]
"""A field name, a list index, or a bracketed map key."""


class FieldPath(str):
    """The path of one field inside a configuration, a manifest or a resource's inputs.

    A path *is* its rendering (a ``str``: it compares, hashes, prints and sorts as the text users read),
    and it keeps its :attr:`segments`, so that moving it under another path or asking for its first
    field never parses text. The empty path is the object (or the configuration) as a whole.
    """

    segments: tuple[Segment, ...]

    def __new__(cls, segments: Iterable[Segment] = ()) -> "FieldPath":
        parts = tuple(segments)
        path = super().__new__(cls, _render(parts))
        path.segments = parts
        return path

    def __getnewargs__(self) -> tuple[tuple[Segment, ...]]:  # type: ignore[override]
        # copy and pickle rebuild the path from its segments, not from its text
        return (self.segments,)

    @classmethod
    def of(cls, *segments: Segment) -> "FieldPath":
        """``FieldPath.of("pools", 0, "topology")``."""
        return cls(segments)

    @classmethod
    def from_location(cls, location: Sequence[Any]) -> "FieldPath":
        """A pydantic error location (names and indices) as a path."""
        return cls(part if isinstance(part, (int, Key)) else str(part) for part in location)

    @classmethod
    def parse(cls, text: str) -> "FieldPath":
        """The path ``text`` spells; its rendering is ``text`` again (text no path spells is one segment)."""
        if isinstance(text, FieldPath):
            return text
        parsed = cls(_segments(text))
        return parsed if parsed == text else cls((text,))

    def __truediv__(self, other: "FieldPath | Segment") -> "FieldPath":
        """``prefix / "spec" / 0``: this path followed by another path's segments, or by one segment."""
        if isinstance(other, FieldPath):
            return FieldPath(self.segments + other.segments)
        return FieldPath((*self.segments, other))

    def child(self, *segments: Segment) -> "FieldPath":
        """This path with ``segments`` appended."""
        return FieldPath((*self.segments, *segments))

    def under(self, prefix: "FieldPath | str") -> "FieldPath":
        """This path placed under ``prefix`` (``spec.x`` under ``pools[0]``: ``pools[0].spec.x``)."""
        return as_path(prefix) / self

    def has_prefix(self, prefix: "FieldPath") -> bool:
        """True when ``prefix``'s segments begin this path."""
        return self.segments[:len(prefix.segments)] == prefix.segments

    def relative_to(self, prefix: "FieldPath") -> "FieldPath":
        """The segments after ``prefix`` (this path unchanged when it does not start with it)."""
        return FieldPath(self.segments[len(prefix.segments):]) if self.has_prefix(prefix) else self

    @property
    def head(self) -> Segment | None:
        """The first segment (``None`` for the whole object)."""
        return self.segments[0] if self.segments else None

    @property
    def tail(self) -> "FieldPath":
        """The path without its first segment."""
        return FieldPath(self.segments[1:])


def _render(segments: Sequence[Segment]) -> str:
    text = ""
    for position, segment in enumerate(segments):
        if isinstance(segment, int):
            text += f"[{segment}]"
        elif isinstance(segment, Key):
            text += str(segment)
        else:
            text += f".{segment}" if position else segment
    return text


def _segments(text: str) -> list[Segment]:
    segments: list[Segment] = []
    # The open name segment: None right after a bracket, until a dot or a character opens one.
    current: list[str] | None = [] if text and not text.startswith("[") else None
    i = 0
    while i < len(text):
        char = text[i]
        end = _closing_bracket(text, i) if char == "[" else -1
        if char == ".":
            if current is not None:
                segments.append("".join(current))
            current = []
            i += 1
        elif end >= 0:
            if current is not None:
                segments.append("".join(current))
                current = None
            inner = text[i + 1:end]
            if inner.isdigit() and str(int(inner)) == inner:
                segments.append(int(inner))
            elif len(inner) >= 2 and inner[0] == inner[-1] == '"':
                segments.append(Key(inner[1:-1], quoted=True))
            else:
                segments.append(Key(inner, quoted=False))
            i = end + 1
        else:
            current = [*(current or []), char]
            i += 1
    if current is not None:
        segments.append("".join(current))
    return segments


def _closing_bracket(text: str, start: int) -> int:
    """Index of the ``]`` that closes the bracket at ``start`` (a quoted key may hold ``]``), or -1."""
    if text[start + 1:start + 2] == '"':
        end = text.find('"]', start + 2)
        return end + 1 if end >= 0 else -1
    return text.find("]", start + 1)


PathLike = Union[FieldPath, str, Iterable[Segment]]
"""What :func:`as_path` takes: a path, its text, or its segments."""


def as_path(value: PathLike) -> FieldPath:
    """A :class:`FieldPath` from a path, its text, or its segments."""
    if isinstance(value, FieldPath):
        return value
    if isinstance(value, str):
        return FieldPath.parse(value)
    return FieldPath(value)
