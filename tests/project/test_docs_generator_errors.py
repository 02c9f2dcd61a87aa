"""The docs generators under scripts/ end bad targets with one line, not a traceback."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def test_the_configuration_docs_generator_refuses_a_folder_target_in_one_line(tmp_path, monkeypatch, capsys):
    spec = importlib.util.spec_from_file_location("generate_configuration_docs",
                                                  SCRIPTS / "generate_configuration_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "DOC", tmp_path)  # a folder where the file should be
    assert module.main([]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"cannot write {tmp_path}" in err and "Traceback" not in err
