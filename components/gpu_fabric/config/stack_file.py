"""Reading ``Pulumi.<stack>.yaml`` strictly: only what the Pulumi engine would hand the program.

The engine passes a program every configuration value as JSON. A YAML file can hold more than
JSON can (dates, binary, sets, non-string keys, repeated keys, aliases that expand without bound),
and PyYAML's ``safe_load`` accepts all of it -- the last of two repeated keys silently wins, a
date becomes a ``datetime`` that later crashes JSON encoding. This module refuses each of those
with the file and the place, and refuses configuration keys that Pulumi itself would reject
(no ``namespace:``) or that look like a misspelt ``gpu-fabric:`` namespace, which would otherwise
silently drop the configuration they carry, and a configuration too large for the one environment
variable Pulumi hands it to the program in (:mod:`gpu_fabric.config.config_size`).
"""

from __future__ import annotations

import difflib
import math
import re
from pathlib import Path
from typing import Any, Iterable, Optional

import yaml

from gpu_fabric.config.base import format_path
from gpu_fabric.config.config_size import config_size_findings
from gpu_fabric.config.secrets import configuration_credentials

# A stack file is a few hundred nodes; anchors that add more than this many values beyond the ones
# written out are an alias bomb. (A long file without aliases -- a ``kind: List`` that ``kubectl get
# -o yaml`` writes -- is bounded by its size, not by this.)
MAX_EXPANDED_NODES = 100_000
# Deeper nesting is no stack file or manifest anyone wrote; PyYAML and every reader after it recurse.
MAX_DEPTH = 100
# Integers longer than this are no count, port or size (Python refuses str<->int beyond 4,300 digits).
MAX_INTEGER_DIGITS = 100


class StackFileError(ValueError):
    """The stack file cannot be read as a Pulumi stack configuration; names the file and what is wrong."""

    def __init__(self, path: Path | str, problems: Iterable[str]):
        self.path = str(path)
        self.problems = list(problems)
        super().__init__(f"{self.path}: " + "; ".join(self.problems))


class _StrictConstruction(yaml.constructor.SafeConstructor):
    """Refuses repeated and non-string mapping keys, with their line; mixed into a safe loader."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # "<<: *base" brings keys that the mapping's own keys may override
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            if not isinstance(key, str):
                raise _LoadProblem(f"line {line}: mapping key {key!r} is not a string (quote it)")
            if key in seen:
                raise _LoadProblem(f"line {line}: key {key!r} appears more than once in the same mapping "
                                   f"(first on line {seen[key]}); YAML would silently keep only the last")
            seen[key] = line
        return super().construct_mapping(node, deep=deep)



def _bounded_int(loader: Any, node: yaml.ScalarNode) -> int:
    """An integer of at most :data:`MAX_INTEGER_DIGITS` digits (the constructor of both strict loaders)."""
    digits = sum(ch.isdigit() for ch in str(node.value))
    if digits > MAX_INTEGER_DIGITS:
        raise _LoadProblem(f"line {node.start_mark.line + 1}: an integer of {digits} digits "
                           f"(at most {MAX_INTEGER_DIGITS}; quote it if you mean the text)", node)
    return yaml.constructor.SafeConstructor.construct_yaml_int(loader, node)


class _StrictLoader(_StrictConstruction, yaml.SafeLoader):
    """PyYAML's pure-Python ``SafeLoader``, strict: its messages are the ones users see."""

    def fetch_flow_collection_start(self, TokenClass: Any) -> None:
        # Refused while scanning, not after: PyYAML's scanner re-checks every open flow level's possible
        # simple key at each token (``stale_possible_simple_keys``), quadratic in the depth -- a line of
        # 2,000 "[" took a second before the composer's recursion gave up. Deeper flow nesting than this
        # is deeper nesting than :func:`_too_deep` allows, so nothing it would accept is refused here.
        if self.flow_level >= MAX_DEPTH:
            raise _LoadProblem(f"line {self.get_mark().line + 1}: nests deeper than {MAX_DEPTH} levels")
        super().fetch_flow_collection_start(TokenClass)


_StrictLoader.add_constructor("tag:yaml.org,2002:int", _bounded_int)


