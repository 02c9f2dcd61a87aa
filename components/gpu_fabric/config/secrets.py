"""Secrets in what the user writes: Pulumi's ``secure:`` values, and credentials written in plain text.

One reader for both, used by every command that reads a stack file or a manifest:

* :func:`is_secure` / :func:`hide_secure` / :func:`offline_values`: a stack file's ``{secure: <ciphertext>}``
  leaf (``pulumi config set --secret``, also ``--path`` into a structured value) is what an offline run
  cannot decrypt. Every offline reader (render, check, verify, ``lint --stack``, ``efa-info --stack``)
  sees it as :data:`SECRET_PLACEHOLDER`, so neither the ciphertext nor a secret reaches validation, its
  messages, the output files or a recording.
* :func:`credential_sites`: the one credential detector. Every place that refuses a credential written in
  plain text (the stack file, the stack program, ``lint --stack`` and the pack's ``plaintext-credential``
  rule) and every recording that must not keep one (``verify --record``) asks it. A stack file in git, a
  rendered ``out/`` folder and a manifest in a repository are read by everyone who reads the repository;
  a token belongs in a Pulumi secret or a Kubernetes Secret (``valueFrom.secretKeyRef``).

What counts as a credential (decided here, documented in docs/stacks.md "Secrets and model tokens"):

* a value with a known shape, in any string wherever it is: Hugging Face ``hf_`` (User access tokens,
  huggingface.co/docs/hub/security-tokens), GitHub ``ghp_``/``gho_``/``ghu_``/``ghs_``/``ghr_`` and
  ``github_pat_`` (github.blog "Behind GitHub's new authentication token formats"), AWS access key ids
  ``AKIA``/``ASIA`` (IAM User Guide, "Unique identifiers"), OpenAI/Anthropic ``sk-``, Slack ``xox?-``,
  GitLab ``glpat-``, Google ``AIza``, JSON Web Tokens (RFC 7519: ``eyJ...`` header and claims), PEM private
  keys and a password in a URL's userinfo (RFC 3986 section 3.2.1); a prefix counts only followed by a
  random-looking body (long enough, with a digit), so ``hf_transfer`` or ``sk-pool`` are no tokens;
* a value of at least 8 characters under a name whose whole words (split at punctuation and camelCase humps:
  ``hfToken``, ``X-Api-Key``) include TOKEN, SECRET, PASSWORD, PASSWD, PWD, PASSPHRASE, APIKEY, CREDENTIAL(S),
  KEY, AUTHORIZATION or, as the last word, AUTH, or that is ``PGPASSWORD`` -- in a variable, a probe's HTTP header, an
  annotation, an AWS tag, a ConfigMap's data, or a command-line flag (``--api-key VALUE``, ``--hf-token=VALUE``)
  -- unless:

  - the last word says where or which the secret is, not the secret (``HF_TOKEN_PATH``, ``SECRET_NAME``,
    ``AWS_ACCESS_KEY_ID``, ``KMS_KEY_ALIAS``, ``SSL_KEY_FILE``);
  - the name is of a public key or a KMS key (``SSH_PUBLIC_KEY``, ``KMS_KEY``: the material never leaves KMS), or
    the value is a public key or certificate (``ssh-ed25519 AAAA...``, ``-----BEGIN PUBLIC KEY-----``);
  - the name is a tokenizer's special token (``EOS_TOKEN``, ``PAD_TOKEN``) or the value looks like one
    (``<|im_end|>``, ``</s>``, ``[SEP]``);
  - the value is a path, an ``alias/...`` or ARN, a ``$(VAR)`` / ``${VAR}`` reference, a number or a boolean.

  Words are whole: ``MAX_NUM_BATCHED_TOKENS`` and ``TOKENIZERS_PARALLELISM`` are no credentials.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Optional

SECRET_PLACEHOLDER = "[secret]"
"""What an offline run reads, and a render writes, in place of a secret value."""

_CREDENTIAL_WORDS = frozenset({"TOKEN", "SECRET", "PASSWORD", "PASSWD", "PWD", "PASSPHRASE", "APIKEY", "CREDENTIAL",
                               "CREDENTIALS", "KEY", "AUTH", "AUTHORIZATION"})
# Whole names that glue a credential word to another (PostgreSQL's libpq, "Environment Variables").
_CREDENTIAL_NAMES = frozenset({"PGPASSWORD"})
_NOT_THE_SECRET = frozenset({"PATH", "FILE", "FILENAME", "DIR", "NAME", "ID", "IDS", "ARN", "REF", "URL", "URI",
                             "ENDPOINT", "TYPE", "HEADER", "FIELD", "LENGTH", "SIZE", "TTL", "ENABLED", "DISABLED", "MODE",
                             "VERSION", "ALGORITHM", "FORMAT", "REGION", "PROVIDER", "ROLE", "USER", "USERNAME", "ALIAS",
                             "PREFIX", "SUFFIX", "COUNT", "TIMEOUT", "METHOD", "SCHEME", "STRATEGY", "BACKEND", "SOURCE"})
# A public key is meant to be shared; a key named for KMS is an id or alias (the material never leaves KMS).
_PUBLIC_WORDS = frozenset({"PUBLIC", "PUB", "PUBKEY", "KMS", "CERT", "CERTIFICATE", "FINGERPRINT"})
# Tokenizer special tokens (Hugging Face tokenizers' eos_token, bos_token, ...) are vocabulary, not credentials.
_TOKENIZER_WORDS = frozenset({"EOS", "BOS", "PAD", "UNK", "SEP", "CLS", "MASK", "STOP", "SPECIAL", "EOT", "START", "END"})
_MIN_SECRET_LENGTH = 8
_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]*[a-z]+|[A-Z]+|\d+")
_PUBLIC_KEY = re.compile(r"^(?:-----BEGIN (?:[A-Z]+ )*(?:PUBLIC KEY|CERTIFICATE)-----"
                         r"|(?:ssh-(?:rsa|dss|ed25519)|ecdsa-sha2-nistp\d+|sk-(?:ssh-ed25519|ecdsa-sha2-nistp256)@openssh\.com)"
                         r" AAAA)")
_TOKENIZER_TOKEN = re.compile(r"^(?:<\|?[^\s<>|]{1,48}\|?>|<\/?[a-z_]{1,16}>|\[[A-Z_]{2,16}\])$")
# ``scheme://user:password@host`` (RFC 3986 section 3.2.1 deprecates a password in userinfo for this reason).
_URL_USERINFO = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:([^/\s@]+)@")

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
    # A JSON Web Token (RFC 7519): base64url header and claims, both JSON objects (``{"`` encodes as ``eyJ``).
    r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"
    r")|-----BEGIN (?:[A-Z]+ )*PRIVATE KEY-----")
_REFERENCE = re.compile(r"^\$(?:\([A-Za-z_][A-Za-z0-9_]*\)|\{[A-Za-z_][A-Za-z0-9_]*\}|[A-Za-z_][A-Za-z0-9_]*)$")
_NOT_SECRET_VALUES = frozenset({"true", "false", "yes", "no", "on", "off", "none", "null"})


# ---------------------------------------------------------------------------------------------
# Pulumi secrets (``secure:``)
# ---------------------------------------------------------------------------------------------


def is_secure(value: Any) -> bool:
    """``{secure: <ciphertext>}``: a Pulumi secret as a stack file holds it."""
    return isinstance(value, dict) and set(value) == {"secure"} and isinstance(value["secure"], str)


def replace_secure(value: Any, leaf: Callable[[dict[str, Any]], Any]) -> tuple[Any, bool]:
    """``value`` with every ``secure:`` leaf replaced by ``leaf(it)``, and whether it held one."""
    if is_secure(value):
        return leaf(value), True
    if isinstance(value, dict):
        entries = {key: replace_secure(item, leaf) for key, item in value.items()}
        return {key: item for key, (item, _) in entries.items()}, any(found for _, found in entries.values())
    if isinstance(value, list):
        items = [replace_secure(item, leaf) for item in value]
        return [item for item, _ in items], any(found for _, found in items)
    return value, False


def hide_secure(value: Any) -> tuple[Any, bool]:
    """``value`` with every ``secure:`` leaf as :data:`SECRET_PLACEHOLDER`, and whether it held one."""
    return replace_secure(value, lambda _: SECRET_PLACEHOLDER)


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
    """The kind of credential ``text`` holds by its shape alone (``a Hugging Face token``), or ``None``. Never the token."""
    match = _TOKEN.search(text)
    if match is not None:
        found = match.group(0)
        for prefix, kind in (("hf_", "a Hugging Face token"), ("github_pat_", "a GitHub token"), ("gh", "a GitHub token"),
                             ("AKIA", "an AWS access key id"), ("ASIA", "an AWS access key id"), ("sk-", "an API key"),
                             ("xox", "a Slack token"), ("glpat-", "a GitLab token"), ("AIza", "a Google API key"),
                             ("eyJ", "a JSON Web Token")):
            if found.startswith(prefix):
                return kind
        return "a private key"
    for match in _URL_USERINFO.finditer(text):
        password = match.group(1)
        if not (_REFERENCE.match(password) or set(password) <= {"*", "x", "X"} or password == SECRET_PLACEHOLDER):
            return "a password in a URL"
    return None


def mask_tokens(text: str, mask: str) -> str:
    """``text`` with every credential that its shape betrays (:func:`token_in`) replaced by ``mask``."""
    text = _TOKEN.sub(mask, text)
    return _URL_USERINFO.sub(lambda match: match.group(0).replace(match.group(1), mask)
                             if token_in(match.group(0)) else match.group(0), text)


def name_words(name: str) -> list[str]:
    """``name``'s words in upper case: split at every non-alphanumeric and at camelCase humps
    (``hfToken`` -> ``HF TOKEN``, ``X-Api-Key`` -> ``X API KEY``, ``APIKey`` -> ``API KEY``)."""
    return [word.upper() for word in _WORD.findall(name)]


def credential_name(name: str) -> bool:
    """``name`` says its value is a credential (``HF_TOKEN``, ``hfToken``, ``PGPASSWORD``), not where or which one is
    (``HF_TOKEN_PATH``, ``KMS_KEY_ALIAS``), nor a public key (``SSH_PUBLIC_KEY``) or a tokenizer's token (``EOS_TOKEN``)."""
    words = name_words(name)
    if not words or words[-1] in _NOT_THE_SECRET or any(word in _PUBLIC_WORDS for word in words):
        return False
    if "".join(words) in _CREDENTIAL_NAMES or "_".join(words) in _CREDENTIAL_NAMES:
        return True
    for index, word in enumerate(words):
        if word == "AUTH" and index != len(words) - 1:
            continue  # REDISCLI_AUTH holds a password; AUTH_ENABLED, AUTH_CONFIG_MAP do not
        if word in _CREDENTIAL_WORDS and not (word == "TOKEN" and index and words[index - 1] in _TOKENIZER_WORDS):
            return True
    return False


