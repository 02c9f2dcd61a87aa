"""The run-wise dumper writes what PyYAML's pure-Python safe dumper writes, byte for byte, whatever the scalar."""

from __future__ import annotations

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from gpu_fabric.cli.yaml_scalars import RunWiseSafeDumper

# Every class of character PyYAML's emitter treats apart: spaces and breaks, quotes, indicators first and inside,
# escapes, characters allow_unicode lets through, and those it never does.
ALPHABET = ["a", "b", "z", "0", " ", "  ", "\n", "\n\n", "\t", "\r", "\0", "'", '"', "\\", "#", ":", "-", "?", ",",
            "[", "]", "{", "}", "&", "*", "!", "|", ">", "%", "@", "`", "---", "...", "\x07", "\x1b", "\x7f",
            "\x85", "\xa0", "\xe9", "\u2028", "\u2029", "\ud7ff", "\ue000", "\ufeff", "\ufffd", "\uffff",
            "\U0001f600", "\U0010ffff", "word", "longer words here", "x" * 30]
SCALAR_TEXT = st.lists(st.sampled_from(ALPHABET), max_size=60).map("".join)


def dumped(dumper, document, **options) -> str:
    return yaml.dump(document, Dumper=dumper, sort_keys=False, default_flow_style=False, **options)


class Analysed(yaml.SafeDumper):
    pass


@settings(max_examples=1200, deadline=None)
@given(SCALAR_TEXT, st.booleans())
def test_a_scalar_is_analysed_as_pyyaml_analyses_it(text, allow_unicode):
    original = yaml.SafeDumper(None, allow_unicode=allow_unicode).analyze_scalar(text)
    run_wise = RunWiseSafeDumper(None, allow_unicode=allow_unicode).analyze_scalar(text)
    assert vars(run_wise) == vars(original)


DOCUMENTS = st.recursive(
    SCALAR_TEXT, lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(SCALAR_TEXT, inner, max_size=3)),
    max_leaves=8)


@settings(max_examples=500, deadline=None)
@given(DOCUMENTS, st.integers(min_value=5, max_value=130), st.sampled_from([None, "'", '"']), st.booleans(),
       st.sampled_from([2, 4]))
def test_a_document_is_written_as_pyyaml_writes_it(document, width, style, allow_unicode, indent):
    options = dict(width=width, default_style=style, allow_unicode=allow_unicode, indent=indent)
    assert dumped(RunWiseSafeDumper, document, **options) == dumped(yaml.SafeDumper, document, **options)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["word", "w", " ", "  ", "\n", "'", '"', "\\", "\t", "\xe9", "x" * 50]),
                min_size=40, max_size=400).map("".join),
       st.integers(min_value=5, max_value=130), st.sampled_from([None, "'", '"']))
def test_long_scalars_fold_where_pyyaml_folds_them(text, width, style):
    document = {"data": {"key": text}, "list": [text]}
    options = dict(width=width, default_style=style)
    assert dumped(RunWiseSafeDumper, document, **options) == dumped(yaml.SafeDumper, document, **options)


def test_the_node_agents_source_is_written_as_pyyaml_writes_it():
    from gpu_fabric.kubelet_agent import __file__ as agent_init
    from pathlib import Path

    sources = {path.name: path.read_text() for path in sorted(Path(agent_init).parent.glob("*.py"))}
    assert len(sources) > 3
    for width in (80, 120):
        assert dumped(RunWiseSafeDumper, {"data": sources}, width=width) == \
            dumped(yaml.SafeDumper, {"data": sources}, width=width)


def test_written_to_an_encoded_stream_it_is_pyyaml_itself():
    document = {"text": "a long line " * 20 + "\n'quoted' \"double\" \\ \xe9"}
    assert dumped(RunWiseSafeDumper, document, encoding="utf-8") == dumped(yaml.SafeDumper, document, encoding="utf-8")


def test_a_quoted_scalar_beginning_past_the_width_is_not_folded_at_its_first_space():
    # PyYAML never folds a single-quoted scalar at its first character, however far right it starts.
    document = {"k" * 20: " starts with a space", "l" * 20: ["'", " a b "]}
    for width in (10, 16, 30):
        assert dumped(RunWiseSafeDumper, document, width=width) == dumped(yaml.SafeDumper, document, width=width)
