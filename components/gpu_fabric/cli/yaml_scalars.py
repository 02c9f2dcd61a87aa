"""PyYAML's pure-Python safe dumper with its scalar writers taken a run of characters at a time, not one.

``render`` writes a manifest that libyaml would fold differently with PyYAML's pure-Python emitter
(:mod:`gpu_fabric.cli.yaml_text`). The pure-Python emitter reads a scalar character by character three times --
to choose its style (``Emitter.analyze_scalar``), then to write it (``write_single_quoted``,
``write_double_quoted``, ``write_plain``) -- and the node agent's ConfigMap carries the agent's source, 70 KB
of it: 40 of the 50 ms a render of seed-rdma spent writing its manifests.

:class:`RunWiseSafeDumper` is that dumper with those four methods replaced by ones that reach the same result
over runs of characters: regular expressions find what the per-character loop would find, and the writers jump
from one place where something happens (a character to escape, a space where the line may fold, a line
break) to the next, calling the emitter's own ``write_indent`` and ``write_line_break`` there. Every other
part of the emitter -- events, indentation, the style chosen from the analysis -- is PyYAML's own. The rules
reproduced are those of PyYAML's ``yaml/emitter.py`` (6.0: ``analyze_scalar``, ``write_single_quoted``,
``write_double_quoted``, ``write_plain``); tests/cli/test_yaml_scalars.py holds every method to the original's
output, character classes included, on generated scalars at many widths and indents.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import yaml
from yaml.emitter import ScalarAnalysis

_BREAKS = "\n\x85\u2028\u2029"
_WHITESPACE = "\0 \t\r\n\x85\u2028\u2029"
"""What ``analyze_scalar`` counts as whitespace around an indicator (its ``followed_by_whitespace``)."""

_FIRST_INDICATORS = "#,[]{}&*!|>'\"%@`"
_INNER_FLOW_INDICATOR = re.compile(r"[,?\[\]{}:]")
_INNER_BLOCK_COLON = re.compile(r":(?:[\0 \t\r\n\x85\u2028\u2029]|\Z)")
_INNER_BLOCK_HASH = re.compile(r"[\0 \t\r\n\x85\u2028\u2029]#")
_LINE_BREAK = re.compile(r"[\n\x85\u2028\u2029]")
_BREAK_SPACE = re.compile(r"[\n\x85\u2028\u2029] ")
_SPACE_BREAK = re.compile(r" [\n\x85\u2028\u2029]")
# Not a line feed and not printable ASCII; with allow_unicode, also none of the characters it allows.
_SPECIAL = re.compile(r"[^\n\x20-\x7e]")
# write_double_quoted escapes these (and, without allow_unicode, anything past printable ASCII).
_ESCAPED = re.compile(r'["\\]|[^\x20-\x7e]')


@functools.cache
def _with_unicode() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """``_SPECIAL`` and ``_ESCAPED`` for ``allow_unicode``, which ``render`` never asks for: compiled on first use
    (their ranges take the regular expression compiler 9 ms)."""
    return (re.compile("[^\n\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010fffe]"),
            re.compile('["\\\\\x85\u2028\u2029\ufeff]|[^\x20-\x7e\xa0-\ud7ff\ue000-\ufffd]'))

# A single-quoted or plain scalar's runs: spaces, line breaks, and everything else.
_RUNS = re.compile(r"( +)|([\n\x85\u2028\u2029]+)|([^ \n\x85\u2028\u2029]+)")


class RunWiseSafeDumper(yaml.SafeDumper):
    """``yaml.SafeDumper`` writing the same text, its scalars analysed and written run by run (see the module)."""

    def analyze_scalar(self, scalar: str) -> Any:
        if not scalar:
            return super().analyze_scalar(scalar)
        first = scalar[0]
        followed_by_whitespace = len(scalar) == 1 or scalar[1] in _WHITESPACE
        flow_indicators = block_indicators = scalar.startswith("---") or scalar.startswith("...")
        if first in _FIRST_INDICATORS or (first == "-" and followed_by_whitespace):
            flow_indicators = block_indicators = True
        if first in "?:":
            flow_indicators = True
            block_indicators = block_indicators or followed_by_whitespace
        if _INNER_FLOW_INDICATOR.search(scalar, 1):
            flow_indicators = True
        if _INNER_BLOCK_COLON.search(scalar, 1) or _INNER_BLOCK_HASH.search(scalar):
            flow_indicators = block_indicators = True
        line_breaks = _LINE_BREAK.search(scalar) is not None
        special_characters = (_with_unicode()[0] if self.allow_unicode else _SPECIAL).search(scalar) is not None
        leading = first == " " or first in _BREAKS
        trailing_space = scalar[-1] == " "
        trailing = trailing_space or scalar[-1] in _BREAKS
        break_space = _BREAK_SPACE.search(scalar) is not None
        space_break = _SPACE_BREAK.search(scalar) is not None

        # From here as PyYAML decides (yaml/emitter.py, Emitter.analyze_scalar).
        allow_flow_plain = allow_block_plain = allow_single_quoted = allow_block = True
        if leading or trailing:
            allow_flow_plain = allow_block_plain = False
        if trailing_space:
            allow_block = False
        if break_space:
            allow_flow_plain = allow_block_plain = allow_single_quoted = False
        if space_break or special_characters:
            allow_flow_plain = allow_block_plain = allow_single_quoted = allow_block = False
        if line_breaks:
            allow_flow_plain = allow_block_plain = False
        if flow_indicators:
            allow_flow_plain = False
        if block_indicators:
            allow_block_plain = False
        return ScalarAnalysis(scalar=scalar, empty=False, multiline=line_breaks, allow_flow_plain=allow_flow_plain,
                              allow_block_plain=allow_block_plain, allow_single_quoted=allow_single_quoted,
                              allow_double_quoted=True, allow_block=allow_block)

    def _write(self, data: str) -> None:
        self.column += len(data)
        self.stream.write(data)

    def _write_breaks(self, breaks: str) -> None:
        """A run of line breaks as the single-quoted and plain writers write it: one more before a line feed."""
        if breaks[0] == "\n":
            self.write_line_break()
        for line_break in breaks:
            self.write_line_break(None if line_break == "\n" else line_break)
        self.write_indent()

    def write_single_quoted(self, text: str, split: bool = True) -> None:
        if self.encoding:
            return super().write_single_quoted(text, split)
        self.write_indicator("'", True)
        for run in _RUNS.finditer(text):
            spaces, breaks, word = run.groups()
            if spaces is not None:
                # One space between words, past the width, becomes the fold (never the first or last character).
                if (len(spaces) == 1 and self.column > self.best_width and split
                        and run.start() != 0 and run.end() != len(text)):
                    self.write_indent()
                else:
                    self._write(spaces)
            elif breaks is not None:
                self._write_breaks(breaks)
            else:
                self._write(word.replace("'", "''"))
        self.write_indicator("'", False)

    def write_plain(self, text: str, split: bool = True) -> None:
        if self.encoding:
            return super().write_plain(text, split)
        if self.root_context:
            self.open_ended = True
        if not text:
            return
        if not self.whitespace:
            self._write(" ")
        self.whitespace = self.indention = False
        for run in _RUNS.finditer(text):
            spaces, breaks, word = run.groups()
            if spaces is not None:
                if len(spaces) == 1 and self.column > self.best_width and split:
                    self.write_indent()
                    self.whitespace = self.indention = False
                else:
                    self._write(spaces)
            elif breaks is not None:
                self._write_breaks(breaks)
                self.whitespace = self.indention = False
            else:
                self._write(word)

    def write_double_quoted(self, text: str, split: bool = True) -> None:
        if self.encoding:
            return super().write_double_quoted(text, split)
        self.write_indicator('"', True)
        escaped = [m.start() for m in (_with_unicode()[1] if self.allow_unicode else _ESCAPED).finditer(text)]
        escaped.append(len(text))  # PyYAML's loop ends on a position past the text, which flushes what is left
        last_fold = len(text) - 1  # a fold happens at 0 < position < len(text) - 1
        start = end = 0
        for special in escaped:
            while True:  # the folds before the next character to escape
                if split and start == end and 0 < end < last_fold and end < special:
                    # Just after an escape, the line may fold before any character, not only at a space.
                    if self.column > self.best_width:
                        start = self._fold_double_quoted(text, start, end)
                    end += 1
                    continue
                space = -1
                if split:
                    first = max(end, self.best_width - self.column + start + 1, 1)
                    space = text.find(" ", first, min(special, last_fold))
                if space == -1:
                    break
                start = self._fold_double_quoted(text, start, space)
                end = space + 1
            end = special
            if start < end:
                self._write(text[start:end])
                start = end
            if end < len(text):
                self._write(self._escape(text[end]))
                start = end + 1
                if split and 0 < end < last_fold and self.column - 1 > self.best_width:
                    start = self._fold_double_quoted(text, start, end)
            end += 1
        self.write_indicator('"', False)

    def _escape(self, character: str) -> str:
        if character in self.ESCAPE_REPLACEMENTS:
            return "\\" + self.ESCAPE_REPLACEMENTS[character]
        if character <= "\xff":
            return "\\x%02X" % ord(character)
        if character <= "\uffff":
            return "\\u%04X" % ord(character)
        return "\\U%08X" % ord(character)

    def _fold_double_quoted(self, text: str, start: int, end: int) -> int:
        """Fold a double-quoted line at ``end`` as PyYAML does; the new ``start``."""
        self._write(text[start:end] + "\\")
        if start < end:
            start = end
        self.write_indent()
        self.whitespace = self.indention = False
        if text[start] == " ":
            self._write("\\")
        return start
