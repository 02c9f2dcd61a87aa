"""Hypothesis mutates valid stack files and manifests; every run must succeed or refuse cleanly.

A clean refusal is the documented exit code (render: 2; lint: 1 for findings, 2 for unreadable
input) with a one-line ``gpu-fabric...`` message and no traceback. Examples are bounded so the suite
stays fast in CI; the mutations are the ones a careless or hostile user makes: a value of the wrong
type, an extreme number, text that would inject into flags, a missing or an extra key.
"""

from __future__ import annotations

import copy
import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support.bad_input import dump, render_file, run_cli, stack_document

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "seed"

NASTY_VALUES = [
    True, False, None, 0, -1, 2**63, 10**30, 1.5, float("nan"), float("inf"), -float("inf"),
    "", " ", "x" * 300, "a,b=c", "line\nbreak", "../../etc/passwd", "Ünïcödé", "8Gi", "-8Gi", ".inf",
    "NoSchedule", "gpustack--nvidia-a10g-linux-amd64", [], [1, 2], {}, {"key": "value"}, {"nodeCount": 1},
]

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)


def paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path to a value inside nested dicts and lists (the root excluded)."""
    found = []
    if isinstance(value, dict):
        items = list(value.items())
    elif isinstance(value, list):
        items = list(enumerate(value))
    else:
        return found
    for key, item in items:
        found.append((*prefix, key))
        found.extend(paths(item, (*prefix, key)))
    return found


def mutate(document: Any, path: tuple, action: str, value: Any) -> Any:
    """A copy of ``document`` with the value at ``path`` replaced, deleted, or given an extra sibling."""
    document = copy.deepcopy(document)
    parent = document
    for key in path[:-1]:
        parent = parent[key]
    last = path[-1]
    if action == "replace":
        parent[last] = value
    elif action == "delete":
        del parent[last]
    elif action == "duplicate" and isinstance(parent, list):
        parent.append(copy.deepcopy(parent[last]))
    elif action == "extra" and isinstance(parent, dict):
        parent[f"{last}Extra"] = value
    else:
        parent[last] = value
    return document


def mutations(document: Any):
    return st.tuples(
        st.sampled_from(paths(document)),
        st.sampled_from(["replace", "replace", "replace", "delete", "duplicate", "extra"]),
        st.sampled_from(NASTY_VALUES),
    )


def assert_clean(outcome, allowed: set[int]) -> None:
    assert not outcome.crashed, outcome.describe()
    assert outcome.code in allowed, outcome.describe()
    if outcome.code == 2:
        lines = [line for line in outcome.err.splitlines() if line.strip()]
        assert lines and lines[0].startswith("gpu-fabric"), outcome.describe()


SEED = stack_document("seed-rdma")
AWS_EFA = stack_document("aws-efa")
DRA_EFA = stack_document("dra-efa")


@FUZZ
@given(mutation=mutations(SEED))
def test_mutated_seed_stack_renders_or_is_refused(mutation):
    with tempfile.TemporaryDirectory() as folder:
        outcome = render_file(Path(folder), dump(mutate(SEED, *mutation)))
        assert_clean(outcome, {0, 1, 2})
        if outcome.code == 1:  # refused by a mandatory policy of the pack, at render
            assert "(policy " in outcome.err, outcome.describe()
        if outcome.code in (1, 2):
            assert not (Path(folder) / "out").exists()


def assert_refused_at_render_or_passes_its_pack(document, mutation) -> None:
    """``check`` renders, then runs the pack. Exit 1 is allowed only for the stack's own refusal at render
    (a mandatory policy's rule, stderr, nothing rendered); a violation the pack found in a render (stdout)
    would mean the stack accepted what its pack refuses."""
    with tempfile.TemporaryDirectory() as folder:
        outcome = render_file(Path(folder), dump(mutate(document, *mutation)), command="check")
        assert_clean(outcome, {0, 1, 2})
        if outcome.code == 1:
            assert "(policy " in outcome.err and outcome.out == "", outcome.describe()


@FUZZ
@given(mutation=mutations(AWS_EFA))
def test_mutated_efa_stack_is_refused_or_passes_its_own_pack(mutation):
    assert_refused_at_render_or_passes_its_pack(AWS_EFA, mutation)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(mutation=mutations(DRA_EFA))
def test_mutated_dra_stack_is_refused_or_passes_its_own_pack(mutation):
    # A deviceAllocation: dra pool's rules (cluster version, provisioner, PCIe layout, device plugins) too.
    assert_refused_at_render_or_passes_its_pack(DRA_EFA, mutation)


MANIFESTS = [document for name in ("qwen-pd.yaml", "mooncake-dram.yaml")
             for document in yaml.safe_load_all((FIXTURES / name).read_text())]


@FUZZ
@given(mutation=mutations(MANIFESTS))
def test_mutated_manifests_lint_or_are_refused(mutation):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "manifests.yaml"
        path.write_text(yaml.safe_dump_all(mutate(MANIFESTS, *mutation)))
        assert_clean(run_cli("lint", str(path)), {0, 1, 2})
