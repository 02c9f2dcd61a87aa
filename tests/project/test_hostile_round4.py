"""A fourth round of hostile input (issue 26): refused cleanly, never a traceback or a policy crash.

Malformed workloads in ``lint --stack`` and in the pack, control characters, deep nesting, huge
integers and alias bombs in YAML and stack files and ``Pulumi.yaml``; a long ``kind: List`` that is no
alias bomb; a command line of 50,000 flags read in linear time; names with a trailing newline.
"""

from __future__ import annotations

import copy
import time
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml

from support.bad_input import dump, project_with, render_file, run_cli, stack_document
from support.stack_configs import PROJECT_DIR

POD: dict[str, Any] = {
    "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "team-a"},
    "spec": {"containers": [{"name": "c", "image": "i", "resources": {"limits": {"vpc.amazonaws.com/efa": 1}}}]},
}


def pod(change: Callable[[dict[str, Any]], Any]) -> dict[str, Any]:
    document = copy.deepcopy(POD)
    change(document["spec"])
    return document


def affinity(expression: dict[str, Any]) -> Callable[[dict[str, Any]], Any]:
    return lambda spec: spec.__setitem__("affinity", {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [expression]}]}}})


MALFORMED_WORKLOADS: dict[str, tuple[dict[str, Any], str]] = {
    "privileged-as-a-string": (
        pod(lambda spec: spec["containers"][0].__setitem__("securityContext", {"privileged": "true"})),
        "spec.containers[0].securityContext.privileged"),
    "match-expression-values-not-a-list": (
        pod(affinity({"key": "a", "operator": "In", "values": "x"})),
        "matchExpressions[0].values"),
    "match-expression-key-a-list": (
        pod(affinity({"key": ["a"], "operator": "In", "values": ["x"]})),
        "matchExpressions[0].key"),
    "toleration-key-a-list": (
        pod(lambda spec: spec.__setitem__("tolerations", [{"key": ["a"], "operator": "Exists"}])),
        "spec.tolerations[0].key"),
}


def lint_file(tmp_path: Path, content: str | bytes, *, stack: str = "aws-efa"):
    path = tmp_path / "manifest.yaml"
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return path, run_cli("lint", "--stack", stack, "--project", str(PROJECT_DIR), str(path))


@pytest.mark.parametrize("case", sorted(MALFORMED_WORKLOADS))
def test_lint_stack_refuses_a_malformed_workload_naming_the_field(tmp_path, case):
    manifest, field = MALFORMED_WORKLOADS[case]
    path, outcome = lint_file(tmp_path, yaml.safe_dump(manifest))
    assert not outcome.crashed, outcome.describe()
    assert outcome.code == 2, outcome.describe()
    assert str(path) in outcome.err and field in outcome.err, outcome.describe()


@pytest.mark.parametrize("case", sorted(MALFORMED_WORKLOADS))
def test_the_pack_never_crashes_on_a_malformed_workload(case):
    from gpu_fabric.policies import ALL_POLICIES
    from gpu_fabric.plan.resource_view import Resource
    from gpu_fabric.policies.runner import run_policies
    from gpu_fabric.program.render import render_stack
    from support.policy_helpers import k8s

    resources = [Resource(r.type, r.name, r.urn, r.policy_inputs, r.parent, r.dependencies)
                 for r in render_stack("aws-efa", PROJECT_DIR).resources]
    manifest, _ = MALFORMED_WORKLOADS[case]
    daemonset = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "d", "namespace": "kube-system"},
                 "spec": {"selector": {"matchLabels": {"a": "b"}},
                          "template": {"metadata": {"labels": {"a": "b"}}, "spec": copy.deepcopy(manifest["spec"])}}}
    violations = run_policies(ALL_POLICIES, [*resources, k8s(manifest), k8s(daemonset)])
    crashes = [f"{v.policy}: {v.message}" for v in violations if "policy failed" in v.message]
    assert not crashes, crashes


def test_coverage_reads_a_malformed_match_expression_as_a_mismatch_not_a_crash():
    from gpu_fabric.kube.scheduling import _expression_mismatch

    assert _expression_mismatch({"key": ["a"], "operator": "In", "values": ["x"]}, {"a": "x"})
    assert _expression_mismatch({"key": "a", "operator": "In", "values": "x"}, {"a": "x"})


def _control(text: str) -> bytes:
    return text.encode().replace(b"name: c\n", b"name: c\x07\n", 1)


def _nul(text: str) -> bytes:
    return text.encode().replace(b"name: c\n", b"name: c\x00\n", 1)


