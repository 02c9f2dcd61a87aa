"""``python -m pytest`` (the default run) spreads over one pytest-xdist worker per core; a run that names
its own tests or options runs as asked (tests/conftest.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import SimpleNamespace

import pytest

# tests/conftest.py by its path: other folders' conftest.py files are imported under the same name.
_SPEC = importlib.util.spec_from_file_location("_suite_conftest", Path(__file__).resolve().parents[1] / "conftest.py")
assert _SPEC is not None and _SPEC.loader is not None
conftest = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(conftest)


class _Plugins:
    def __init__(self, *names: str) -> None:
        self.names = set(names)

    def hasplugin(self, name: str) -> bool:
        return name in self.names


def _config(*, source=pytest.Config.ArgsSource.TESTPATHS, plugins=("xdist",), worker=False, **options):
    option = SimpleNamespace(**{"numprocesses": None, "dist": "no", "usepdb": False, "collectonly": False, **options})
    config = SimpleNamespace(pluginmanager=_Plugins(*plugins), args_source=source, option=option)
    if worker:
        config.workerinput = {}
    return config


def test_the_default_run_takes_a_worker_per_core_and_keeps_groups_together(monkeypatch):
    monkeypatch.setattr(conftest.os, "cpu_count", lambda: 2)
    config = _config()
    conftest.pytest_cmdline_main(config)
    assert (config.option.numprocesses, config.option.dist) == ("auto", "loadgroup")


@pytest.mark.parametrize("config", [
    _config(source=pytest.Config.ArgsSource.ARGS),  # `pytest tests/cli` or a file: as asked
    _config(plugins=()),                            # no pytest-xdist (or -p no:xdist): serial
    _config(numprocesses=0),                        # -n 0
    _config(dist="load"),                           # --dist chosen
    _config(usepdb=True),                           # --pdb needs one process
    _config(collectonly=True),
    _config(worker=True),                           # inside a worker
], ids=["named-tests", "no-xdist", "n0", "dist", "pdb", "collect-only", "worker"])
def test_any_other_run_is_left_as_asked(config, monkeypatch):
    monkeypatch.setattr(conftest.os, "cpu_count", lambda: 2)
    before = dict(vars(config.option))
    conftest.pytest_cmdline_main(config)
    assert vars(config.option) == before


def test_one_core_runs_serially(monkeypatch):
    monkeypatch.setattr(conftest.os, "cpu_count", lambda: 1)
    config = _config()
    conftest.pytest_cmdline_main(config)
    assert config.option.numprocesses is None
