"""What an inference engine's command line and environment say about its KV-cache transfer (pure, data-driven).

A container's ``command`` + ``args`` (or the script of a ``sh -c`` / ``bash -lc`` wrapper, seen
through ``tini --``, ``dumb-init``, ``exec`` and ``env -u X NAME=value`` in front: :mod:`gpu_fabric.kube.command_line`) and its ``env`` are read into one :class:`EngineSettings`: the KV connector, the NIXL backends and every
environment variable, each with the manifest path it came from, so a rule can name the field.

The flags are a table (:data:`FLAGS`), not code: each row says which flag, how its value is spelt,
and which setting it fills. Rows and their sources:

* vLLM ``--kv-transfer-config`` takes a JSON object, or its keys one by one in dotted form
  (``--kv-transfer-config.kv_connector NixlConnector``), where a trailing ``+`` appends to a list
  (``--kv-transfer-config.kv_connector_extra_config.backends+ LIBFABRIC``); NixlConnector's backends
  default to ``["UCX"]`` (vllm-project/vllm ``docs/features/nixl_connector_usage.md``, "Selecting a
  NIXL transport backend").
* Dynamo's vLLM worker ``--connector`` takes connector names (``--connector kvbm nixl``;
  ai-dynamo/dynamo launch scripts); ``nixl`` is vLLM's NixlConnector.
* SGLang (and Dynamo's SGLang worker) ``--disaggregation-transfer-backend`` names ``mooncake``
  (SGLang's default), ``nixl`` or others; NIXL then selects UCX when no backend is requested
  (NIXL docs, "Backend Selection / UCX": "UCX is automatically selected when no specific backend is
  requested").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from gpu_fabric.config import bounded_json
from gpu_fabric.config.bounded_json import JSONBoundsError
from gpu_fabric.kube.command_line import ASSIGN, CLEAR, UNSET, WORD, command_words, container_words

NIXL_CONNECTOR = "NixlConnector"
NIXL_DEFAULT_BACKENDS = ("UCX",)
"""NixlConnector's and NIXL's backend when none is named (see the module docstring)."""


@dataclass(frozen=True)
class Flag:
    """One row of the flag table.

    ``name`` is the flag as typed; ``form`` says how its value is spelt: ``json`` (one JSON object),
    ``dotted`` (``name.<key path>[+] value``), ``words`` (every following word up to the next flag)
    or ``word`` (one value). ``setting`` is the key of :attr:`EngineSettings.values` it fills;
    ``translate`` maps what was typed to the setting's vocabulary (``nixl`` -> ``NixlConnector``).
    """

    name: str
    form: str
    setting: str
    translate: Mapping[str, str] = field(default_factory=dict)


FLAGS: tuple[Flag, ...] = (
    Flag("--kv-transfer-config", "json", "kv_transfer_config"),
    Flag("--kv-transfer-config", "dotted", "kv_transfer_config"),
    Flag("--connector", "words", "connectors", {"nixl": NIXL_CONNECTOR}),
    Flag("--disaggregation-transfer-backend", "word", "transfer_backend"),
)


@dataclass(frozen=True)
class Setting:
    """A value read from the manifest and the path of the field it came from."""

    value: Any
    path: str


@dataclass
class EngineSettings:
    """The transfer-relevant settings of one container."""

    values: dict[str, Setting] = field(default_factory=dict)
    """Flag settings by :attr:`Flag.setting`."""
    env: dict[str, Setting] = field(default_factory=dict)
    """Environment variables with a literal value (``env[].value`` or ``NAME=value`` in a script)."""
    unresolved_env: list[str] = field(default_factory=list)
    """Paths of environment sources whose values are not in the manifest (``valueFrom``, ``envFrom``)."""
    referenced_env: dict[str, str] = field(default_factory=dict)
    """Variables set from a reference (``valueFrom``: a field, secret or ConfigMap), name -> path."""
    problems: list[tuple[str, str]] = field(default_factory=list)
    """``(path, message)`` for values the engine itself would refuse (a ``--kv-transfer-config`` that is not JSON)."""

    def kv_transfer_config(self) -> Mapping[str, Any]:
        setting = self.values.get("kv_transfer_config")
        return setting.value if setting is not None and isinstance(setting.value, Mapping) else {}

    def kv_connectors(self) -> list[Setting]:
        """Every KV connector the container configures (vLLM's ``kv_connector``, Dynamo's ``--connector``)."""
        found: list[Setting] = []
        config = self.values.get("kv_transfer_config")
        connector = self.kv_transfer_config().get("kv_connector")
        if config is not None and isinstance(connector, str):
            found.append(Setting(connector, config.path))
        connectors = self.values.get("connectors")
        if connectors is not None:
            found.extend(Setting(name, connectors.path) for name in connectors.value)
        backend = self.values.get("transfer_backend")
        if backend is not None and str(backend.value).lower() == "nixl":
            found.append(Setting(NIXL_CONNECTOR, backend.path))
        return found

    def uses_nixl(self) -> Setting | None:
        """The setting that makes this container transfer KV over NIXL, if any."""
        return next((s for s in self.kv_connectors() if s.value == NIXL_CONNECTOR), None)

    def vllm_nixl(self) -> Setting | None:
        """The setting that makes vLLM (alone or under Dynamo) use its NixlConnector; SGLang's NIXL is not it."""
        config = self.values.get("kv_transfer_config")
        if config is not None and self.kv_transfer_config().get("kv_connector") == NIXL_CONNECTOR:
            return Setting(NIXL_CONNECTOR, config.path)
        connectors = self.values.get("connectors")
        if connectors is not None and NIXL_CONNECTOR in connectors.value:
            return Setting(NIXL_CONNECTOR, connectors.path)
        return None

    def nixl_backends(self) -> Setting | None:
        """NIXL's backends (upper case) and where they were set; NIXL's default where none is named."""
        nixl = self.uses_nixl()
        if nixl is None:
            return None
        extra = self.kv_transfer_config().get("kv_connector_extra_config")
        backends = extra.get("backends") if isinstance(extra, Mapping) else None
        if isinstance(backends, list) and backends:
            return Setting(tuple(str(b).upper() for b in backends), self.values["kv_transfer_config"].path)
        return Setting(NIXL_DEFAULT_BACKENDS, nixl.path)


