"""Every category of bad input is refused cleanly: exit 2 naming the file or the configuration path.

One row per mistake a careless or hostile user makes in a stack file: syntax, types, references, hostile values. Each row
renders the stack through the command line, in-process, and asserts the refusal: the exit code,
the path (or file) named in the message, and no traceback.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pytest
import yaml

from support.bad_input import dump, render_file, run_cli, stack_document
from support.bad_input_cases import Doc, seed, efa, pool, role, member, SEED_TEXT, CASES

# Rows a mandatory policy of the pack refuses (the stack refuses them at render too): a policy
# violation exits 1, like `check` (the command line's shared exit codes); every other row is unusable input, exit 2.
POLICY_REFUSALS = {
    "references/efa-pool-without-placement": "efa-node-group-placement",
    "references/member-wants-more-interfaces": "kv-cache-transport-fabric",
    "references/topology-none-on-fabric-pool": "fabric-pool-topology",
    "syntax/ami-arch-mismatch": "pool-instance-facts",  # the AMI against the instances' architecture
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_stack_file_is_refused_with_its_path(case, tmp_path):
    text, fragments = CASES[case]
    outcome = render_file(tmp_path, text)
    assert not outcome.crashed, outcome.describe()
    assert outcome.code == (1 if case in POLICY_REFUSALS else 2), outcome.describe()
    if case in POLICY_REFUSALS:
        assert f"(policy {POLICY_REFUSALS[case]})" in outcome.err, outcome.describe()
    for fragment in fragments:
        assert fragment in outcome.err, f"{fragment!r} missing\n{outcome.describe()}"
    assert not (tmp_path / "out").exists(), "a refused stack must write nothing"


def test_env_values_are_any_string_as_kubernetes_allows(tmp_path):
    # Kubernetes puts no rule on env values: a newline or '=' in one is data, not a refusal.
    text = seed(lambda c: role(c).update(env=[{"name": "PROMPT.PREFIX", "value": "line one\nline=two"}]))
    outcome = render_file(tmp_path, text)
    assert outcome.code == 0, outcome.describe()
    rendered = (tmp_path / "out" / "resources.json").read_text()
    assert "line one\\nline=two" in rendered


def test_every_row_changes_a_valid_stack_file():
    # A replacement that matched nothing would test the valid file and pass for the wrong reason.
    valid = {SEED_TEXT, dump(stack_document("aws-efa"))}
    assert not [case for case, (text, _) in CASES.items() if text in valid]


# -- lint: unreadable input exits 2 with one line naming the file; odd values are findings.

QWEN = (Path(__file__).resolve().parents[1] / "fixtures" / "seed" / "qwen-pd-seed-verbatim.yaml").read_text()  # the walkthrough as written

LINT_UNREADABLE: dict[str, Any] = {
    "top-level-scalar": "just text\n",
    "no-kind": "apiVersion: v1\nmetadata: {name: x}\n",
    "no-api-version": "kind: ConfigMap\nmetadata: {name: x}\n",
    "kind-not-a-string": "apiVersion: v1\nkind: true\nmetadata: {name: x}\n",
    "spec-is-a-list": "apiVersion: worker.gpustack.ai/v1\nkind: ModelDeployment\nmetadata: {name: x, namespace: a}\nspec: [1]\n",
    "metadata-is-a-string": "apiVersion: v1\nkind: ConfigMap\nmetadata: x\n",
    "list-item-scalar": "apiVersion: v1\nkind: List\nitems: [3]\n",
    "same-object-twice": QWEN + "---\n" + QWEN,
    "not-utf8": b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: \xff}\n",
    "yaml-error": "apiVersion: v1\nkind: [ConfigMap\n",
    "duplicate-key": "apiVersion: v1\nkind: ConfigMap\nkind: Secret\nmetadata: {name: x}\n",
}


@pytest.mark.parametrize("case", sorted(LINT_UNREADABLE))
def test_lint_refuses_unreadable_input_in_one_line(case, tmp_path):
    path = tmp_path / "manifests.yaml"
    text = LINT_UNREADABLE[case]
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    outcome = run_cli("lint", str(path))
    assert not outcome.crashed and outcome.code == 2, outcome.describe()
    lines = outcome.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"gpu-fabric lint: {path}"), outcome.describe()


def test_lint_refuses_folders_and_missing_paths(tmp_path):
    for path in (tmp_path, tmp_path / "absent.yaml"):
        outcome = run_cli("lint", str(path))
        assert outcome.code == 2 and outcome.err.startswith(f"gpu-fabric lint: {path}"), outcome.describe()


def test_a_top_level_list_is_linted_item_by_item(tmp_path):
    path = tmp_path / "list.yaml"
    path.write_text(yaml.safe_dump([yaml.safe_load(QWEN)]))
    outcome = run_cli("lint", str(path))
    assert outcome.code == 0 and "read 1 GPUStack objects" in outcome.out, outcome.describe()


LINT_FINDINGS: dict[str, Callable[[Doc], Any]] = {
    "interface-inf": lambda d: d["spec"]["roles"][0]["resources"].update(interface=float("inf")),
    "roles-a-string": lambda d: d["spec"].update(roles="prefill"),
    "resources-a-list": lambda d: d["spec"]["roles"][0].update(resources=[1]),
    "kv-transfer-a-bool": lambda d: d["spec"].update(kvTransfer=True),
    "replicas-a-string": lambda d: d["spec"]["roles"][0].update(replicas="many"),
}


@pytest.mark.parametrize("case", sorted(LINT_FINDINGS))
def test_lint_reports_odd_values_as_findings(case, tmp_path):
    document = yaml.safe_load(QWEN)
    LINT_FINDINGS[case](document)
    path = tmp_path / "deployment.yaml"
    path.write_text(yaml.safe_dump(document))
    outcome = run_cli("lint", str(path))
    assert not outcome.crashed and outcome.code == 2, outcome.describe()  # what the operator refuses: exit 2 (docs/rules.md)
    assert "ERROR ModelDeployment team-a/qwen-pd" in outcome.out and str(path) in outcome.out


def test_lint_refuses_a_device_in_one_line():
    import os

    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero here")
    outcome = run_cli("lint", "/dev/zero")
    assert outcome.code == 2 and outcome.err.strip() == "gpu-fabric lint: /dev/zero: is not a regular file"
