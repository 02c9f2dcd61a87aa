"""How large the stack configuration is when Pulumi hands it to the program, and the limit it must fit.

Pulumi gives a Python program its whole stack configuration in ONE environment variable, and Linux
refuses an ``execve`` whose single environment string is longer than ``MAX_ARG_STRLEN``: 32 pages,
131,072 bytes on 4 KiB-page kernels, counting the ``NAME=`` prefix and the terminating NUL
(linux fs/exec.c ``copy_strings``/``valid_arg_len``; include/uapi/linux/binfmts.h). A stack over it
never starts: ``pulumi preview`` fails with "problem executing program (could not run language
executor): fork/exec .../python: argument list too long" (pulumi/pulumi#8680), and a policy pack
started the legacy way with "failed to load plugin ... argument list too long" (pulumi/pulumi#20402).
``gpu-fabric render``/``check`` call no exec, so without :data:`STACK_CONFIG_SIZE` they would pass it.

The encoding, confirmed from Pulumi's Go source (module cache, ``github.com/pulumi/pulumi/sdk/v3@v3.274.1``):

* ``pkg/v3@v3.274.1 resource/deploy/source_eval.go`` (``evalSource.Iterate``): the program's
  configuration is ``Target.Config.Decrypt(...)`` -- every key of the stack file's ``config:``, whatever
  its namespace (``aws:``, ``kubernetes:``, ``gpu-fabric:``), secrets decrypted -- and the secret keys
  ``Target.Config.SecureKeys()``.
* ``sdk/v3@v3.274.1 go/common/resource/config/map.go`` (``Map.Decrypt``) and ``plaintext.go``
  (``Plaintext.marshalText``): a string value is passed as it is; any other value (number, boolean,
  object, list) as ``json.Marshal`` of it -- compact, map keys sorted. ``object.go`` (``unmarshalObject``,
  ``isSecureValue``): a ``{secure: <ciphertext>}`` mapping, at the top or nested, is a secret.
* ``sdk/v3@v3.274.1 go/common/resource/plugin/langruntime_plugin.go`` (``Run``): keys as
  ``namespace:name`` (``config.Key.String``). The Python language host then runs the program with
  ``PULUMI_CONFIG=<json.Marshal(map[string]string)>`` and ``PULUMI_CONFIG_SECRET_KEYS=<json.Marshal([]string)>``
  (``"[]"`` when none), two separate variables: upstream's ``sdk/python/cmd/pulumi-language-python/main.go``
  (``constructConfig``/``constructConfigSecretKeys``; a nested module the Go proxy here does not serve, so
  not in the module cache) and gpu-fabric's own host modelled on it, ``scripts/engine/pulumi-language-python/main.go``
  (``Run``).
* ``sdk/v3@v3.274.1 go/common/resource/plugin/analyzer_plugin.go`` (``constructEnv``/``constructConfig``):
  a policy pack started through the legacy ``pulumi-analyzer-policy-<runtime>`` plugin gets the same decrypted
  map as ``PULUMI_CONFIG`` (no secret keys variable); one started through its language host (gpu-fabric's
  pack, with the Python host installed) gets the configuration over gRPC (``ConfigureStack``) instead. Either
  way the program's ``PULUMI_CONFIG`` is the same string, so one limit covers both.

So a value's bytes are counted twice over: a structured value is JSON text, which ``PULUMI_CONFIG``'s JSON
then quotes again (every ``"`` becomes ``\\"``). Go's encoder also writes ``<``, ``>``, ``&``, U+2028 and
U+2029 as six-byte ``\\u`` escapes, and keeps other non-ASCII characters as UTF-8; :func:`go_json` does the same.

Offline the secrets cannot be decrypted: a secure value counts as the ciphertext the file holds. The
plaintext is what Pulumi sends, and it is shorter (the ciphertext is its encryption in base64 with a nonce
and a tag), so the figure is an upper bound of a few dozen bytes per secret, and a stack refused by less
than that could still run. Pulumi reads the file with YAML 1.2 (gopkg.in/yaml.v3), gpu-fabric with PyYAML's
1.1: an unquoted ``yes`` or ``1:20`` (a boolean, a base-60 number to PyYAML) counts a few bytes differently.
Configuration that does not come from the file (an ESC ``environment:``, the project's ``config:`` defaults
in ``Pulumi.yaml``) is not counted.

The whole exec's size (every argument and environment string together, ``ARG_MAX``, ``os.sysconf("SC_ARG_MAX")``:
a quarter of the stack limit, 2 MiB by default) is not checked: the configuration adds at most twice 128 KiB
to it, and the rest is the shell's environment, which the stack file does not decide. Kernels with 64 KiB pages
allow 2 MiB per string; the limit here is the 4 KiB-page one, since CI and laptops (x86-64) have those.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Mapping

from gpu_fabric.config.secrets import replace_secure
from gpu_fabric.findings import FieldPath, Finding, Rule

MAX_ARG_STRLEN = 32 * 4096
"""Linux's limit of one argument or environment string of an exec, its terminating NUL included (4 KiB pages)."""
CONFIG_VARIABLE = "PULUMI_CONFIG"
SECRET_KEYS_VARIABLE = "PULUMI_CONFIG_SECRET_KEYS"
UPSTREAM_ISSUES = "pulumi/pulumi#8680, pulumi/pulumi#20402"
LARGEST_KEYS_NAMED = 3