def _could_be_secret(value: str) -> bool:
    """Whether a value under a credential's name may be the credential: not a path, reference, number, boolean,
    public key, tokenizer token (``<|im_end|>``) or key identifier (``alias/...``, an ARN)."""
    text = value.strip()
    return not (len(text) < _MIN_SECRET_LENGTH or text == SECRET_PLACEHOLDER or text.lower() in _NOT_SECRET_VALUES
                or text.startswith(("/", "~/", "./", "../", "file://", "alias/", "arn:")) or _REFERENCE.match(text)
                or text.isdigit() or _PUBLIC_KEY.match(text) or _TOKENIZER_TOKEN.match(text))


def credential_reason(name: Optional[str], value: Any) -> Optional[str]:
    """Why ``name=value`` is a credential in plain text (``HF_TOKEN holds a Hugging Face token``), or ``None``.

    ``name`` is ``None`` for a value under no name: only a credential's shape counts there. The reason
    never quotes the value.
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

ENV_LIST_KEYS = frozenset({"env", "extraenv", "extra_env", "httpheaders", "http_headers"})
"""Keys (folded to lower case) of lists of ``{name, value}`` items: environment variables, and a probe's HTTP headers."""
ARGUMENT_LIST_KEYS = frozenset({"command", "args", "extraargs", "extra_args"})
"""Keys (folded to lower case) of command lines."""
NAMED_VALUE_MAPS = frozenset({"annotations", "tags"})
"""Keys (folded to lower case) of ``name: value`` mappings judged entry by entry: annotations and AWS tags
(a ConfigMap's ``data``, which ``envFrom`` loads as variables, is judged the same way)."""
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
"""The annotation ``kubectl apply`` keeps the whole applied object in, as JSON."""