# ---------------------------------------------------------------------------------------------
# Reading a container (its command line's words: gpu_fabric.kube.command_line)
# ---------------------------------------------------------------------------------------------


def _parse_value(text: str) -> Any:
    # A dotted flag's value is JSON when it reads as JSON within bounds, else the word itself (vLLM's
    # FlexibleArgumentParser does the same), so an unbounded one cannot raise out of the parse.
    try:
        return bounded_json.loads(text)
    except (JSONBoundsError, TypeError):
        return text


def _set_dotted(target: dict[str, Any], keys: Sequence[str], value: Any, append: bool) -> None:
    node = target
    for key in keys[:-1]:
        child = node.get(key)
        if not isinstance(child, dict):
            child = node[key] = {}
        node = child
    last = keys[-1]
    if append:
        existing = node.get(last)
        node[last] = [*(existing if isinstance(existing, list) else []), *(value if isinstance(value, list) else [value])]
    else:
        node[last] = value


def _read_flags(words: list[tuple[int, str, str]], settings: EngineSettings) -> None:
    index = 0
    while index < len(words):
        kind, word, where = words[index]
        index += 1
        if kind == ASSIGN:
            name, _, value = word.partition("=")
            settings.env[name] = Setting(value, where)
            settings.referenced_env.pop(name, None)
            continue
        if kind == UNSET:
            settings.env.pop(word, None)
            settings.referenced_env.pop(word, None)
            continue
        if kind == CLEAR:
            settings.env.clear()
            settings.referenced_env.clear()
            continue
        if kind != WORD or not word.startswith("--"):
            continue
        name, equals, inline = word.partition("=")
        for flag in FLAGS:
            consumed = _apply(flag, name, inline if equals else None, words, index, where, settings)
            if consumed is not None:
                index += consumed
                break


