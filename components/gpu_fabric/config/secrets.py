"""Secrets in what the user writes: Pulumi's ``secure:`` values, and credentials written in plain text.

One reader for both, used by every command that reads a stack file or a manifest:

* :func:`is_secure` / :func:`hide_secure` / :func:`offline_values`: a stack file's ``{secure: <ciphertext>}``
  leaf (``pulumi config set --secret``, also ``--path`` into a structured value) is what an offline run
  cannot decrypt. Every offline reader (render, check, verify, ``lint --stack``, ``efa-info --stack``)
  sees it as :data:`SECRET_PLACEHOLDER`, so neither the ciphertext nor a secret reaches validation, its
  messages, the output files or a recording.
* :func:`credential_reason`: whether an environment variable (a name and its literal value) or a
  command-line word holds a credential in plain text. A stack file in git, a rendered ``out/`` folder
  and a manifest in a repository are read by everyone who reads the repository; a token belongs in a
  Pulumi secret or a Kubernetes Secret (``valueFrom.secretKeyRef``).

What counts as a credential (decided here, documented in docs/stacks.md "Secrets and model tokens"):

* a value with a known token shape, whatever the variable's name: Hugging Face ``hf_`` (User access
  tokens, huggingface.co/docs/hub/security-tokens), GitHub ``ghp_``/``gho_``/``ghu_``/``ghs_``/``ghr_``
  and ``github_pat_`` (github.blog "Behind GitHub's new authentication token formats"), AWS access key
  ids ``AKIA``/``ASIA`` (IAM User Guide, "Unique identifiers"; STS GetAccessKeyInfo), OpenAI/Anthropic
  ``sk-``, Slack ``xoxb-``/``xoxp-``/``xoxa-``/``xoxr-``/``xoxs-``, GitLab ``glpat-``, Google ``AIza``
  and PEM private keys; a prefix counts only followed by a random-looking body (long enough, with a digit),
  so ``hf_transfer`` or ``sk-pool`` are no tokens;
* a value of at least 8 characters under a name whose words (split at ``_``, ``-``, ``.``) include
  TOKEN, SECRET, PASSWORD, PASSWD, PASSPHRASE, APIKEY, CREDENTIAL(S) or KEY -- ``HF_TOKEN``,
  ``AWS_SECRET_ACCESS_KEY``, ``OPENAI_API_KEY`` -- unless the last word says the value is where or which
  secret, not the secret (``HF_TOKEN_PATH``, ``SECRET_NAME``, ``AWS_ACCESS_KEY_ID``, ``SSL_KEY_FILE``),
  or the value is a path, a ``$(VAR)`` / ``${VAR}`` reference, a number or a boolean. Words are whole:
  ``MAX_NUM_BATCHED_TOKENS`` and ``TOKENIZERS_PARALLELISM`` are no credentials.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping, Optional

SECRET_PLACEHOLDER = "[secret]"
"""What an offline run reads, and a render writes, in place of a secret value."""

_CREDENTIAL_WORDS = frozenset({"TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "APIKEY", "CREDENTIAL",
                               "CREDENTIALS", "KEY"})
_NOT_THE_SECRET = frozenset({"PATH", "FILE", "FILENAME", "DIR", "NAME", "ID", "ARN", "REF", "URL", "URI", "ENDPOINT",
                             "TYPE", "HEADER", "FIELD", "LENGTH", "SIZE", "TTL", "ENABLED", "DISABLED", "MODE",
                             "VERSION", "ALGORITHM", "FORMAT", "REGION", "PROVIDER", "ROLE", "USER", "USERNAME"})
_MIN_SECRET_LENGTH = 8

# Known token shapes: the prefix, then a body long enough to be random; ``(?=[^\s]*\d)`` wants a digit in it.
_TOKEN = re.compile(
    r"(?<![A-Za-z0-9_])(?:"
    r"hf_(?=[A-Za-z0-9]*\d)[A-Za-z0-9]{30,}"
    r"|gh[pousr]_(?=[A-Za-z0-9]*\d)[A-Za-z0-9]{36,}"
    r"|github_pat_(?=[A-Za-z0-9_]*\d)[A-Za-z0-9_]{22,}"
    r"|(?:AKIA|ASIA)(?=[A-Z0-9]*\d)[A-Z0-9]{16}(?![A-Za-z0-9])"
    r"|sk-(?:proj-|ant-|svcacct-)?(?=[A-Za-z0-9_-]*\d)[A-Za-z0-9_-]{32,}"
    r"|xox[abprs]-(?=[A-Za-z0-9-]*\d)[A-Za-z0-9-]{10,}"
    r"|glpat-(?=[A-Za-z0-9_-]*\d)[A-Za-z0-9_-]{20,}"
    r"|AIza(?=[0-9A-Za-z_-]*\d)[0-9A-Za-z_-]{35}"
    r")|-----BEGIN (?:[A-Z]+ )*PRIVATE KEY-----")
_REFERENCE = re.compile(r"^\$(?:\([A-Za-z_][A-Za-z0-9_]*\)|\{[A-Za-z_][A-Za-z0-9_]*\}|[A-Za-z_][A-Za-z0-9_]*)$")
_NOT_SECRET_VALUES = frozenset({"true", "false", "yes", "no", "on", "off", "none", "null"})


# ---------------------------------------------------------------------------------------------
# Pulumi secrets (``secure:``)
# ---------------------------------------------------------------------------------------------


def is_secure(value: Any) -> bool:
    """``{secure: <ciphertext>}``: a Pulumi secret as a stack file holds it."""
    return isinstance(value, dict) and set(value) == {"secure"} and isinstance(value["secure"], str)


def hide_secure(value: Any) -> tuple[Any, bool]:
    """``value`` with every ``secure:`` leaf as :data:`SECRET_PLACEHOLDER`, and whether it held one."""
    if is_secure(value):
        return SECRET_PLACEHOLDER, True
    if isinstance(value, dict):
        entries = {key: hide_secure(item) for key, item in value.items()}
        return {key: item for key, (item, _) in entries.items()}, any(found for _, found in entries.values())
    if isinstance(value, list):
        items = [hide_secure(item) for item in value]
        return [item for item, _ in items], any(found for _, found in items)
    return value, False


def offline_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """A stack file's ``config:`` values as an offline run sees them: every ``secure:`` leaf as :data:`SECRET_PLACEHOLDER`."""
    return {key: hide_secure(value)[0] for key, value in values.items()}


