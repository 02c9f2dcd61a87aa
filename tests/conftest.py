"""Shared test setup: the tests folder is on ``sys.path`` for every test, wherever its folder.

Tests mirror the package (``tests/<folder>/``) and import their helpers as ``from support.x import ...``.
Test folders carry no ``__init__.py``, so pytest's default ``prepend`` import mode puts each test file's
own folder on ``sys.path``; this file puts ``tests/`` there too, so ``support`` (and ``e2e``, the one
package folder) import the same from every folder. Test file names stay unique across folders, which
``prepend`` mode requires.
"""

import os
import sys
from pathlib import Path

import pytest

# Every command a test runs is a fresh interpreter that imports gpu_fabric (and the test's own helpers). Where the
# shell sets PYTHONDONTWRITEBYTECODE (this project's CI machines do), nothing leaves bytecode behind and each of
# those processes compiles gpu_fabric's modules from source again -- a render then took 1.97 s of CPU instead of 0.56 s, which
# no installed package pays (pip compiles on install). The suite writes the cache as Python does by default, in
# the __pycache__ folders git ignores; the processes of a user's own shell are left as they are.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

TESTS_DIR = Path(__file__).parent
PROJECT_DIR = TESTS_DIR.parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

# Renders fork this process (gpu_fabric.program.completion), also while a test serves the pack over gRPC
# (tests/conformance): gRPC must be imported with its fork handlers off, before any test module imports it.
from gpu_fabric.program.completion import grpc_without_fork_handlers  # noqa: E402

grpc_without_fork_handlers()


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """The default run (``python -m pytest``: the testpaths, no ``-n``) runs on one worker per core.

    With pytest-xdist installed (the dev extra), two cores take the suite in about half the wall time
    its waits (servers, timeouts, subprocesses) and CPU leave to one; a run naming its own tests, or
    ``-n``, ``--dist``, ``--pdb``, ``-p no:xdist``, runs as asked. ``--dist loadgroup`` keeps the tests of one
    ``xdist_group`` (the two mypy gates sharing a cache) on one worker, one after the other. Without
    pytest-xdist the suite runs serially, as before.
    """
    if not config.pluginmanager.hasplugin("xdist") or hasattr(config, "workerinput"):
        return
    defaults = config.args_source == pytest.Config.ArgsSource.TESTPATHS
    if (defaults and config.option.numprocesses is None and config.option.dist == "no"
            and not config.option.usepdb and not config.option.collectonly and (os.cpu_count() or 1) > 1):
        config.option.numprocesses = "auto"
        config.option.dist = "loadgroup"