def _apply(flag: Flag, name: str, inline: str | None, words: list[tuple[int, str, str]], index: int, where: str,
           settings: EngineSettings) -> int | None:
    """Apply one flag row to ``name``; return how many following words it took, or ``None`` if it does not match."""
    # Read the following words in place: copying the rest of the command line for every flag made
    # parsing quadratic (50,000 flags took minutes).
    def next_value() -> tuple[str | None, int]:
        if inline is not None:
            return inline, 0
        if index < len(words):
            kind, following, _ = words[index]
            if kind == WORD and not following.startswith("--"):
                return following, 1
        return None, 0

    if flag.form == "dotted":
        prefix = flag.name + "."
        if not name.startswith(prefix):
            return None
        key_path = name[len(prefix):]
        append = key_path.endswith("+")
        keys = [key for key in key_path.rstrip("+").split(".") if key]
        text, used = next_value()
        if not keys or text is None:
            settings.problems.append((where, f"{name} needs a value"))
            return used
        current = settings.values.get(flag.setting)
        config = dict(current.value) if current is not None and isinstance(current.value, Mapping) else {}
        _set_dotted(config, keys, _parse_value(text), append)
        settings.values[flag.setting] = Setting(config, current.path if current is not None else where)
        return used
    if name != flag.name:
        return None
    if flag.form == "json":
        text, used = next_value()
        if text is None:
            settings.problems.append((where, f"{name} needs a JSON object"))
            return used
        try:
            value = bounded_json.loads(text)
        except JSONBoundsError as error:
            settings.problems.append((where, f"{name} is {error}; the engine refuses to start"
                                      if str(error).startswith("not JSON") else f"{name} holds JSON beyond what gpu-fabric reads: {error}"))
            return used
        if not isinstance(value, dict):
            settings.problems.append((where, f"{name} must be a JSON object"))
            return used
        current = settings.values.get(flag.setting)
        merged = {**(current.value if current is not None and isinstance(current.value, Mapping) else {}), **value}
        settings.values[flag.setting] = Setting(merged, where)
        return used
    if flag.form == "word":
        text, used = next_value()
        if text is not None:
            settings.values[flag.setting] = Setting(flag.translate.get(text, text), where)
        return used
    # words: every value up to the next flag or separator
    values: list[str] = [inline] if inline is not None else []
    used = 0
    if inline is None:
        for position in range(index, len(words)):
            kind, word, _ = words[position]
            if kind != WORD or word.startswith("-"):
                break
            values.append(word)
            used += 1
    settings.values[flag.setting] = Setting(tuple(flag.translate.get(v, v) for v in values), where)
    return used


def _read_env(container: Mapping[str, Any], path: str, settings: EngineSettings) -> None:
    env = container.get("env")
    if isinstance(env, list):
        for i, item in enumerate(env):
            if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
                continue
            if "valueFrom" in item:
                settings.unresolved_env.append(f"{path}.env[{i}]")
                settings.referenced_env[item["name"]] = f"{path}.env[{i}]"
                continue
            value = item.get("value")
            settings.env[item["name"]] = Setting("" if value is None else str(value), f"{path}.env[{i}]")
    if container.get("envFrom"):
        settings.unresolved_env.append(f"{path}.envFrom")


def read_container(container: Mapping[str, Any], path: str) -> EngineSettings:
    """The engine settings of one container at manifest path ``path`` (``spec.containers[0]``).

    Script assignments (``UCX_TLS=tcp vllm serve ...``, ``export FI_PROVIDER=efa``) count as
    environment, as the engine process sees them; ``env[]`` entries override nothing here, they are
    read first and a script assignment of the same name wins, as it does at run time.
    """
    settings = EngineSettings()
    _read_env(container, path, settings)
    _read_flags(command_words(container_words(container, path)), settings)
    return settings