# libyaml's parser is several times faster than PyYAML's pure-Python one (``gpu-fabric lint`` over many
# manifests spends most of its time parsing); the constructor, resolver and every check stay Python.
# A document it cannot take is read again by the pure-Python loader, so every refusal (and its wording)
# is that loader's. Without libyaml, the pure-Python loader is all there is.
# The two parsers differ on text PyYAML refuses and libyaml takes: a tab inside a plain scalar, a byte
# order mark past the start. So libyaml reads only text without tabs, control characters, the byte order
# mark, or the line breaks beyond ASCII's (NEL, LS, PS: rare, and left to one parser's line count); printable
# characters beyond ASCII (an "é" in a description, CJK model names, emoji) it reads as PyYAML does, as
# content -- both reader.c and PyYAML's reader.py allow the same printable set, and both count a simple
# key's 1,024-character limit in characters. Fuzzed against each other (tests/config/test_stack_file.py),
# they decide alike on that text. Before, one non-ASCII character sent a whole file to the pure-Python
# parser: 390 KiB of ConfigMaps read in 0.60 s, and in 1.96 s with one "é".
# One known difference stays, and there libyaml is right: a "?" inside a plain scalar in a flow collection
# (``{name: a?b}``, valid YAML that kubectl reads) is content to libyaml (yaml/libyaml#105) and ends the
# scalar for PyYAML's scanner (yaml/pyyaml#128, open), which then refuses the text. With libyaml (every
# PyYAML wheel) it is read; only a PyYAML built without libyaml refuses it.
# Written as the characters it refuses: the complement (a negated class of the printable ranges) takes 6 ms to
# compile at import, this 0.7 ms.
_NOT_FOR_LIBYAML = re.compile(r"[\x00-\x09\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff]")
_FastStrictLoader: type | None = None
if getattr(yaml, "__with_libyaml__", False):
    class _CStrictLoader(_StrictConstruction, yaml.CSafeLoader):  # type: ignore[misc]
        """``CSafeLoader`` (libyaml's parser) with the same strict construction."""

    _CStrictLoader.add_constructor("tag:yaml.org,2002:int", _bounded_int)
    _FastStrictLoader = _CStrictLoader


class _LoadProblem(Exception):
    """A refusal while reading; ``node``, when given, is the value refused (its key path is then named)."""

    def __init__(self, message: str, node: Optional[yaml.Node] = None):
        super().__init__(message)
        self.node = node


def _key_path(root: yaml.Node, target: yaml.Node) -> str:
    """Where ``target`` is in the document ``root``: ``config.gpu-fabric:cluster.kubernetesVersion``, ``a[0].b``."""
    pending: list[tuple[yaml.Node, str]] = [(root, "")]
    seen: set[int] = set()
    while pending:
        node, path = pending.pop()
        if node is target:
            return path
        if id(node) in seen:  # an alias is walked once
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            pending.extend((value, f"{path}.{key.value}" if path else str(key.value)) for key, value in node.value)
        elif isinstance(node, yaml.SequenceNode):
            pending.extend((item, f"{path}[{index}]") for index, item in enumerate(node.value))
    return ""


def _located(problem: _LoadProblem, root: yaml.Node) -> _LoadProblem:
    """``problem`` naming the key path of its value, as validation names a field: "line 15, at a.b: ..."."""
    path = _key_path(root, problem.node) if problem.node is not None else ""
    line, colon, rest = str(problem).partition(": ")
    return _LoadProblem(f"{line}, at {path}: {rest}") if path and colon else problem


def _children(node: yaml.Node) -> list[yaml.Node]:
    """A sequence's items, a mapping's keys and values in order, nothing for a scalar (what each walk below visits)."""
    if isinstance(node, yaml.SequenceNode):
        return node.value
    if isinstance(node, yaml.MappingNode):
        return [item for pair in node.value for item in pair]
    return []


def _too_deep(node: yaml.Node, memo: dict[int, int], depth: int = 1, path: set[int] | None = None) -> bool:
    """True when ``node`` nests deeper than :data:`MAX_DEPTH` (aliases followed; recursion bounded by the limit).

    A node that contains itself (a recursive alias) is an alias bomb, refused as one.
    """
    path = set() if path is None else path
    if id(node) in path:
        raise _LoadProblem("a YAML alias refers to the node that contains it: it expands without end (an alias bomb?)")
    if depth > MAX_DEPTH:
        return True
    room = MAX_DEPTH - depth + 1
    if memo.get(id(node), MAX_DEPTH + 1) <= room:
        return False  # this node (an alias's target) already fitted in no more room than this
    path.add(id(node))
    try:
        for child in _children(node):
            if _too_deep(child, memo, depth + 1, path):
                return True
    finally:
        path.discard(id(node))
    memo[id(node)] = min(room, memo.get(id(node), room))
    return False


def _is_shallow_tree(node: yaml.Node) -> bool:
    """True when each node of ``node`` is reached once (no alias shares one) and none is deeper than :data:`MAX_DEPTH`.

    Such a document -- nearly every one: manifests and stack files seldom use aliases -- passes the
    depth and alias checks by construction (nothing to expand, no cycle), so one walk replaces their
    three. Reading a 2,500-item ``kubectl get -o yaml`` list (1.8 MB), the three took 0.5 s of its 2.5 s,
    this one 0.2 s. Anything else is left to them, so their verdicts and wording stay as they are.
    """
    seen: set[int] = set()
    pending = [(node, 1)]
    while pending:
        current, depth = pending.pop()
        if id(current) in seen or depth > MAX_DEPTH:
            return False
        seen.add(id(current))
        pending.extend((child, depth + 1) for child in _children(current))
    return True


