"""``gpu-fabric diff`` on the aws-efa example stack, in a throw-away git repository built from this tree.

Expectations are computed from the stack files and the renders, not listed by hand, so they hold
while the example stacks change.
"""

import json
import shutil
from pathlib import Path

import pytest
import yaml

from gpu_fabric.cli import main
from gpu_fabric.diff.compare import compare
from gpu_fabric.diff.replace_rules import LAUNCH_TEMPLATE, NODE_GROUP
from gpu_fabric.diff.source import render_stack_at
from support.stack_configs import PROJECT_DIR
from support.git_repo import commit_everything, git

STACK = "aws-efa"


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    """A git repository whose one commit holds this project's Pulumi.yaml and stacks/."""
    root = tmp_path_factory.mktemp("platform-repo")
    shutil.copy(PROJECT_DIR / "Pulumi.yaml", root / "Pulumi.yaml")
    shutil.copytree(PROJECT_DIR / "stacks", root / "stacks", ignore=shutil.ignore_patterns("__pycache__"))
    commit_everything(root)
    return root


@pytest.fixture(scope="module")
def base(repo):
    return render_stack_at(repo, STACK, "main", side="base")[0]


@pytest.fixture
def edit_stack(repo):
    """Edit the working tree's stack file; restored afterwards."""
    path = repo / "stacks" / f"Pulumi.{STACK}.yaml"
    original = path.read_text()

    def edit(change):
        document = yaml.safe_load(original)
        change(document["config"])
        path.write_text(yaml.safe_dump(document, sort_keys=False))
        return document["config"]

    yield edit
    path.write_text(original)


def head_digest(repo, base):
    head = render_stack_at(repo, STACK, None, side="head")[0]
    return head, compare(base.resources, head.resources, stack=STACK)


def test_no_change_gives_no_steps(repo, capsys):
    assert main(["diff", "--base", "main", "--stack", STACK, "--project", str(repo), "--json"]) == 0
    digest = json.loads(capsys.readouterr().out)
    assert digest["steps"] == []
    assert digest["changeSummary"]["same"] > 0
    assert sum(count for op, count in digest["changeSummary"].items() if op != "same") == 0
    assert main(["diff", "--base", "main", "--head", "main", "--stack", STACK, "--project", str(repo),
                 "--detailed-exitcode"]) == 0


def test_topology_change_updates_the_launch_template_and_rolls_its_node_group(repo, base, edit_stack):
    def change(config):
        pool = next(p for p in config["gpu-fabric:pools"] if p.get("aws"))
        policy = (pool.get("topology") or {}).get("policy", "restricted")
        pool["topology"] = {**(pool.get("topology") or {}), "policy": "single-numa-node" if policy != "single-numa-node" else "restricted"}
    edit_stack(change)
    head, digest = head_digest(repo, base)
    templates = [s for s in digest.steps if s.type == LAUNCH_TEMPLATE]
    assert templates and all(s.op == "update" for s in templates)
    for template in templates:
        assert "userData" in template.diff_reasons
        readers = [r.urn for r in head.resources if r.type == NODE_GROUP
                   and template.urn in r.dependencies.get("launchTemplate", ())]
        assert readers
        for urn in readers:
            step = next(s for s in digest.steps if s.urn == urn)
            assert step.op == "update" and step.rolls_nodes and step.to_json()["rollsNodes"] is True
    assert not [s for s in digest.steps if s.op in ("replace", "delete")]


def test_capacity_type_change_replaces_the_node_group(repo, base, edit_stack):
    def change(config):
        pool = next(p for p in config["gpu-fabric:pools"] if p.get("aws"))
        pool["aws"]["capacityType"] = "SPOT" if pool["aws"].get("capacityType") != "SPOT" else "ON_DEMAND"
    config = edit_stack(change)
    head, digest = head_digest(repo, base)
    old_capacity = {r.urn: r.inputs.get("capacityType") for r in base.resources if r.type == NODE_GROUP}
    changed = {r.urn for r in head.resources if r.type == NODE_GROUP and r.inputs.get("capacityType") != old_capacity.get(r.urn)}
    assert changed
    replaced = {s.urn: s for s in digest.steps if s.op == "replace"}
    assert set(replaced) == changed
    for step in replaced.values():
        assert "capacityType" in step.replace_reasons and step.rolls_nodes


def test_new_tenant_namespace_creates_its_local_queues(repo, base, edit_stack):
    config = edit_stack(lambda c: c["gpu-fabric:namespaces"].append("team-diff-new"))
    head, digest = head_digest(repo, base)
    expected = {r.urn for r in head.resources if r.type.startswith("kubernetes:kueue.x-k8s.io/")
                and r.inputs["kind"] == "LocalQueue" and r.inputs["metadata"].get("namespace") == "team-diff-new"}
    assert len(expected) == len(config["gpu-fabric:pools"])
    created = {s.urn for s in digest.steps if s.op == "create"}
    assert expected <= created
    assert not [s for s in digest.steps if s.op in ("replace", "delete")]


