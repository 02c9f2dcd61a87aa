"""``diff --from-preview-json``: a preview file of any encoding PowerShell or a shell writes, and bad files refused clearly.

Bad files (oversized, deeply nested, Latin-1, odd field types) exit 2 with one line naming the file
and, for a wrong shape, the step and field; never a traceback or MemoryError.
"""

import json
from pathlib import Path

import pytest

from gpu_fabric.cli import main
from gpu_fabric.diff import preview_json
from gpu_fabric.diff.preview_json import load_preview_digest

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "preview" / "aws-efa-capacity-change.json"
URN = "urn:pulumi:aws-efa::gpu-fabric::aws:eks/nodeGroup:NodeGroup::ng"


def refusal(path: Path, capsys) -> str:
    assert main(["diff", "--from-preview-json", str(path), "--json"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(path) in err and "Traceback" not in err
    return err


@pytest.mark.parametrize("encoding", ["utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-16-be"])
def test_utf8_and_utf16_with_or_without_a_bom_read_the_same(tmp_path, encoding):
    text = FIXTURE.read_text(encoding="utf-8")
    path = tmp_path / "preview.json"
    path.write_bytes(text.encode(encoding))
    read, expected = load_preview_digest(path).to_json(), load_preview_digest(FIXTURE).to_json()
    assert read.pop("source") == str(path) and expected.pop("source") == str(FIXTURE)
    assert read == expected and read["steps"]


def test_latin1_is_refused_naming_the_byte(tmp_path, capsys):
    path = tmp_path / "preview.json"
    path.write_bytes(json.dumps({"steps": [], "note": "caf\u00e9"}, ensure_ascii=False).encode("latin-1"))
    err = refusal(path, capsys)
    assert "not UTF-8 text (byte 0xe9" in err


def test_an_oversized_file_is_refused_before_it_is_read_whole(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(preview_json, "MAX_PREVIEW_BYTES", 1024)
    path = tmp_path / "preview.json"
    path.write_text(json.dumps({"steps": [], "pad": "x" * 4096}))
    assert "larger than" in refusal(path, capsys)


@pytest.mark.parametrize("depth", [preview_json.MAX_DEPTH + 1, 100_000])
def test_deep_nesting_is_refused(tmp_path, capsys, depth):
    path = tmp_path / "preview.json"
    path.write_text('{"steps": ' + "[" * depth + "]" * depth + "}")
    assert "deeper than" in refusal(path, capsys)


def step(**fields):
    return {"op": "update", "urn": URN, **fields}


@pytest.mark.parametrize("document, where", [
    ({"steps": [step(newState="text")]}, "steps[0].newState is not an object"),
    ({"steps": [step(oldState=[1])]}, "steps[0].oldState is not an object"),
    ({"steps": [step(detailedDiff=["a"])]}, "steps[0].detailedDiff is not an object"),
    ({"steps": [step(detailedDiff={"a": {"kind": 3}})]}, "steps[0].detailedDiff['a'].kind is not a string"),
    ({"steps": [step(), step(diffReasons="labels")]}, "steps[1].diffReasons is not a list of strings"),
    ({"steps": [step(replaceReasons=[1])]}, "steps[0].replaceReasons is not a list of strings"),
    ({"steps": [step(newState={"type": 5})]}, "steps[0].newState.type is not a string"),
    ({"steps": [step(newState={"inputs": "x"})]}, "steps[0].newState.inputs is not an object"),
    ({"steps": [step()], "diagnostics": ["boom"]}, "diagnostics[0] is not an object"),
    ({"steps": [step()], "diagnostics": [{"message": {"a": 1}}]}, "diagnostics[0].message is not a string"),
])
def test_odd_field_types_name_the_step_and_field(tmp_path, capsys, document, where):
    path = tmp_path / "preview.json"
    path.write_text(json.dumps(document))
    assert where in refusal(path, capsys)


def test_a_folder_is_not_a_preview_file(tmp_path, capsys):
    assert "not a regular file" in refusal(tmp_path, capsys)