def _literal_size(node: yaml.Node) -> int:
    """Nodes written out in the text (each anchored node once, however many aliases name it)."""
    seen: set[int] = set()
    pending = [node]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        pending.extend(_children(current))
    return len(seen)


def _expanded_size(node: yaml.Node, memo: dict[int, int], limit: int) -> int:
    """Nodes ``node`` stands for once every alias is expanded (shared nodes counted per use)."""
    known = memo.get(id(node))
    if known is not None:
        return known
    memo[id(node)] = limit + 1  # a recursive alias expands forever
    size = 1
    for child in _children(node):
        size += _expanded_size(child, memo, limit)
        if size > limit:
            break
    memo[id(node)] = size
    return size


def _non_json_values(value: Any, location: list[Any], finite_only: bool = True) -> Iterable[str]:
    """Every value the engine could not carry as JSON, by path (NaN and infinities unless ``finite_only`` is off)."""
    if value is None or isinstance(value, (str, bool, int)):
        return
    if isinstance(value, float):
        if finite_only and not math.isfinite(value):
            yield f"{format_path(location)}: {value!r} is not a finite number"
        return
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _non_json_values(item, [*location, key], finite_only)
        return
    if isinstance(value, list):
        for index, item in enumerate(value):
            yield from _non_json_values(item, [*location, index], finite_only)
        return
    kind = {"date": "a date", "datetime": "a date", "bytes": "binary data", "set": "a set"}.get(type(value).__name__,
                                                                                           type(value).__name__)
    yield (f"{format_path(location)}: {kind} ({value!r}) is not a JSON value; quote it if you mean the text"
           if kind == "a date" else f"{format_path(location)}: {kind} is not a JSON value")


def parse_yaml(text: str, *, max_nodes: int = MAX_EXPANDED_NODES) -> list[Any]:
    """Every document of ``text`` as plain JSON-compatible data; ``ValueError`` on anything else."""
    return [document for _, document in parse_yaml_documents(text, max_nodes=max_nodes)]


def parse_yaml_documents(text: str, *, max_nodes: int = MAX_EXPANDED_NODES,
                         finite_only: bool = True) -> list[tuple[int, Any]]:
    """``(first line, document)`` for every document of ``text``, read as strictly as :func:`parse_yaml`.

    ``finite_only=False`` keeps ``.inf``/``.nan`` (a linter reports them as findings of the object).
    """
    if _FastStrictLoader is not None and not _NOT_FOR_LIBYAML.search(text):
        try:
            documents = _load_documents(_FastStrictLoader, text, max_nodes)
        except (_LoadProblem, yaml.YAMLError, RecursionError):
            pass  # refused: the pure-Python loader below says why, in its own words
        else:
            return _json_only(documents, finite_only)
    try:
        documents = _load_documents(_StrictLoader, text, max_nodes)
    except _LoadProblem as problem:
        raise ValueError(str(problem)) from None
    except RecursionError:
        raise ValueError(f"nests deeper than {MAX_DEPTH} levels") from None
    except yaml.reader.ReaderError as error:
        line = text.count("\n", 0, error.position) + 1
        character = error.character if isinstance(error.character, int) else ord(error.character)
        raise ValueError(f"not valid YAML: line {line}: character U+{character:04X} is not allowed "
                         f"in YAML text (write it escaped in a double-quoted string, \"\\x{character:02x}\")") from None
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise ValueError(f"not valid YAML: {where}{error.problem or error}") from None
    except yaml.YAMLError as error:
        raise ValueError(f"not valid YAML: {error}") from None
    return _json_only(documents, finite_only)


def _load_documents(loader_class: Any, text: str, max_nodes: int) -> list[tuple[int, Any]]:
    """``(first line, document)`` for every document, each refused past ``max_nodes`` expanded values."""
    loader = loader_class(text)  # the pure-Python reader takes the stream at once: control characters are refused here
    documents = []
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:  # check_node() said a document follows
                break
            line = node.start_mark.line + 1
            if not _is_shallow_tree(node):  # aliases, or deep: the checks below decide
                if _too_deep(node, {}):
                    raise _LoadProblem(f"document at line {line} nests deeper than {MAX_DEPTH} levels")
                literal = _literal_size(node)
                if _expanded_size(node, {}, literal + max_nodes) > literal + max_nodes:
                    raise _LoadProblem(f"YAML aliases expand to more than {max_nodes} values (an alias bomb?)")
            try:
                documents.append((line, loader.construct_document(node)))
            except _LoadProblem as problem:
                raise _located(problem, node) from None
    finally:
        loader.dispose()
    return documents