_ASSIGNMENT = re.compile(r"(?:^|[\s;&|(])(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(\"[^\"]*\"|'[^']*'|[^\s;&|)]*)")
_FLAG = re.compile(r"^--?([A-Za-z][A-Za-z0-9_.-]*)(?:=(.*))?$", re.DOTALL)


def _flag_reason(flag: str, value: str) -> Optional[str]:
    # vLLM's ``--api-key KEY`` (docs.vllm.ai, "OpenAI-Compatible Server"), the legacy ``--hf-token``: a flag named
    # like a credential carries one, whether as ``--flag VALUE`` or ``--flag=VALUE``.
    if credential_name(flag) and _could_be_secret(value):
        return f"the value of --{flag} looks like a credential (the flag's name) and is written in plain text"
    return None


def _argument_word_reasons(words: list[str]) -> list[tuple[int, str]]:
    """``(index, reason)`` for each word of a command line that holds a credential in plain text."""
    found: list[tuple[int, str]] = []
    for index, word in enumerate(words):
        reason = argument_reason(word)
        if reason is None and index and isinstance(words[index - 1], str):
            flag = _FLAG.match(words[index - 1])
            if flag is not None and flag.group(2) is None and not word.startswith("-"):
                reason = _flag_reason(flag.group(1), word)
        if reason is not None:
            found.append((index, reason))
    return found