def namespace_values(values: Mapping[str, Any], namespace: str) -> dict[str, Any]:
    """The ``namespace:*`` values of a stack file's ``config:`` block, keyed without the namespace, secrets hidden."""
    prefix = f"{namespace}:"
    return {key[len(prefix):]: value for key, value in offline_values(values).items() if key.startswith(prefix)}


# ---------------------------------------------------------------------------------------------
# Credentials in plain text
# ---------------------------------------------------------------------------------------------


def token_in(text: str) -> Optional[str]:
    """The kind of known token ``text`` holds (``a Hugging Face token``), or ``None``. Never the token."""
    match = _TOKEN.search(text)
    if match is None:
        return None
    found = match.group(0)
    for prefix, kind in (("hf_", "a Hugging Face token"), ("github_pat_", "a GitHub token"), ("gh", "a GitHub token"),
                         ("AKIA", "an AWS access key id"), ("ASIA", "an AWS access key id"), ("sk-", "an API key"),
                         ("xox", "a Slack token"), ("glpat-", "a GitLab token"), ("AIza", "a Google API key")):
        if found.startswith(prefix):
            return kind
    return "a private key"


def credential_name(name: str) -> bool:
    """``name`` says its value is a credential (``HF_TOKEN``, ``AWS_SECRET_ACCESS_KEY``), not where one is (``HF_TOKEN_PATH``)."""
    words = [word for word in re.split(r"[^A-Za-z0-9]+", name.upper()) if word]
    return bool(words) and any(word in _CREDENTIAL_WORDS for word in words) and words[-1] not in _NOT_THE_SECRET


def _could_be_secret(value: str) -> bool:
    text = value.strip()
    return not (len(text) < _MIN_SECRET_LENGTH or text == SECRET_PLACEHOLDER or text.lower() in _NOT_SECRET_VALUES
                or text.startswith(("/", "~/", "./", "../", "file://")) or _REFERENCE.match(text) or text.isdigit())