STACK_CONFIG_SIZE = Rule(
    "stack-config-size",
    "the stack configuration fits the one environment variable Pulumi hands it to the program in "
    f"({CONFIG_VARIABLE}, at most {MAX_ARG_STRLEN:,} bytes on Linux)",
    source="https://github.com/pulumi/pulumi/issues/8680 (also pulumi/pulumi#20402; Linux's MAX_ARG_STRLEN, fs/exec.c)")
"""A stack file whose configuration Pulumi cannot pass to the program: ``pulumi preview`` fails before it runs.
Decided on the stack file (``render``, ``check``, ``lint --stack``, ``diff``); the pack never sees it, and under
the real engine the program never starts."""

_GO_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def _go_string(text: str) -> str:
    encoded = json.dumps(text, ensure_ascii=False)
    if any(ch in encoded for ch in _GO_ESCAPES):
        encoded = "".join(_GO_ESCAPES.get(ch, ch) for ch in encoded)
    return encoded


def _go_float(number: float) -> str:
    """Go's ``encoding/json`` float64: shortest digits, positional between 1e-6 and 1e21, else ``1e+21``/``1e-7``."""
    if not math.isfinite(number):
        raise ValueError(f"{number!r} is not a JSON number")
    magnitude = abs(number)
    if magnitude != 0 and (magnitude < 1e-6 or magnitude >= 1e21):
        text = repr(number)  # scientific here, with at least two exponent digits, as strconv's 'e' format
        mantissa, _, exponent = text.partition("e")
        if exponent.startswith("-0"):  # Go cleans e-07 to e-7
            exponent = "-" + exponent[2:]
        return f"{mantissa}e{exponent}"
    text = format(Decimal(repr(number)), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def go_json(value: Any) -> str:
    """``value`` as Go's ``json.Marshal`` writes it: compact, map keys sorted, HTML characters escaped."""
    if isinstance(value, str):
        return _go_string(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _go_float(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{_go_string(str(key))}:{go_json(value[key])}" for key in sorted(value, key=str)) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(go_json(item) for item in value) + "]"
    raise TypeError(f"{type(value).__name__} is not a configuration value")


def _decrypted_stand_in(value: Any) -> tuple[Any, bool]:
    """``value`` with each ``secure:`` leaf as its ciphertext (offline stand-in of the plaintext), and whether it held one."""
    return replace_secure(value, lambda secure: secure["secure"])


def engine_text(value: Any) -> str:
    """One configuration value as the engine hands it over: a string as it is, anything else as Go's JSON of it."""
    plain, _ = _decrypted_stand_in(value)
    return plain if isinstance(plain, str) else go_json(plain)


def _environment_bytes(name: str, text: str) -> int:
    """Bytes of ``NAME=text`` as the kernel counts one environment string: UTF-8 and the terminating NUL."""
    return len(name.encode()) + 1 + len(text.encode("utf-8")) + 1


@dataclass(frozen=True)
class ConfigEnvironment:
    """The two environment strings the Python language host gives the program for one stack configuration."""

    config: str
    """The value of ``PULUMI_CONFIG``."""
    secret_keys: str
    """The value of ``PULUMI_CONFIG_SECRET_KEYS``."""
    key_bytes: tuple[tuple[str, int], ...]
    """Each top-level key and the bytes its entry (``"key":"value",``) takes in ``PULUMI_CONFIG``, largest first."""

    @property
    def sizes(self) -> dict[str, int]:
        """Bytes of each variable as the kernel counts it (``NAME=``, the value, the NUL)."""
        return {CONFIG_VARIABLE: _environment_bytes(CONFIG_VARIABLE, self.config),
                SECRET_KEYS_VARIABLE: _environment_bytes(SECRET_KEYS_VARIABLE, self.secret_keys)}


def config_environment(config: Mapping[str, Any]) -> ConfigEnvironment:
    """``PULUMI_CONFIG`` and ``PULUMI_CONFIG_SECRET_KEYS`` of a stack file's ``config:`` block (``namespace:key`` -> value)."""
    texts = {key: engine_text(value) for key, value in config.items()}
    secret = sorted(key for key, value in config.items() if _decrypted_stand_in(value)[1])
    entries = sorted(((key, len(f"{_go_string(key)}:{_go_string(text)},".encode("utf-8"))) for key, text in texts.items()),
                     key=lambda entry: (-entry[1], entry[0]))
    return ConfigEnvironment(go_json(texts), go_json(secret), tuple(entries))


def config_size_findings(config: Mapping[str, Any]) -> list[Finding]:
    """A finding of :data:`STACK_CONFIG_SIZE` per environment variable of ``config`` that Linux would refuse to exec."""
    environment = config_environment(config)
    findings = []
    for variable, size in environment.sizes.items():
        if size <= MAX_ARG_STRLEN:
            continue
        largest = ", ".join(f"{key} {key_size:,} bytes" for key, key_size in environment.key_bytes[:LARGEST_KEYS_NAMED])
        findings.append(Finding.of(
            STACK_CONFIG_SIZE, FieldPath.of("config"),
            f"{variable} would be {size:,} bytes as Pulumi encodes this configuration for the program (one environment "
            f"string, values JSON inside JSON), over Linux's {MAX_ARG_STRLEN:,}-byte limit (MAX_ARG_STRLEN): pulumi preview "
            f"would fail with \"argument list too long\" before the program runs ({UPSTREAM_ISSUES}); largest keys: "
            f"{largest}; shrink them or split the tenants (namespaces, modelDeployments) across stacks"))
    return findings
