"""The pull-request comment: order, marker, banner, secrets, and the 65,536-character limit."""

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpu_fabric.cli import main
from gpu_fabric.diff.compare import compare
from gpu_fabric.diff.digest import Change, Digest, Step, summarize
from gpu_fabric.diff.markdown import GITHUB_COMMENT_LIMIT, marker, render_markdown
from gpu_fabric.diff.preview_json import digest_from_preview, load_preview_digest
from gpu_fabric.diff.replace_rules import NODE_GROUP
from gpu_fabric.diff.source import DiffInputError

from test_diff_compare import fleet

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "preview" / "aws-efa-capacity-change.json"
STEM = "urn:pulumi:big::p::gpu-fabric:index:KueuePool$kubernetes:kueue.x-k8s.io/v1beta2:LocalQueuePatch::"


def test_no_changes_says_so_and_carries_the_marker():
    text = render_markdown(compare(fleet(), fleet(), stack="aws-efa"))
    assert text.startswith(marker("aws-efa") + "\n")
    assert "**No changes.** 4 resources unchanged." in text
    assert "[!WARNING]" not in text and "<details>" not in text


def test_order_is_banner_then_lists_with_reasons_then_folded_details():
    digest = compare(fleet(), fleet(capacity="SPOT", user_data="BBB", labels={"t": "a"}), stack="s")
    text = render_markdown(digest)
    banner, replace, details = text.index("[!WARNING]"), text.index("#### Replace (1)"), text.index("<details>")
    assert banner < replace < details
    assert "replaced because `capacityType` changed" in text
    assert "**replaces the nodes** of 1 node group: `g-ng`" in text
    assert '~ capacityType: "ON_DEMAND" => "SPOT"' in text
    assert "(known after apply)" in text


def test_marker_is_per_stack_and_survives_odd_names():
    assert marker("aws-efa") != marker("seed-rdma")
    assert marker("a b-->c") == "<!-- gpu-fabric-diff stack=a_b--_c -->"


def big_digest(count: int, value_size: int = 100) -> Digest:
    steps = [Step("update", f"{STEM}q{i:05d}", "kubernetes:kueue.x-k8s.io/v1beta2:LocalQueuePatch",
                  [Change(("spec", "clusterQueue"), "update", "a" * value_size, "b" * value_size)]) for i in range(count)]
    steps += [Step("replace", f"{STEM}r{i:05d}", NODE_GROUP, [Change(("capacityType",), "update", "ON_DEMAND", "SPOT", True)],
                   rolls_nodes=True) for i in range(count // 2)]
    return Digest("big", steps, summarize([s.op for s in steps]))


def test_huge_plan_fits_one_comment_details_cut_first():
    digest = big_digest(3000)
    text = render_markdown(digest)
    assert len(text) <= 60_000 < GITHUB_COMMENT_LIMIT
    assert text.startswith(marker("big"))
    assert "more resources' details not shown" in text
    assert "more to update" in text  # the lists were cut too, saying by how much
    assert "**Plan:** 1500 to replace, 3000 to update; 0 unchanged." in text
    medium = render_markdown(big_digest(200))  # lists fit; only details are cut
    assert "more to update" not in medium and "details not shown" in medium


@settings(max_examples=25, deadline=None)
@given(count=st.integers(min_value=0, max_value=4000), value_size=st.integers(min_value=1, max_value=3000),
       budget=st.integers(min_value=2_000, max_value=GITHUB_COMMENT_LIMIT + 10_000))
def test_comment_never_exceeds_the_budget(count, value_size, budget):
    text = render_markdown(big_digest(count, value_size), budget=budget)
    assert len(text) <= min(budget, GITHUB_COMMENT_LIMIT)
    assert text.startswith(marker("big"))


def test_preview_json_fixture_reads_with_the_same_layout():
    digest = load_preview_digest(FIXTURE)
    assert digest.stack == "aws-efa"
    ops = {step.name: step for step in digest.steps}
    assert [s.op for s in digest.steps].count("replace") == 1  # the three replacement steps are one
    group = ops["fabric-h100-nodes-ng"]
    assert group.op == "replace" and group.replace_reasons == ["capacityType"] and group.rolls_nodes
    assert digest.change_summary == {"create": 1, "replace": 1, "update": 2, "same": 24}
    text = render_markdown(digest)
    assert text.startswith(marker("aws-efa"))
    assert "\x1b" not in text and "efa-security-group-self-rules" in text and "debug noise" not in text
    assert "~ stringData: [secret] => [secret]" in text


def test_preview_json_cli(capsys):
    assert main(["diff", "--from-preview-json", str(FIXTURE), "--markdown", "--detailed-exitcode"]) == 2
    out = capsys.readouterr().out
    assert out.startswith(marker("aws-efa")) and len(out) <= GITHUB_COMMENT_LIMIT
    assert main(["diff", "--from-preview-json", str(FIXTURE), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert {s["op"] for s in document["steps"]} == {"replace", "update", "create"}


@pytest.mark.parametrize("content, reason", [
    ("{not json", "not JSON"),
    ("[]", "top level is not a JSON object"),
    ('{"steps": {}}', "`steps` is not a list"),
    ('{"steps": [{"op": "create"}]}', "steps[0] needs a string `op` and `urn`"),
    ('{"steps": [{"op": "create", "urn": "nope"}]}', "steps[0].urn is not a Pulumi URN"),
    ('{"steps": [], "changeSummary": {"create": "one"}}', "changeSummary"),
    ("{}", "pass --stack NAME"),
])
def test_malformed_preview_files_exit_2_naming_the_file(tmp_path, capsys, content, reason):
    path = tmp_path / "preview.json"
    path.write_text(content)
    assert main(["diff", "--from-preview-json", str(path), "--markdown"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(path) in err and reason in err


def test_missing_preview_file_and_empty_preview_with_a_stack(tmp_path, capsys):
    assert main(["diff", "--from-preview-json", str(tmp_path / "absent.json")]) == 2
    assert "absent.json" in capsys.readouterr().err
    digest = digest_from_preview({}, stack="aws-efa")
    assert digest.steps == [] and "**No changes.**" in render_markdown(digest)
    with pytest.raises(DiffInputError):
        digest_from_preview({"steps": [{"op": "update", "urn": "urn:pulumi:s::p::t::n", "detailedDiff": {"a": 1}}],
                             "diagnostics": "x"})