POD_TEXT = yaml.safe_dump(POD, sort_keys=False)
HOSTILE_YAML: dict[str, tuple[str | bytes, str]] = {
    "control-character": (_control(POD_TEXT), "U+0007"),
    "nul-byte": (_nul(POD_TEXT), "U+0000"),
    "nested-2000-deep-flow": ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: " + "[" * 2000 + "]" * 2000 + "\n",
                              "deeper than"),
    "nested-2000-deep-mapping": ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: "
                                 + "{a: " * 2000 + "1" + "}" * 2000 + "\n", "deeper than"),
    "integer-of-5000-digits": ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: " + "9" * 5000 + "}\n",
                               "5000 digits"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_YAML))
def test_lint_refuses_hostile_yaml_naming_the_file(tmp_path, case):
    content, fragment = HOSTILE_YAML[case]
    path, outcome = lint_file(tmp_path, content)
    assert not outcome.crashed, outcome.describe()
    assert outcome.code == 2, outcome.describe()
    assert str(path) in outcome.err and fragment in outcome.err, outcome.describe()
    assert "line" in outcome.err or "deeper" in outcome.err, outcome.describe()


def _stack_with_control_character() -> bytes:
    document = stack_document("seed-rdma")
    return dump(document).encode().replace(b"config:\n", b"config:\n  gpu-fabric:note: \"x\"\x01\n", 1)


HOSTILE_STACK_FILES: dict[str, tuple[Callable[[], str | bytes], str]] = {
    "nul-byte": (lambda: dump(stack_document("seed-rdma")).encode() + b"# \x00\n", "U+0000"),
    "control-character": (_stack_with_control_character, "U+0001"),
    "nested-2000-deep": (lambda: "config:\n  gpu-fabric:x: " + "[" * 2000 + "]" * 2000 + "\n", "deeper than"),
    "integer-of-5000-digits": (lambda: "config:\n  gpu-fabric:x: " + "9" * 5000 + "\n", "5000 digits"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_STACK_FILES))
@pytest.mark.parametrize("command", ["render", "check"])
def test_hostile_stack_files_are_refused_naming_the_file(tmp_path, case, command):
    make, fragment = HOSTILE_STACK_FILES[case]
    outcome = render_file(tmp_path, make(), command)
    assert not outcome.crashed, outcome.describe()
    assert outcome.code == 2, outcome.describe()
    assert "Pulumi.x.yaml" in outcome.err and fragment in outcome.err, outcome.describe()


@pytest.mark.parametrize("case", sorted(HOSTILE_STACK_FILES))
def test_lint_stack_refuses_a_hostile_stack_file(tmp_path, case):
    make, fragment = HOSTILE_STACK_FILES[case]
    project = project_with(tmp_path, make())
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(POD_TEXT)
    outcome = run_cli("lint", "--stack", "x", "--project", str(project), str(manifest))
    assert not outcome.crashed, outcome.describe()
    assert outcome.code == 2 and fragment in outcome.err, outcome.describe()


ALIAS_BOMB = ("a: &a [x, x, x, x, x, x, x, x, x, x]\n"
              + "".join(f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(8)))


def test_an_alias_bomb_in_pulumi_yaml_is_refused_at_once(tmp_path):
    project = project_with(tmp_path, dump(stack_document("seed-rdma")))
    (project / "Pulumi.yaml").write_text("name: team\nruntime: python\nmain: stacks\nstackConfigDir: stacks\n"
                                         + ALIAS_BOMB + "description: *i\n")
    started = time.monotonic()
    outcome = run_cli("render", "--project", str(project), "--stack", "x", "--out", str(tmp_path / "out"))
    assert time.monotonic() - started < 10
    assert not outcome.crashed, outcome.describe()
    assert outcome.code == 2 and "Pulumi.yaml" in outcome.err and "alias" in outcome.err, outcome.describe()


@pytest.mark.parametrize("content, fragment", [
    (b"name: team\nruntime: python\ndescription: \"a\x00\"\n", "U+0000"),
    ("name: team\nruntime: python\ndescription: " + "[" * 2000 + "]" * 2000 + "\n", "deeper than"),
])
def test_hostile_pulumi_yaml_is_refused_naming_the_file(tmp_path, content, fragment):
    project = project_with(tmp_path, dump(stack_document("seed-rdma")))
    (project / "Pulumi.yaml").write_bytes(content if isinstance(content, bytes) else content.encode())
    outcome = run_cli("render", "--project", str(project), "--stack", "x", "--out", str(tmp_path / "out"))
    assert not outcome.crashed, outcome.describe()
    assert outcome.code == 2 and "Pulumi.yaml" in outcome.err and fragment in outcome.err, outcome.describe()