def _json_only(documents: list[tuple[int, Any]], finite_only: bool) -> list[tuple[int, Any]]:
    problems = [problem for _, document in documents for problem in _non_json_values(document, [], finite_only)]
    if problems:
        raise ValueError("; ".join(problems))
    return documents


def decode_text(data: bytes) -> str:
    """UTF-8 text of ``data`` (a BOM allowed); ``ValueError`` naming the offset of the first bad byte."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ValueError(f"not UTF-8 text: byte 0x{data[error.start]:02x} at offset {error.start}") from None


MAX_FILE_BYTES = 64 * 2**20
"""Larger input is refused: YAML of that size is not a stack file or a manifest set anyone wrote."""


def read_input(path: Path, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes; ``ValueError`` otherwise (devices, FIFOs
    and ``/dev/zero`` would never end), ``OSError`` when it cannot be read."""
    path = Path(path)
    if path.exists() and not path.is_file():
        raise ValueError("is not a regular file")
    with path.open("rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"is larger than {limit // 2**20} MiB")
    return data


def near_miss(namespace: str, wanted: str) -> bool:
    """True when ``namespace`` looks like a misspelling of ``wanted`` (case, ``_`` for ``-``, a typo)."""
    if namespace == wanted:
        return False
    squash = lambda text: "".join(ch for ch in text.lower() if ch.isalnum())  # noqa: E731
    return squash(namespace) == squash(wanted) or difflib.SequenceMatcher(None, namespace.lower(), wanted).ratio() >= 0.8


def read_stack_document(path: Path | str) -> Any:
    """The one YAML document of a stack file as JSON-compatible data (``{}`` when empty), read strictly:
    :class:`StackFileError` for anything the engine could not hand a program as JSON unchanged.

    The stack program under the engine reads its own stack file with this too (:mod:`gpu_fabric.program.stack`):
    the engine hands it a ``!!binary`` value decoded, as a string it cannot tell from one written out, so only
    the file shows what a reviewer of its diff could not read."""
    path = Path(path)
    try:
        documents = parse_yaml(decode_text(read_input(path)))
    except OSError as error:
        raise StackFileError(path, [f"cannot read: {error.strerror}"]) from None
    except ValueError as error:
        raise StackFileError(path, [str(error)]) from None
    if len(documents) > 1:
        raise StackFileError(path, [f"holds {len(documents)} YAML documents; a stack file is one mapping"])
    document = documents[0] if documents else {}
    return {} if document is None else document


def read_stack_file(path: Path | str, namespace: str) -> dict[str, Any]:
    """The ``config:`` block of a stack file, keyed ``namespace:key``; :class:`StackFileError` otherwise -- also for a
    configuration too large for Pulumi to hand the program (:data:`gpu_fabric.config.config_size.STACK_CONFIG_SIZE`)."""
    path = Path(path)
    document = read_stack_document(path)
    if not isinstance(document, dict):
        raise StackFileError(path, [f"must be a mapping with a 'config:' key, not {_kind(document)}"])
    config = document.get("config")
    if config is None:
        return {}
    if not isinstance(config, dict):
        raise StackFileError(path, [f"'config' must be a mapping of 'namespace:key' to values, not {_kind(config)}"])
    problems = []
    for key in config:
        name_space, colon, name = key.partition(":")
        if not colon or not name_space or not name:
            problems.append(f"config key {key!r} has no namespace; Pulumi refuses it (write {namespace}:{key})")
        elif near_miss(name_space, namespace):
            problems.append(f"config key {key!r}: namespace {name_space!r} is not {namespace + ':'!r}, "
                            f"so gpu-fabric would never read it (write {namespace}:{name})")
    if problems:
        raise StackFileError(path, problems)
    problems = credential_problems(config, namespace)
    if problems:
        raise StackFileError(path, problems)
    # Last: a file refused above would not run either, and its own problems say more than its size.
    problems = [f"{finding.path}: {finding.message} {finding.rule_tag}" for finding in config_size_findings(config)]
    if problems:
        raise StackFileError(path, problems)
    return dict(config)


def credential_problems(config: dict[str, Any], namespace: str) -> list[str]:
    """A line per credential the ``namespace:*`` values hold in plain text, with how to write it instead.

    The stack file is committed and read by everyone who reads the repository, and a render writes
    what it holds to ``out/``; a token there is published. Neither the value nor its kind is quoted
    beyond "a Hugging Face token" (:func:`gpu_fabric.config.secrets.configuration_credentials`).
    """
    prefix = f"{namespace}:"
    values = {key[len(prefix):]: value for key, value in config.items() if isinstance(key, str) and key.startswith(prefix)}
    return [f"{prefix}{where}: {message}" for where, message in configuration_credentials(values, namespace)]


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    return f"a {type(value).__name__}"
