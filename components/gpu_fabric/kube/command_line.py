"""A container's command line as the process it starts receives it (pure): its words, with the manifest path of each.

``command`` + ``args`` are read through the wrappers in front (``tini --``, ``dumb-init``, ``exec``, ``nohup``),
``env -u X NAME=value`` and the scripts of ``sh -c`` / ``bash -lc`` (nested up to :data:`MAX_SCRIPT_NESTING`), so
:mod:`gpu_fabric.kube.engine_flags` reads the engine's flags and environment where they really are.
"""

from __future__ import annotations

import shlex
from collections import deque
from typing import Any, Callable, Mapping


SHELLS = ("sh", "bash", "dash", "zsh")
"""Programs (by file name) whose ``-c`` script is itself a command line to read."""

WRAPPERS: Mapping[str, frozenset[str]] = {
    # krallin/tini src/tini.c (getopt "+p:hvwgle:s"): -p SIGNAL and -e EXIT_CODE take a value; "--" or
    # the first word that is no option starts the program.
    "tini": frozenset({"-p", "-e"}),
    "tini-static": frozenset({"-p", "-e"}),
    "docker-init": frozenset({"-p", "-e"}),
    # Yelp/dumb-init dumb-init.c (getopt_long "+hvVcr:"): -r/--rewrite s:r takes a value.
    "dumb-init": frozenset({"-r", "--rewrite"}),
    # POSIX sh `exec [-cl] [-a name] command` (bash builtin) and coreutils nohup: the rest is the command.
    "exec": frozenset({"-a"}),
    "nohup": frozenset(),
}
"""Programs (by file name) that run the command after their own options, which take values as listed."""

ENV_VALUE_OPTIONS = frozenset({"-u", "--unset", "-C", "--chdir", "-S", "--split-string"})
"""coreutils ``env`` options that take a value (``env --help``); ``-u NAME`` removes NAME, ``-S`` splits its string."""

MAX_SCRIPT_NESTING = 8
"""Shell scripts inside shell scripts read this deep; deeper ones are read as plain words."""

WORD, SEPARATOR, ASSIGN, UNSET, CLEAR, SCRIPT_END = range(6)
"""Kinds of the words :func:`command_words` yields: a word of a command, a separator, ``NAME=value``
(environment), ``env -u NAME``, ``env -i`` (an empty environment), and the end of a ``-c`` script."""


def container_words(container: Mapping[str, Any], path: str) -> list[tuple[str, str]]:
    """``(word, path)`` for every word of the container's ``command`` then ``args``."""
    words: list[tuple[str, str]] = []
    for key in ("command", "args"):
        value = container.get(key)
        if isinstance(value, list):
            words.extend((str(item), f"{path}.{key}[{i}]") for i, item in enumerate(value) if isinstance(item, (str, int, float)))
    return words


def command_words(words: list[tuple[str, str]]) -> list[tuple[int, str, str]]:
    """``(kind, word, path)`` of a command line as the engine process receives it.

    Wrappers in front of a command (``tini --``, ``dumb-init``, ``exec``, ``env -u X NAME=value``)
    are seen through: their options are dropped, ``env``'s assignments become environment and its
    ``-u``/``-i`` remove it. A shell's ``-c`` script (``sh -c``, ``bash -lc``, also behind a wrapper)
    is split as the shell would and read as commands of its own; its own ``NAME=value`` prefixes
    are environment. Every word is handled once (scripts are pushed in front of the queue), so a
    command line of any length is read in linear time.
    """
    queue: deque[tuple[int, str, str]] = deque((WORD, word, where) for word, where in words)
    out: list[tuple[int, str, str]] = []
    at_command_start = True
    nesting = 0

    def push_front(tokens: list[str], where: str, end: tuple[int, str, str] | None = None) -> None:
        if end is not None:
            queue.appendleft(end)
        queue.extendleft((WORD, token, where) for token in reversed(tokens))

    def take_options(valued: frozenset[str]) -> None:
        # Drop a wrapper's own options; the first word that is no option is the wrapped program.
        while queue and queue[0][0] == WORD and queue[0][1].startswith("-") and queue[0][1] not in _SEPARATORS:
            _, option, _ = queue.popleft()
            if option == "--":
                return
            if option in valued and queue:
                queue.popleft()

    while queue:
        kind, word, where = queue.popleft()
        if kind == SCRIPT_END:
            # The words after a -c script are its $0, $1 ...: arguments ("$@"), no command of their own.
            out.append((SEPARATOR, ";", where))
            nesting -= 1
            at_command_start = False
            continue
        if word in _SEPARATORS:
            out.append((SEPARATOR, word, where))
            at_command_start = True
            continue
        if not at_command_start:
            out.append((WORD, word, where))
            continue
        if word == "export":
            continue
        if _is_assignment(word):
            out.append((ASSIGN, word, where))
            continue
        program = word.rsplit("/", 1)[-1]
        if program in WRAPPERS:
            take_options(WRAPPERS[program])
            continue
        if program == "env":
            _env_options(queue, out, push_front)
            continue
        out.append((WORD, word, where))
        at_command_start = False
        if program in SHELLS:
            script = _shell_script(queue, out)
            if script is not None:
                text, script_where = script
                if nesting < MAX_SCRIPT_NESTING:
                    nesting += 1
                    out.append((SEPARATOR, ";", script_where))
                    push_front(_split_script(text), script_where, (SCRIPT_END, "", script_where))
                    at_command_start = True
                else:
                    out.append((WORD, text, script_where))
    return out