def argument_reason(word: str) -> Optional[str]:
    """Why one command-line word (or a ``sh -c`` script) holds a credential in plain text, or ``None``: a credential's
    shape anywhere in it, ``--flag=value`` with a credential's flag name, or, in a script, a ``NAME=value``
    assignment or ``--flag value`` pair whose name and value say so."""
    kind = token_in(word)
    if kind is not None:
        return f"the argument holds {kind} in plain text"
    flag = _FLAG.match(word)
    if flag is not None and flag.group(2) is not None:
        reason = _flag_reason(flag.group(1), flag.group(2).strip("\"'"))
        if reason is not None:
            return reason
    for match in _ASSIGNMENT.finditer(word):
        reason = credential_reason(match.group(1), match.group(2).strip("\"'"))
        if reason is not None:
            return reason
    if any(space in word for space in " \t\n"):
        words = [part.strip("\"'") for part in word.split()]
        for _, reason in _argument_word_reasons(words):
            return reason
    return None


@dataclass(frozen=True)
class CredentialSite:
    """Where a credential is written in plain text: the field's path, why (never quoting it), and the container
    and key that hold it, so that a recording can overwrite exactly that value."""

    path: str
    reason: str
    holder: Any = field(compare=False, repr=False)
    key: Any = field(compare=False)


