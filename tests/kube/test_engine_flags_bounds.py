"""Engine flags are parsed within bounds: an unbounded ``--kv-transfer-config`` is a problem at its field, never a crash.

Issue 40, round 5: a 5,000-digit number raised ``ValueError`` (Python's int digit limit) and JSON nested
100,000 deep raised ``RecursionError`` out of the parse.
"""

import pytest

from gpu_fabric.config import bounded_json
from gpu_fabric.kube.engine_flags import read_container

DIGITS = "1" * 5000
DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize("config, fragment", [
    ('{"kv_connector": "NixlConnector", "kv_rank": ' + DIGITS + "}", "a number of 5,000 characters"),
    ('{"kv_connector": "NixlConnector", "x": ' + DEEP + "}", "nested more than 100 levels deep"),
    ("{not json", "is not JSON"),
])
def test_an_unbounded_kv_transfer_config_is_a_problem_at_its_word(config, fragment):
    settings = read_container({"command": ["vllm", "serve", "m", "--kv-transfer-config", config]}, "c")
    assert [where for where, _ in settings.problems] == ["c.command[3]"]  # the flag names the problem
    assert fragment in settings.problems[0][1]
    assert DIGITS not in settings.problems[0][1]


@pytest.mark.parametrize("value", [DIGITS, DEEP])
def test_a_dotted_flags_unbounded_value_is_kept_as_a_word(value):
    settings = read_container({"command": ["vllm", "serve", "m", f"--kv-transfer-config.kv_rank={value}"]}, "c")
    assert settings.values["kv_transfer_config"].value == {"kv_rank": value}


def test_bounded_json_reads_ordinary_json_as_json_does():
    assert bounded_json.loads('{"a": [1, 2.5, "x]"], "b": {"c": null}}') == {"a": [1, 2.5, "x]"], "b": {"c": None}}
    assert bounded_json.loads("[" * 100 + "]" * 100)
    with pytest.raises(bounded_json.JSONBoundsError):
        bounded_json.loads("[" * 101 + "]" * 101)
