"""Under the engine the stack program reads its own stack file as ``render`` does, and refuses what ``render`` refuses.

The engine decodes a ``!!binary`` value before the program sees it (the model name arrives as its text), so the
program, given the engine's values, reads ``Pulumi.<stack>.yaml`` in the project's ``stackConfigDir`` itself
(``pulumi.get_root_directory()``, which the language host passes and the mocks leave unset) and refuses the value at
its key path, before registering anything. ``tests/e2e/test_preview.py`` runs the same under ``pulumi preview``.
"""

from __future__ import annotations

import base64

import pulumi
import pytest

from gpu_fabric.config.stack_file import StackFileError
from gpu_fabric.program.render import render_stack
from gpu_fabric.program.stack import StackFileRefused, build_stack
from support.bad_input import project_with
from support.stack_configs import PROJECT_DIR, stack_document

MODEL = "Qwen/Qwen2.5-7B-Instruct"
SEED_TEXT = (PROJECT_DIR / "stacks" / "Pulumi.seed-rdma.yaml").read_text()
BINARY_MODEL_TEXT = SEED_TEXT.replace(f"name: {MODEL}", f"name: !!binary {base64.b64encode(MODEL.encode()).decode()}")
KEY = "config.gpu-fabric:modelDeployments[0].model.name: binary data is not a JSON value"


def engine_values() -> dict:
    """What the engine hands the program for that file: the model name decoded, a plain string."""
    return stack_document("seed-rdma")["config"]


@pytest.fixture
def under_the_engine(monkeypatch):
    """The project root the language host passes (``--root_directory``); ``None`` under mocks."""

    def use(project) -> None:
        monkeypatch.setattr(pulumi, "get_root_directory", lambda: str(project))

    return use


def test_render_refuses_a_binary_model_name_in_the_stack_file(tmp_path) -> None:
    assert BINARY_MODEL_TEXT != SEED_TEXT
    with pytest.raises(StackFileError) as refused:
        render_stack("x", project_with(tmp_path, BINARY_MODEL_TEXT))
    assert refused.value.problems == [KEY]


def test_the_program_refuses_it_from_the_engines_decoded_values_naming_the_key(tmp_path, under_the_engine) -> None:
    project = project_with(tmp_path, BINARY_MODEL_TEXT)
    under_the_engine(project)
    with pytest.raises(StackFileError) as refused:
        render_stack("x", project, config=engine_values())
    assert refused.value.problems == [KEY]
    assert refused.value.path == str(project / "stacks" / "Pulumi.x.yaml")


def test_nothing_is_registered_before_the_refusal(tmp_path, under_the_engine) -> None:
    under_the_engine(project_with(tmp_path, BINARY_MODEL_TEXT))
    refusals: list[StackFileRefused] = []

    def program() -> None:
        try:
            build_stack()
        except StackFileRefused as refusal:
            refusals.append(refusal)

    result = render_stack("x", tmp_path, config=engine_values(), program=program)
    assert [str(refusal) for refusal in refusals] == [f"{tmp_path / 'stacks' / 'Pulumi.x.yaml'}: {KEY}"]
    assert [r for r in result.resources if r.type != "pulumi:pulumi:Stack"] == []


def test_a_stack_file_written_out_is_read_and_passes(tmp_path, under_the_engine) -> None:
    under_the_engine(project_with(tmp_path, SEED_TEXT))
    assert render_stack("x", tmp_path, config=engine_values()).resources


def test_a_stack_without_a_file_of_its_own_is_left_to_its_values(tmp_path, under_the_engine) -> None:
    # Configuration from the Automation API or an environment: there is no file to read.
    under_the_engine(project_with(tmp_path, SEED_TEXT))
    assert render_stack("other", tmp_path, config=engine_values()).resources