@pytest.mark.parametrize("args, names", [
    (["--base", "no-such-ref"], "'no-such-ref'"),
    (["--base", "main", "--stack", "no-such-stack"], "'no-such-stack'"),
    (["--base", "main", "--head", "also-missing"], "'also-missing'"),
])
def test_bad_refs_and_stacks_exit_2_with_one_line(repo, capsys, args, names):
    argv = ["diff", "--stack", STACK, *args] if "--stack" not in args else ["diff", *args]
    assert main([*argv, "--project", str(repo)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and names in err and "Traceback" not in err


def test_base_that_no_longer_validates_is_reported_not_a_crash(repo, capsys, edit_stack):
    path = repo / "stacks" / f"Pulumi.{STACK}.yaml"
    original = path.read_text()
    broken = yaml.safe_load(original)
    broken["config"]["gpu-fabric:pools"][0]["acceleratorsPerNode"] = "eight"
    path.write_text(yaml.safe_dump(broken))
    git(repo, "commit", "-q", "-am", "broken")
    try:
        assert main(["diff", "--base", "HEAD", "--stack", STACK, "--project", str(repo)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "does not validate" in err and "base HEAD" in err and STACK in err
        assert "acceleratorsPerNode" in err
    finally:
        git(repo, "reset", "-q", "--hard", "HEAD~1")


def test_detailed_exitcode_reports_changes(repo, capsys, edit_stack):
    edit_stack(lambda c: c["gpu-fabric:namespaces"].append("team-exit"))
    assert main(["diff", "--base", "main", "--stack", STACK, "--project", str(repo)]) == 0
    assert main(["diff", "--base", "main", "--stack", STACK, "--project", str(repo), "--detailed-exitcode"]) == 2


def test_render_urns_are_the_engines_and_components_declare_object_identity(base):
    from gpu_fabric.program.urn import engine_urn, parse_urn

    by_urn = {r.urn: r for r in base.resources}
    for resource in base.resources:
        assert resource.urn == engine_urn(STACK, "gpu-fabric", resource.type, resource.name, resource.parent)
        parent = by_urn.get(resource.parent)
        if parent is not None:  # the whole chain: the parent's qualified type, then this type
            assert parse_urn(resource.urn).qualified_type == f"{parse_urn(parent.urn).qualified_type}${resource.type}"
    assert not any("pulumi:pulumi:Stack$" in r.urn for r in base.resources)
    kubernetes_objects = [r for r in base.resources if r.is_kubernetes_object]
    assert kubernetes_objects
    for resource in kubernetes_objects:
        assert {"metadata.name", "metadata.namespace"} <= set(resource.replace_on_changes)
        if resource.type == "kubernetes:apps/v1:DaemonSet":
            assert "spec.selector" in resource.replace_on_changes


def test_markdown_fits_one_comment_and_carries_the_marker(repo, capsys, edit_stack):
    from gpu_fabric.diff.markdown import GITHUB_COMMENT_LIMIT, marker

    def change(config):
        config["gpu-fabric:namespaces"].append("team-md")
        pool = next(p for p in config["gpu-fabric:pools"] if p.get("aws"))
        pool["aws"]["capacityType"] = "SPOT" if pool["aws"].get("capacityType") != "SPOT" else "ON_DEMAND"
    edit_stack(change)
    assert main(["diff", "--base", "main", "--stack", STACK, "--project", str(repo), "--markdown"]) == 0
    text = capsys.readouterr().out
    assert len(text) <= GITHUB_COMMENT_LIMIT
    assert text.splitlines()[0] == marker(STACK)
    assert text.index("[!WARNING]") < text.index("#### Replace") < text.index("#### Create") < text.index("<details>")
    assert "`capacityType` changed" in text


def test_new_target_cluster_replaces_the_provider_and_every_object_it_manages(repo, base, edit_stack):
    def change(config):  # the whole stack moves to another cluster: the target and every node group
        target = config["gpu-fabric:kubernetes"]
        if "eksCluster" in target:
            old = target["eksCluster"]["name"]
            target["eksCluster"]["name"] = old + "-b"
            for pool in config["gpu-fabric:pools"]:
                if (pool.get("aws") or {}).get("clusterName") == old:
                    pool["aws"]["clusterName"] = old + "-b"
        else:
            target["context"] = target["context"] + "-b"
    edit_stack(change)
    head, digest = head_digest(repo, base)
    providers = {r.urn for r in head.resources if r.type == "pulumi:providers:kubernetes"}
    managed = {r.urn for r in head.resources if r.provider in providers and r.custom}
    assert providers and managed
    replaced = {s.urn for s in digest.steps if s.op == "replace"}
    assert providers | managed <= replaced
    assert all(any("provider" in hint for hint in s.hints) for s in digest.steps if s.urn in managed)


@pytest.mark.parametrize("field, value", [("releaseVersion", "1.33.0-20260101"), ("kubernetesVersion", "1.33")])
def test_ami_release_or_kubernetes_version_rolls_the_node_group(repo, base, edit_stack, field, value):
    edit_stack(lambda c: next(p for p in c["gpu-fabric:pools"] if p.get("aws"))["aws"].__setitem__(field, value))
    head, digest = head_digest(repo, base)
    groups = [s for s in digest.steps if s.type == NODE_GROUP]
    assert groups and all(s.op == "update" and s.rolls_nodes for s in groups)
    assert not [s for s in digest.steps if s.op in ("replace", "delete")]


def test_project_in_a_subfolder_of_the_repository(tmp_path, capsys):
    root = tmp_path / "platform"
    project = root / "infra" / "gpu"
    project.mkdir(parents=True)
    shutil.copy(PROJECT_DIR / "Pulumi.yaml", project / "Pulumi.yaml")
    shutil.copytree(PROJECT_DIR / "stacks", project / "stacks", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "README.md").write_text("platform\n")
    commit_everything(root)
    assert main(["diff", "--base", "main", "--stack", STACK, "--project", str(project), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["steps"] == []


def _digest_of(capsys, *argv: str) -> tuple[int, dict]:
    code = main(["diff", *argv])
    return code, json.loads(capsys.readouterr().out)


def test_stack_new_in_the_change_is_all_creates_and_exits_0(repo, capsys):
    # The first PR of a new stack must not turn CI red: a stack absent from the base is all creates, exit 0.
    new = repo / "stacks" / "Pulumi.aws-efa-copy.yaml"
    shutil.copy(repo / "stacks" / f"Pulumi.{STACK}.yaml", new)
    try:
        code, digest = _digest_of(capsys, "--base", "main", "--stack", "aws-efa-copy", "--project", str(repo))
        assert code == 0
        head = render_stack_at(repo, "aws-efa-copy", None, side="head")[0]
        assert {s["urn"] for s in digest["steps"]} == {r.urn for r in head.resources}
        assert {s["op"] for s in digest["steps"]} == {"create"}
        assert digest["changeSummary"]["create"] == len(head.resources)
        assert main(["diff", "--base", "main", "--stack", "aws-efa-copy", "--project", str(repo),
                     "--detailed-exitcode"]) == 2
    finally:
        new.unlink()


def test_stack_the_head_removed_is_all_deletes(repo, base, capsys):
    path = repo / "stacks" / f"Pulumi.{STACK}.yaml"
    original = path.read_text()
    path.unlink()
    try:
        code, digest = _digest_of(capsys, "--base", "main", "--stack", STACK, "--project", str(repo))
        assert code == 0
        assert {s["urn"] for s in digest["steps"]} == {r.urn for r in base.resources}
        assert {s["op"] for s in digest["steps"]} == {"delete"}
    finally:
        path.write_text(original)


def test_stack_neither_end_has_names_both(repo, capsys):
    assert main(["diff", "--base", "main", "--stack", "nowhere", "--project", str(repo)]) == 2
    err = capsys.readouterr().err
    assert "neither the base" in err and "'nowhere'" in err and err.count("\n") == 1


@pytest.mark.parametrize("side", ["base", "head"])
def test_a_stack_program_that_exits_early_is_an_error_naming_the_ref(repo, capsys, side):
    program = repo / "stacks" / "__main__.py"
    original = program.read_text()
    early = "import sys\nsys.exit(0)\n" + original
    try:
        program.write_text(early)
        if side == "base":
            git(repo, "commit", "-q", "-am", "exits early")
            program.write_text(original)
            argv = ["diff", "--base", "HEAD", "--stack", STACK, "--project", str(repo)]
        else:
            argv = ["diff", "--base", "main", "--head", "exits", "--stack", STACK, "--project", str(repo)]
            git(repo, "checkout", "-q", "-b", "exits")
            git(repo, "commit", "-q", "-am", "exits early")
            git(repo, "checkout", "-q", "main")
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "exited early" in err and "Traceback" not in err
        assert ("base HEAD" if side == "base" else "head exits") in err
    finally:
        if side == "base":
            git(repo, "reset", "-q", "--hard", "HEAD~1")
        else:
            git(repo, "branch", "-q", "-D", "exits")
        program.write_text(original)
