"""Property paths in Pulumi's spelling: ``spec.selector.matchLabels["app.kubernetes.io/name"]``, ``a[0].b``.

Paths are tuples of segments: ``str`` for object keys, ``int`` for list indices; ``"*"`` in a
pattern matches any one segment. The string form follows ``resource.PropertyPath.String`` in
pulumi/pulumi ``sdk/go/common/resource/properties_path.go`` (identifier keys dotted, other keys
quoted in brackets), the form ``detailedDiff`` keys and ``replace_on_changes`` entries use.
"""

from __future__ import annotations

import json
import re
from typing import Sequence, Union

Segment = Union[str, int]
Path = tuple[Segment, ...]

_IDENTIFIER = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")
_TOKEN = re.compile(r'\[(\d+|\*)\]|\["((?:[^"\\]|\\.)*)"\]|\.?([^.\[\]]+)')


def format_path(path: Sequence[Segment]) -> str:
    """``("spec", "selector", "matchLabels", "app.kubernetes.io/name")`` -> ``spec.selector.matchLabels["app.kubernetes.io/name"]``."""
    text = ""
    for segment in path:
        if isinstance(segment, int) or segment == "*":
            text += f"[{segment}]"
        elif _IDENTIFIER.match(segment):
            text += f".{segment}" if text else segment
        else:
            text += f"[{json.dumps(segment)}]"
    return text


def parse_path(text: str) -> Path:
    """The inverse of :func:`format_path`; ``[*]`` and ``.*`` become ``"*"``. ``ValueError`` if malformed."""
    segments: list[Segment] = []
    position = 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if not match or match.end() == position:
            raise ValueError(f"malformed property path {text!r} at character {position}")
        index, quoted, plain = match.groups()
        if index is not None:
            segments.append("*" if index == "*" else int(index))
        elif quoted is not None:
            segments.append(json.loads(f'"{quoted}"'))
        else:
            segments.append(plain)
        position = match.end()
    return tuple(segments)


def matches(pattern: Sequence[Segment], path: Sequence[Segment]) -> bool:
    """True when one of ``pattern`` and ``path`` is a prefix of the other (``"*"`` matches any segment).

    A change below a field (``spec.selector.matchLabels.app`` below ``spec.selector``) changes it;
    so does a change of a whole enclosing block (``launchTemplate`` added contains ``launchTemplate.id``).
    """
    return all(p == "*" or str(p) == str(s) for p, s in zip(pattern, path))


def is_under(path: Sequence[Segment], prefix: Sequence[Segment]) -> bool:
    """True when ``path`` equals ``prefix`` or lies below it (``"*"`` in ``prefix`` matches any segment)."""
    return len(path) >= len(prefix) and matches(prefix, path)
