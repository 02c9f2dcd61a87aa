"""YAML text of a rendered manifest: PyYAML's output, written by libyaml where the two cannot differ.

``render`` writes each Kubernetes object as YAML, byte-identical from run to run and machine to machine. PyYAML's
pure-Python emitter took 52 ms for the four example stacks' 36 objects, libyaml's (``CSafeDumper``) 6 ms -- but
the two fold a long double-quoted string at different places (2 of those 36 objects), so libyaml alone would
change the files, and a machine without libyaml would write others.

Both emitters share the representer (what each value becomes: ``SafeRepresenter``) and the same rules for a
scalar's style; they differ only in how they break a scalar across lines. A document none of whose lines can
reach the width -- every key and string short, single-line, printable ASCII -- is broken by neither, so it is
written by libyaml; any other document by the pure-Python emitter, its scalars written a run of characters at a
time (:mod:`gpu_fabric.cli.yaml_scalars`: the node agent's 70 KB ConfigMap took 40 ms character by character). tests/cli/test_yaml_text.py holds
the two to the same bytes on every example stack, the fleet and generated documents.
"""

from __future__ import annotations

from typing import Any

import yaml

WIDTH = 120
"""The line width ``render`` asks for (a longer scalar is folded onto the next line)."""

_FAST_DUMPER: Any = getattr(yaml, "CSafeDumper", None)
"""libyaml's safe dumper, where PyYAML was built with it."""


def yaml_text(document: Any) -> str:
    """``yaml.safe_dump(document, sort_keys=False, default_flow_style=False, width=WIDTH)``, byte for byte."""
    if _FAST_DUMPER is not None and _unfolded(document, 0):
        dumper = _FAST_DUMPER
    else:
        from gpu_fabric.cli.yaml_scalars import RunWiseSafeDumper

        dumper = RunWiseSafeDumper
    return yaml.dump(document, Dumper=dumper, sort_keys=False, default_flow_style=False, width=WIDTH)


def _unfolded(value: Any, indent: int) -> bool:
    """True when no line of ``value`` written at ``indent`` can reach :data:`WIDTH` (so neither emitter folds one).

    A bound, not the emitters' own arithmetic: a printable ASCII line is written plain or single-quoted (never
    double-quoted, the style that escapes), so it takes its length, its quotes and a second ``'`` for each of its
    own; each level of nesting counts two columns, more than block style uses. An empty key is written as a
    complex key (``? ''``) by one emitter and not the other: it takes the pure-Python one.
    """
    if isinstance(value, dict):
        return all(isinstance(key, str) and key != "" and _short(key, indent) and _unfolded_entry(key, item, indent)
                   for key, item in value.items())
    if isinstance(value, list):
        return all(_unfolded(item, indent + 2) for item in value)
    return _scalar_fits(value, indent + 2)


def _unfolded_entry(key: str, item: Any, indent: int) -> bool:
    if isinstance(item, (dict, list)):
        return _unfolded(item, indent + 2)
    return _scalar_fits(item, indent + _written(key) + 2)


def _scalar_fits(value: Any, column: int) -> bool:
    if isinstance(value, str):
        return _short(value, column)
    # Numbers, booleans and null are written as their representer spells them, never broken; anything else
    # (bytes, dates) takes the pure-Python emitter.
    return value is None or (isinstance(value, (bool, int, float)) and column + 40 < WIDTH)


def _short(text: str, column: int) -> bool:
    return text.isascii() and text.isprintable() and column + _written(text) < WIDTH


def _written(text: str) -> int:
    """The most columns a printable ASCII string takes written on one line: quoted, its quotes doubled."""
    return len(text) + text.count("'") + 2
