"""The topology keys of a KubeletConfiguration: their meaning, and merging exactly them into a config file."""

import json
import re
from typing import Any, Dict, List, Optional, Tuple

from .errors import AgentError

TOPOLOGY_KEYS = (
    "topologyManagerPolicy",
    "topologyManagerScope",
    "cpuManagerPolicy",
    "topologyManagerPolicyOptions",
    "cpuManagerPolicyOptions",
    "reservedSystemCPUs",
)
# What an absent key means to the kubelet (its defaults), so absent and default compare equal.
KUBELET_DEFAULTS: Dict[str, Any] = {
    "topologyManagerPolicy": "none",
    "topologyManagerScope": "container",
    "cpuManagerPolicy": "none",
    "topologyManagerPolicyOptions": {},
    "cpuManagerPolicyOptions": {},
    "reservedSystemCPUs": "",
}


# A top-level key, plain or quoted: YAML writers quote a key that reads as a YAML 1.1 word ('no': ...).
_TOP_LEVEL_KEY = re.compile(r"^(?P<q>['\"]?)([A-Za-z_][A-Za-z0-9_]*)(?P=q)\s*:(.*)$")
_PLAIN_SCALAR = re.compile(r"^[A-Za-z][A-Za-z-]*$")
_YAML_WORDS = {"true", "false", "yes", "no", "on", "off", "y", "n", "null", "~"}
_UNREADABLE = object()


def _yaml_scalar(value: str) -> str:
    if _PLAIN_SCALAR.match(value) and value.lower() not in _YAML_WORDS:
        return value
    return json.dumps(value)  # a JSON string is a YAML double-quoted scalar


def _yaml_entry(key: str, value: Any) -> List[str]:
    if isinstance(value, dict):
        if not value:
            return [f"{key}: {{}}"]
        return [f"{key}:"] + [f"  {json.dumps(name)}: {json.dumps(value[name])}" for name in sorted(value)]
    return [f"{key}: {_yaml_scalar(str(value))}"]


def _scalar_value(text: str) -> Any:
    text = text.strip()
    if not text or text.startswith(("&", "*", "!", "|", ">")):
        return _UNREADABLE
    if text[0] in "\"{[":
        try:
            value, end = json.JSONDecoder().raw_decode(text)
        except ValueError:
            return _UNREADABLE
        rest = text[end:].strip()
        return value if not rest or rest.startswith("#") else _UNREADABLE
    if text[0] == "'":
        match = re.match(r"'((?:[^']|'')*)'\s*(#.*)?$", text)
        return match.group(1).replace("''", "'") if match else _UNREADABLE
    return text.split(" #", 1)[0].strip()


def _block_value(lines: List[str]) -> Any:
    """The value of one top-level ``key: ...`` block, or ``_UNREADABLE`` (which counts as different)."""
    first = _TOP_LEVEL_KEY.match(lines[0])
    assert first is not None
    inline = first.group(3).strip()
    if inline and inline[0] not in "\"'":
        inline = inline.split(" #", 1)[0].strip()
    body = [line for line in lines[1:] if line.strip() and not line.strip().startswith("#")]
    if inline:
        return _scalar_value(inline) if not body else _UNREADABLE
    mapping: Dict[str, Any] = {}
    for line in body:
        key, colon, value = line.strip().partition(":")
        if not colon or not line.startswith((" ", "\t")):
            return _UNREADABLE
        name = _scalar_value(key)
        parsed = _scalar_value(value)
        if name is _UNREADABLE or parsed is _UNREADABLE:
            return _UNREADABLE
        mapping[str(name)] = parsed
    return mapping


def _yaml_blocks(text: str) -> Tuple[List[str], Dict[str, Tuple[int, int]]]:
    lines = text.splitlines()
    blocks: Dict[str, Tuple[int, int]] = {}
    current: Optional[str] = None
    for index, line in enumerate(lines):
        if line.startswith(("---", "...", "%")) and index > 0:
            raise AgentError("the kubelet config file holds more than one YAML document; edit it by hand")
        match = _TOP_LEVEL_KEY.match(line)
        if match:
            current = match.group(2)
            if current in blocks:
                raise AgentError(f"the kubelet config file sets {current} twice; edit it by hand")
            blocks[current] = (index, index + 1)
        elif current is not None and (line.startswith((" ", "\t", "-")) or not line.strip()):
            start, _ = blocks[current]
            blocks[current] = (start, index + 1)
        elif line.strip() and not line.startswith(("#", "---")):
            raise AgentError(f"cannot read line {index + 1} of the kubelet config file as block YAML; edit it by hand")
        else:
            current = None
    return lines, blocks


def _normal(key: str, value: Any) -> Any:
    """A topology key's value as the kubelet means it: options that are "false" are the default."""
    if value is None:
        value = KUBELET_DEFAULTS[key]
    if key.endswith("PolicyOptions") and isinstance(value, dict):
        return {str(name): str(option).lower() for name, option in value.items() if str(option).lower() != "false"}
    return value


def running_topology(config: Dict[str, Any]) -> Dict[str, Any]:
    """The topology keys of a KubeletConfiguration mapping, absent keys as the kubelet's defaults."""
    return {key: _normal(key, config.get(key)) for key in TOPOLOGY_KEYS}


def merge_config_text(text: str, desired: Dict[str, Any]) -> Optional[str]:
    """``text`` with exactly the topology keys set to ``desired`` (absent keys removed), or ``None`` if unchanged.

    JSON files (EKS writes ``config.json``) are re-rendered as JSON. YAML files are edited block by
    block: every other line, comment and ordering stays byte-for-byte as it was.
    """
    wanted = running_topology(desired)
    if text.lstrip().startswith("{"):
        try:
            document = json.loads(text)
        except ValueError as error:
            raise AgentError(f"the kubelet config file is not valid JSON ({error}); nothing was changed") from None
        except RecursionError:
            raise AgentError("the kubelet config file nests JSON too deeply to be a KubeletConfiguration; "
                             "nothing was changed") from None
        if not isinstance(document, dict):
            raise AgentError("the kubelet config file is JSON but not an object (a KubeletConfiguration); "
                             "nothing was changed")
        if running_topology(document) == wanted:
            return None
        for key in TOPOLOGY_KEYS:
            document.pop(key, None)
        document.update({key: desired[key] for key in TOPOLOGY_KEYS if key in desired})
        return json.dumps(document, indent=2) + "\n"

    lines, blocks = _yaml_blocks(text)
    current = {key: _block_value(lines[start:end]) for key, (start, end) in blocks.items() if key in TOPOLOGY_KEYS}
    if running_topology(current) == wanted:  # an unreadable value never equals, so it is rewritten
        return None
    replacement: Dict[int, List[str]] = {}
    dropped: set = set()
    for key, (start, end) in blocks.items():
        if key in TOPOLOGY_KEYS:
            dropped.update(range(start, end))
            if key in desired:
                replacement[start] = _yaml_entry(key, desired[key])
    merged: List[str] = []
    for index, line in enumerate(lines):
        if index in replacement:
            merged.extend(replacement[index])
        if index not in dropped:
            merged.append(line)
    # Blocks may have swallowed trailing blank lines; keep the file's shape tidy.
    while merged and not merged[-1].strip():
        merged.pop()
    for key in TOPOLOGY_KEYS:
        if key in desired and key not in blocks:
            merged.extend(_yaml_entry(key, desired[key]))
    return "\n".join(merged) + "\n"
