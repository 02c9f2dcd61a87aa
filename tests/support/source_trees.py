"""Parse Python source in tests without CPython 3.11's shared ``ast`` bookkeeping being clobbered.

In Python 3.11 the ``ast`` module keeps its recursion bookkeeping in module state, not per call. When a
garbage collection runs while ``ast.parse`` builds its tree, finalizers run in the middle of it; an asyncio
Future that died with an exception nobody retrieved (a refused render under Pulumi's mock runtime leaves
some) logs its traceback there, and 3.11's traceback carets call ``ast.parse`` again. The nested call resets
the shared counter and the outer one fails with "SystemError: AST constructor recursion depth mismatch"
(CPython gh-106905). Keeping the collector off while parsing rules that out (a collection is the only way
such a finalizer runs inside the parse: the parse itself drops no other object's last reference).
"""

from __future__ import annotations

import ast
import gc
from pathlib import Path


def parse_source(source: str, filename: str = "<unknown>") -> ast.Module:
    """``ast.parse(source)`` with no garbage collection (hence no finalizer) running inside it."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return ast.parse(source, filename=filename)
    finally:
        if enabled:
            gc.enable()


def parse_file(path: Path) -> ast.Module:
    """:func:`parse_source` of the file at ``path``."""
    return parse_source(path.read_text(), filename=str(path))