def credential_reason(name: Optional[str], value: Any) -> Optional[str]:
    """Why ``name=value`` is a credential in plain text (``HF_TOKEN holds a Hugging Face token``), or ``None``.

    ``name`` is ``None`` for a word that is no variable (a command-line argument): only a known token
    shape counts there. The reason never quotes the value.
    """
    if not isinstance(value, str):
        return None
    kind = token_in(value)
    label = name if name else "the value"
    if kind is not None:
        return f"{label} holds {kind} in plain text"
    if name and credential_name(name) and _could_be_secret(value):
        return f"{name} looks like a credential (its name) and is written in plain text"
    return None


STACK_FILE_ADVICE = ("keep it out of the stack file: pulumi config set --secret --path '{path}' <value> "
                     "(stored encrypted as secure:), or mount it from a Kubernetes Secret")
"""How to write a credential of the stack file instead; ``{path}`` is the value's ``namespace:key`` path."""

MANIFEST_ADVICE = ("read it from a Kubernetes Secret instead: valueFrom: {secretKeyRef: {name: <secret>, key: <key>}} "
                   "(kubectl create secret generic <secret> --from-literal=<key>=...)")
"""How to write a credential of a manifest instead."""

ENV_LIST_KEYS = frozenset({"env", "extraenv", "extra_env"})
"""Keys (folded to lower case) of lists of ``{name, value}`` environment variables."""
ARGUMENT_LIST_KEYS = frozenset({"command", "args", "extraargs", "extra_args"})
"""Keys (folded to lower case) of command lines."""


_ASSIGNMENT = re.compile(r"(?:^|[\s;&|(])(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(\"[^\"]*\"|'[^']*'|[^\s;&|)]*)")


def argument_reason(word: str) -> Optional[str]:
    """Why a command-line word (or a ``sh -c`` script) holds a credential in plain text, or ``None``:
    a known token shape anywhere in it, or a ``NAME=value`` assignment in it whose name and value say so."""
    kind = token_in(word)
    if kind is not None:
        return f"the argument holds {kind} in plain text"
    for match in _ASSIGNMENT.finditer(word):
        reason = credential_reason(match.group(1), match.group(2).strip("\"'"))
        if reason is not None:
            return reason
    return None


def plaintext_credentials(value: Any, path: str) -> list[tuple[str, str]]:
    """``(path, reason)`` for every credential written in plain text below ``value`` (at ``path``), in order.

    Reads every list of environment variables (``env``, ``extraEnv``: ``{name, value}`` items) and every
    command line (``command``, ``args``, ``extraArgs``) at any depth; ``secure:`` leaves are no plain text.
    Iterative, so a deeply nested value cannot exhaust the interpreter's stack.
    """
    found: list[tuple[str, str]] = []
    pending: list[tuple[Any, str, str]] = [(value, path, "")]
    while pending:
        node, where, key = pending.pop()
        children: list[tuple[Any, str, str]] = []
        if isinstance(node, dict) and not is_secure(node):
            children = [(item, f"{where}.{name}" if where else str(name), str(name)) for name, item in node.items()]
        elif isinstance(node, list):
            folded = key.lower()
            for index, item in enumerate(node):
                item_path = f"{where}[{index}]"
                if folded in ENV_LIST_KEYS and isinstance(item, dict) and isinstance(item.get("name"), str):
                    reason = credential_reason(item["name"], item.get("value"))
                    if reason is not None:
                        found.append((f"{item_path}.value", reason))
                elif folded in ARGUMENT_LIST_KEYS and isinstance(item, str):
                    reason = argument_reason(item)
                    if reason is not None:
                        found.append((item_path, reason))
                else:
                    children.append((item, item_path, ""))
        pending.extend(reversed(children))
    return found


def configuration_credentials(values: Mapping[str, Any], namespace: str,
                              secret_keys: Iterable[str] = ()) -> list[tuple[str, str]]:
    """``(path, message)`` for each credential a ``namespace:*`` value holds in plain text, with how to write it
    instead; ``values`` are keyed without the namespace, ``secret_keys`` (held as Pulumi secrets) are not judged.

    The one check behind the stack file's refusal (``render``, ``check``, every offline command) and the stack
    program's under ``pulumi up``, which sees the engine's values and which keys are secrets, not the file.
    """
    skipped = set(secret_keys)
    problems = []
    for key, value in values.items():
        if key in skipped:
            continue
        for where, reason in plaintext_credentials(value, key):
            problems.append((where, f"{reason}; {STACK_FILE_ADVICE.format(path=f'{namespace}:{where}')}"))
    return problems