def _env_options(queue: deque[tuple[int, str, str]], out: list[tuple[int, str, str]],
                 push_front: Callable[[list[str], str], None]) -> None:
    """Read ``env``'s options off ``queue``: ``-i``/``-`` empty the environment, ``-u NAME`` removes one."""
    while queue and queue[0][0] == WORD:
        _, option, option_where = queue[0]
        if option in _SEPARATORS or not option.startswith("-"):
            return
        queue.popleft()
        if option == "--":
            return
        if option in ("-", "-i", "--ignore-environment"):
            out.append((CLEAR, option, option_where))
            continue
        name, equals, inline = option.partition("=")
        if option.startswith("--") and not equals:
            name, inline = option, ""
        elif not option.startswith("--") and len(option) > 2 and option[:2] in ENV_VALUE_OPTIONS:
            name, inline, equals = option[:2], option[2:], "="  # -uNAME
        if name not in ENV_VALUE_OPTIONS:
            continue  # -0, -v, --debug, --ignore-signal ...
        if not equals:
            if not queue or queue[0][0] != WORD:
                return
            inline, option_where = queue.popleft()[1:]
        if name in ("-u", "--unset"):
            out.append((UNSET, inline, option_where))
        elif name in ("-S", "--split-string"):
            # env -S 'A=b cmd --flag': the string's words come first, then the rest of the line.
            push_front(_split_script(inline), option_where)


def _shell_script(queue: deque[tuple[int, str, str]], out: list[tuple[int, str, str]]) -> tuple[str, str] | None:
    """After a shell's name: pass its options to ``out`` and take its ``-c`` script off ``queue``, if any."""
    wants_script = False
    while queue and queue[0][0] == WORD:
        option = queue[0][1]
        if option == "--":
            queue.popleft()
            break
        if not option.startswith(("-", "+")) or option in ("-", "+") or option in _SEPARATORS:
            break
        out.append(queue.popleft())
        if option in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file") and queue and queue[0][0] == WORD:
            out.append(queue.popleft())  # the option's value (set -o pipefail, bash --rcfile FILE)
        elif not option.startswith("--") and "c" in option[1:]:
            wants_script = True
    if wants_script and queue and queue[0][0] == WORD:
        _, text, where = queue.popleft()
        return text, where
    return None


def _split_script(script: str) -> list[str]:
    """The words of a shell script; ``;``, ``&&``, ``|`` and ``&`` become words of their own."""
    lexer = shlex.shlex(script, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        return [token.replace("\\\n", "") for token in lexer]
    except ValueError:
        # An unbalanced quote: the shell would refuse the script too; read it word by word.
        return script.split()


_SEPARATORS = frozenset({";", "&&", "||", "|", "&", "(", ")"})


def _is_assignment(word: str) -> bool:
    name, equals, _ = word.partition("=")
    return bool(equals) and name.isidentifier() and name.upper() == name