def _kubectl_item(index: int) -> dict[str, Any]:
    """A ConfigMap as ``kubectl get -o yaml`` writes it: metadata, managedFields and all (about 60 values)."""
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": f"c{index}", "namespace": "team-a", "uid": f"uid-{index}", "resourceVersion": str(index),
                         "creationTimestamp": "2026-01-01T00:00:00Z",
                         "labels": {f"l{j}": "v" for j in range(6)},
                         "annotations": {f"a{j}": "v" for j in range(6)},
                         "managedFields": [{"apiVersion": "v1", "fieldsType": "FieldsV1", "manager": "kubectl",
                                            "operation": "Update", "time": "2026-01-01T00:00:00Z",
                                            "fieldsV1": {"f:data": {f"f:k{j}": {} for j in range(6)}}}]},
            "data": {f"k{j}": "v" for j in range(6)}}


def test_a_long_kind_list_is_no_alias_bomb(tmp_path):
    listing = {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""},
               "items": [_kubectl_item(i) for i in range(2500)]}
    from gpu_fabric.config import stack_file
    from gpu_fabric.config.stack_file import MAX_EXPANDED_NODES, _literal_size, _StrictLoader

    # libyaml where PyYAML has it: the same text and node graph as the pure-Python classes, a third of the time.
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    text = yaml.dump(listing, Dumper=dumper)
    # Large enough to have been refused: the list holds 2,500 items each as large as the first (composing
    # the whole text here too would double the test's time for the same bound).
    loader = getattr(stack_file, "_CStrictLoader", _StrictLoader)(yaml.dump(_kubectl_item(0), Dumper=dumper))
    try:
        assert _literal_size(loader.get_single_node()) * len(listing["items"]) > MAX_EXPANDED_NODES
    finally:
        loader.dispose()
    path, outcome = lint_file(tmp_path, text)
    assert not outcome.crashed, outcome.describe()
    assert outcome.code == 0 and "2500 other objects passed over" in outcome.out, outcome.describe()


def test_a_long_kind_list_with_an_alias_bomb_is_still_refused(tmp_path):
    path, outcome = lint_file(tmp_path, ALIAS_BOMB + "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: *i\n")
    assert outcome.code == 2 and "alias" in outcome.err, outcome.describe()


@pytest.mark.parametrize("args", [
    [f"--flag-{i}=x" for i in range(50_000)],
    ["--x"] * 50_000,
    ["--kv-transfer-config", "{}"] * 25_000,
])
def test_a_command_line_of_50000_flags_is_read_in_linear_time(args):
    from gpu_fabric.kube.engine_flags import read_container

    started = time.monotonic()
    read_container({"name": "c", "image": "i", "command": ["vllm", "serve"], "args": args}, "spec.containers[0]")
    assert time.monotonic() - started < 10  # quadratic reading took more than a minute


def test_lint_stack_reads_50000_flags_quickly(tmp_path):
    manifest = pod(lambda spec: spec["containers"][0].__setitem__("args", [f"--flag-{i}=x" for i in range(50_000)]))
    started = time.monotonic()
    _, outcome = lint_file(tmp_path, yaml.safe_dump(manifest))
    assert time.monotonic() - started < 20
    assert not outcome.crashed and outcome.code in (0, 1), outcome.describe()


@pytest.mark.parametrize("check, value", [
    ("dns_label", "abc\n"), ("dns_subdomain", "abc.def\n"), ("qualified_name", "abc\n"), ("label_value", "abc\n"),
    ("eks_cluster_name", "abc\n"), ("instance_type", "p5.48xlarge\n"), ("availability_zone", "us-east-1a\n"),
    ("region", "us-east-1\n"), ("image", "nginx\n"), ("env_var_name", "ABC\n"),
    ("availability_zone", "us-east-\u0661a"), ("region", "us-east-\u0661"),
])
def test_names_with_a_trailing_newline_or_unicode_digits_are_refused(check, value):
    from gpu_fabric.config import syntax

    with pytest.raises(ValueError):
        getattr(syntax, check)(value)


@pytest.mark.parametrize("check, value", [
    ("is_dns1123_label", "abc\n"), ("is_dns1035_label", "abc\n"), ("is_qualified_name", "abc\n"),
    ("is_valid_label_value", "abc\n"), ("is_qualified_name", "example.com\n/abc"),
])
def test_the_api_server_checks_refuse_a_trailing_newline(check, value):
    from gpu_fabric.config import syntax

    assert getattr(syntax, check)(value)


def test_module_patterns_refuse_a_trailing_newline():
    from gpu_fabric.config import syntax

    for pattern in (syntax.DNS_LABEL, syntax.DNS_SUBDOMAIN, syntax.DNS1035_LABEL, syntax.EKS_NODE_GROUP_NAME,
                    syntax.EKS_CLUSTER_NAME, syntax.INSTANCE_TYPE, syntax.AVAILABILITY_ZONE, syntax.REGION):
        assert pattern.match("us-east-1a") is None or pattern.match("us-east-1a\n") is None, pattern.pattern
        assert pattern.match("abc\n") is None, pattern.pattern
