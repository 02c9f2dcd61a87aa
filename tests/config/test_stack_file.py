"""Stack files are read as the engine would pass them: JSON values only, every problem with its place."""

import pytest

from gpu_fabric.config.stack_file import StackFileError, near_miss, parse_yaml, read_stack_file


def read(tmp_path, data):
    path = tmp_path / "Pulumi.x.yaml"
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return read_stack_file(path, "gpu-fabric")


def refusal(tmp_path, data) -> str:
    with pytest.raises(StackFileError) as caught:
        read(tmp_path, data)
    assert caught.value.path.endswith("Pulumi.x.yaml")
    return str(caught.value)


def test_small_anchors_and_merge_keys_are_fine(tmp_path):
    text = ("config:\n  gpu-fabric:pools:\n    - &base {name: a, fabric: none, acceleratorsPerNode: 0, nodeCount: 1}\n"
            "    - <<: *base\n      name: b\n  aws:region: us-east-1\n")
    config = read(tmp_path, text)
    assert [pool["name"] for pool in config["gpu-fabric:pools"]] == ["a", "b"]
    assert config["gpu-fabric:pools"][1]["nodeCount"] == 1 and config["aws:region"] == "us-east-1"


def test_byte_order_mark_and_empty_files_are_fine(tmp_path):
    assert read(tmp_path, b"\xef\xbb\xbfconfig:\n  gpu-fabric:queueOwner: gpustack\n") == {"gpu-fabric:queueOwner": "gpustack"}
    assert read(tmp_path, "") == {}
    assert read(tmp_path, "encryptionsalt: abc\n") == {}


def test_duplicate_key_names_both_lines(tmp_path):
    message = refusal(tmp_path, "config:\n  gpu-fabric:queueOwner: gpustack\n  gpu-fabric:queueOwner: standalone\n")
    assert "line 3: key 'gpu-fabric:queueOwner' appears more than once" in message and "first on line 2" in message


def test_syntax_error_names_line_and_column(tmp_path):
    assert "not valid YAML: line 3, column 1" in refusal(tmp_path, "config:\n  a: [1\n")


def test_not_utf8_names_the_offset(tmp_path):
    assert "not UTF-8 text: byte 0xff at offset 8" in refusal(tmp_path, b"config: \xff\n")


def test_non_json_values_are_named_by_path(tmp_path):
    message = refusal(tmp_path, "config:\n  gpu-fabric:pools:\n    - since: 2024-01-02\n      blob: !!binary aGk=\n")
    assert "config.gpu-fabric:pools[0].since: a date" in message
    assert "config.gpu-fabric:pools[0].blob: binary data is not a JSON value" in message


def test_several_documents_are_refused(tmp_path):
    assert "2 YAML documents" in refusal(tmp_path, "config: {}\n---\nconfig: {}\n")


def test_recursive_alias_is_refused():
    with pytest.raises(ValueError, match="alias"):
        parse_yaml("a: &a [*a]\n")


@pytest.mark.parametrize("namespace", ["gpu_fabric", "GPU-Fabric", "gpufabric", "gpu-fabrik", "gpu-fabrics"])
def test_near_misses(namespace):
    assert near_miss(namespace, "gpu-fabric")


@pytest.mark.parametrize("namespace", ["gpu-fabric", "aws", "kubernetes", "pulumi", "gpustack"])
def test_other_namespaces_are_not_near_misses(namespace):
    assert not near_miss(namespace, "gpu-fabric")


def test_devices_and_oversized_input_are_refused_without_reading_them_whole(tmp_path):
    import os

    from gpu_fabric.config.stack_file import read_input

    if os.path.exists("/dev/zero"):
        with pytest.raises(ValueError, match="not a regular file"):
            read_input("/dev/zero")
    big = tmp_path / "big.yaml"
    big.write_bytes(b"a: 1\n" * 100)
    with pytest.raises(ValueError, match="larger than"):
        read_input(big, limit=50)
    assert read_input(big, limit=500) == b"a: 1\n" * 100


# -- libyaml's parser under the same strict construction (issue 27) -----------------------------------

import pathlib  # noqa: E402

import yaml  # noqa: E402

from gpu_fabric.config import stack_file  # noqa: E402

PROJECT = pathlib.Path(__file__).resolve().parents[2]
BAD_YAML = [
    "a: 1\na: 2\n", "a:\n  b: [1, 2\n", "{1: x}\n", "when: 2024-01-01\n", "x: !!binary aGk=\n", "x: !!set {a}\n",
    "a: &a [*a]\n", "x: .nan\n", "- &a [x, x, x, x, x, x, x, x, x, x]\n- &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
    "- &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n- [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n",
    "a: b: c\n", "\tx: 1\n", "x: \"unterminated\n", "--- 1\n--- {a: 1, a: 2}\n", "x: !python/object:os.system {}\n",
    "%YAML 2.0\n--- x\n", "x: \x07\n", "[a, b]]\n", "? [a]\n: b\n",
]
# Printable text beyond ASCII goes to libyaml too: keys and values, a simple key at its 1,024-character limit and
# past it (both parsers count characters, not bytes), anchors, tags and escapes that take only ASCII.
NON_ASCII_YAML = [
    "description: café\n", "名前: 日本語のモデル\n", "- \U0001F600\n- \xa0x\xa0\n", "{é: 1, é: 2}\n",
    *("é" * length + ": x\n" for length in (1022, 1023, 1024, 1025, 1030)), "x: &é 1\n", "x: !é 1\n", 'x: "\\é"\n', "x: 'é\n  ü'\n",
    "x: \ue000\U0010ffff\n", "x: |\n  ünïcödé\n  lines\n", "? é\n: [ü, {ß: 2024-01-01}]\n",
]


