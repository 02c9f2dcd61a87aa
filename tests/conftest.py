"""Shared test setup: the tests folder is on ``sys.path`` for every test, wherever its folder.

Tests mirror the package (``tests/<folder>/``) and import their helpers as ``from support.x import ...``.
Test folders carry no ``__init__.py``, so pytest's default ``prepend`` import mode puts each test file's
own folder on ``sys.path``; this file puts ``tests/`` there too, so ``support`` (and ``e2e``, the one
package folder) import the same from every folder. Test file names stay unique across folders, which
``prepend`` mode requires.
"""

import sys
from pathlib import Path

TESTS_DIR = Path(__file__).parent
PROJECT_DIR = TESTS_DIR.parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))