def credential_sites(value: Any, path: str = "") -> list[CredentialSite]:
    """Every credential written in plain text below ``value`` (at ``path``), in document order: the one detector.

    * any string with a credential's shape, wherever it is (:func:`token_in`);
    * ``env``/``extraEnv`` variables and a probe's ``httpHeaders`` (``{name, value}`` items) by name and value;
    * command lines (``command``, ``args``, ``extraArgs``): each word's shape, ``--flag VALUE`` and ``--flag=VALUE``
      under a credential's flag name, ``NAME=value`` in a ``sh -c`` script;
    * ``annotations`` and AWS ``tags`` (a mapping, or a list of ``{key, value}``), and a ConfigMap's ``data`` (which
      ``envFrom`` loads as variables), entry by entry by name and value; a last-applied-configuration annotation is
      read as the object it holds.

    A Secret's ``data``/``stringData`` is where a credential belongs, and ``secure:`` leaves are no plain text.
    Iterative, so a deeply nested value cannot exhaust the interpreter's stack.
    """
    found: list[CredentialSite] = []
    pending: list[tuple[Any, str, str, Any, Any]] = [(value, path, "", None, None)]
    while pending:
        node, where, key, holder, slot = pending.pop()
        children: list[tuple[Any, str, str, Any, Any]] = []
        folded = key.lower()
        if isinstance(node, str):
            reason = credential_reason(None, node)
            if reason is not None:
                found.append(CredentialSite(where, reason, holder, slot))
        elif isinstance(node, dict) and folded in NAMED_VALUE_MAPS | {_CONFIG_MAP_DATA}:
            for name, item in node.items():
                item_path = _join(where, str(name))
                reason = _named_value_reason(str(name), item)
                if reason is not None:
                    found.append(CredentialSite(item_path, reason, node, name))
                elif not isinstance(item, str):
                    children.append((item, item_path, "", node, name))
        elif isinstance(node, dict) and not is_secure(node):
            kind = node.get("kind")
            for name, item in node.items():
                if kind == "Secret" and name in ("data", "stringData"):
                    continue
                child_key = _CONFIG_MAP_DATA if kind == "ConfigMap" and name in ("data", "binaryData") else str(name)
                if kind == "Secret" and name == "metadata" and isinstance(item, dict):
                    item = {k: v for k, v in item.items() if k != "annotations"}
                children.append((item, _join(where, str(name)), child_key, node, name))
        elif isinstance(node, list):
            if folded in ARGUMENT_LIST_KEYS:
                words = [item if isinstance(item, str) else "" for item in node]
                for index, reason in _argument_word_reasons(words):
                    found.append(CredentialSite(f"{where}[{index}]", reason, node, index))
                children = [(item, f"{where}[{index}]", "", node, index)
                            for index, item in enumerate(node) if not isinstance(item, str)]
            for index, item in enumerate(node if folded not in ARGUMENT_LIST_KEYS else ()):
                item_path = f"{where}[{index}]"
                pair = _name_value(item, folded)
                if pair is not None:
                    name_key, value_key = pair
                    reason = credential_reason(item[name_key], item.get(value_key))
                    if reason is not None:
                        found.append(CredentialSite(f"{item_path}.{value_key}", reason, item, value_key))
                    children.extend((sub, _join(item_path, str(sub_key)), str(sub_key), item, sub_key)
                                    for sub_key, sub in item.items() if sub_key not in (name_key, value_key))
                else:
                    children.append((item, item_path, "", node, index))
        pending.extend(reversed(children))
    return found


_CONFIG_MAP_DATA = "\0configmap-data"  # no real key: marks a ConfigMap's data for the walk


def _join(where: str, name: str) -> str:
    return f"{where}.{name}" if where else name


def _name_value(item: Any, folded_key: str) -> Optional[tuple[str, str]]:
    # ``{name, value}`` of env and httpHeaders; ``{key, value}`` / ``{Key, Value}`` of AWS tag lists.
    if not isinstance(item, dict):
        return None
    if folded_key in ENV_LIST_KEYS and isinstance(item.get("name"), str):
        return "name", "value"
    if folded_key == "tags":
        for name_key, value_key in (("key", "value"), ("Key", "Value")):
            if isinstance(item.get(name_key), str):
                return name_key, value_key
    return None


def _named_value_reason(name: str, value: Any) -> Optional[str]:
    if not isinstance(value, str):
        return None
    if name == LAST_APPLIED:
        try:
            applied = json.loads(value)
        except (ValueError, RecursionError):
            return credential_reason(None, value) and f"{name} holds a credential in plain text"
        try:
            inner = credential_sites(applied, "")
        except RecursionError:
            return None
        return f"{name} holds a credential in plain text ({inner[0].path}: {inner[0].reason})" if inner else None
    return credential_reason(name, value)


def plaintext_credentials(value: Any, path: str) -> list[tuple[str, str]]:
    """``(path, reason)`` for every credential written in plain text below ``value`` (at ``path``), in order
    (:func:`credential_sites`)."""
    return [(site.path, site.reason) for site in credential_sites(value, path)]


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