def _outcome(text: str, **options):
    try:
        return ("ok", stack_file.parse_yaml_documents(text, **options))
    except ValueError as error:
        return ("refused", str(error))


def test_libyaml_parser_is_used_when_installed():
    assert (stack_file._FastStrictLoader is not None) == bool(getattr(yaml, "__with_libyaml__", False))


@pytest.mark.skipif(not getattr(yaml, "__with_libyaml__", False), reason="PyYAML built without libyaml")
def test_text_beyond_ascii_is_read_by_libyaml_alone(monkeypatch):
    # One "é" in a description used to send the whole file to the pure-Python parser, three times slower.
    def pure_python_loader(*args, **kwargs):
        raise AssertionError("the pure-Python loader read text libyaml takes")

    monkeypatch.setattr(stack_file, "_StrictLoader", pure_python_loader)
    assert parse_yaml("description: café 日本 \U0001F600\nitems: [ü, ß]\n") == [
        {"description": "café 日本 \U0001F600", "items": ["ü", "ß"]}]


@pytest.mark.skipif(not getattr(yaml, "__with_libyaml__", False), reason="PyYAML built without libyaml")
def test_a_question_mark_inside_a_flow_scalar_is_content():
    # Valid YAML (kubectl reads it); PyYAML's pure-Python scanner alone refuses it (yaml/pyyaml#128).
    assert parse_yaml("selector: {name: nvidia-d?evice, tier: a?}\nargs: [x?y]\n") == [
        {"selector": {"name": "nvidia-d?evice", "tier": "a?"}, "args": ["x?y"]}]


@pytest.mark.parametrize("text", BAD_YAML + NON_ASCII_YAML)
@pytest.mark.parametrize("options", [{}, {"finite_only": False, "max_nodes": 500}])
def test_libyaml_and_pure_python_loaders_decide_alike(monkeypatch, text, options):
    fast = _outcome(text, **options)
    monkeypatch.setattr(stack_file, "_FastStrictLoader", None)  # as without libyaml
    assert fast == _outcome(text, **options)


def test_libyaml_and_pure_python_loaders_read_every_project_file_alike(monkeypatch):
    paths = sorted(p for folder in ("stacks", "examples", "tests/fixtures", "policy", "provider")
                   for p in (PROJECT / folder).rglob("*.y*ml"))
    assert paths
    fast = [_outcome(p.read_text(encoding="utf-8"), finite_only=False) for p in paths]
    monkeypatch.setattr(stack_file, "_FastStrictLoader", None)
    assert fast == [_outcome(p.read_text(encoding="utf-8"), finite_only=False) for p in paths]


def test_libyaml_and_pure_python_loaders_decide_alike_on_mutated_manifests(monkeypatch):
    # libyaml takes a tab inside a plain scalar and a byte order mark mid-stream, which PyYAML refuses:
    # such text goes to the pure-Python loader alone. Mutations of real files find any other difference.
    import random

    texts = [p.read_text(encoding="utf-8") for p in sorted((PROJECT / "stacks").glob("*.yaml"))]
    pieces = list(":-[]{}&*!|>'\"#?,\t\n %@`\\") + ["<<", "---", "...", "\r", "\r\n", "\ufeff", "\x85", "\u2028", "~",
                                                   "!!str ", "&x ", "*x", "? ", "<<: *x\n", ".nan", "0o7"]
    pieces += ["é", "日本語", "\xa0", "\U0001F600", "\ufffd", "\u3000", "\u200b", "ß: ", "&é ", "*é", "!é ", "\\é",
               "ø" * 600, "é" * 1100, "\ue000", "\u2029", "\x9f"]  # printable beyond ASCII, and a few that are not
    rng = random.Random(27)
    cases = []
    for _ in range(1500):
        text = rng.choice(texts)
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(text) + 1)
            text = (text[:at] + rng.choice(pieces) + text[at:]) if rng.random() < 0.6 else text[:at] + text[at + rng.randint(1, 4):]
        cases.append(text)
    fast = [_outcome(text, finite_only=False, max_nodes=2000) for text in cases]
    monkeypatch.setattr(stack_file, "_FastStrictLoader", None)
    assert fast == [_outcome(text, finite_only=False, max_nodes=2000) for text in cases]


def test_flow_nesting_past_the_limit_is_refused_where_it_happens_not_after_the_whole_text():
    # PyYAML's scanner is quadratic in flow depth: the refusal comes at the first "[" past the limit,
    # before the scanner reads on (the unclosed text after it would otherwise be a syntax error at its end).
    deep = "x: 1\na: " + "[" * (stack_file.MAX_DEPTH + 1)
    with pytest.raises(ValueError, match=rf"^line 2: nests deeper than {stack_file.MAX_DEPTH} levels$"):
        parse_yaml(deep + "\n")
    with pytest.raises(ValueError, match="nests deeper than"):
        parse_yaml(deep + "1" + "]" * (stack_file.MAX_DEPTH + 1) + "\n# a\ttab: the pure-Python loader reads it\n")
    deepest = stack_file.MAX_DEPTH - 1  # collections, and the scalar inside them is the last level
    at_limit = "[" * deepest + "1" + "]" * deepest + "\n"
    assert parse_yaml(at_limit + "# a\ttab\n") == parse_yaml(at_limit)  # both loaders take the deepest allowed
