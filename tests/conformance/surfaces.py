"""Every surface that claims a rule, run on one case, answered in one shape: the exit code and what was reported.

A surface reports a finding as text ending with the rule's ``[id]`` (``lint``, ``render`` and ``check`` end
their lines so, and the pack ends each violation's message so: :attr:`gpu_fabric.findings.Finding.rule_tag`);
``load_config`` returns the typed findings themselves. So the test compares, across surfaces: the exit code,
the rule ids reported, and that the text reported under the case's rule names the case's field path.
"""

from __future__ import annotations

import contextlib
import json
import re
import runpy
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from corpus import Case
from support.bad_input import dump, project_with, run_cli

TAG = re.compile(r"\[([a-z0-9][a-z0-9-]*)\]\s*$")
STACK = "x"


@dataclass(frozen=True)
class Reported:
    """One finding as a surface reported it."""

    rule: str
    text: str
    """Everything the surface printed for it (for a CLI: the lines since the previous finding)."""
    mandatory: bool = True


@dataclass(frozen=True)
class Seen:
    """What one surface answered on one case."""

    surface: str
    exit_code: int
    reported: tuple[Reported, ...]
    output: str = ""

    def of_rule(self, rule: str) -> list[Reported]:
        return [found for found in self.reported if found.rule == rule]

    def describe(self) -> str:
        listed = "\n".join(f"  [{found.rule}] {found.text[-300:]}" for found in self.reported) or "  (nothing)"
        return f"{self.surface}: exit {self.exit_code}\n{listed}\n--- output\n{self.output[-2500:]}"


def project_of(case: Case, folder: Path) -> Path:
    """A project folder holding the stack program and the case's stack file (``Pulumi.x.yaml``)."""
    return project_with(folder, dump(case.stack_document()), name=STACK)


def tagged_chunks(text: str) -> list[Reported]:
    """Each finding a CLI printed: the lines since the previous tagged line, up to one ending with ``[rule-id]``."""
    found: list[Reported] = []
    chunk: list[str] = []
    for line in text.splitlines():
        chunk.append(line)
        match = TAG.search(line)
        if match:
            found.append(Reported(match.group(1), "\n".join(chunk)))
            chunk = []
    return found


def via_load_config(case: Case, folder: Path) -> Seen:
    """``load_config`` on the case's configuration, as the stack program calls it."""
    from gpu_fabric.config.base import ConfigError
    from gpu_fabric.validation.configuration import load_config

    config = case.stack_document()["config"]
    values = {key.split(":", 1)[1]: value for key, value in config.items() if key.startswith("gpu-fabric:")}
    try:
        load_config(values, aws_region=config.get("aws:region"))
    except ConfigError as error:
        reported = tuple(Reported(f.rule_id, f"{f.path}: {f.message}", f.is_error) for f in error.problems)
        return Seen("load_config", error.exit_code, reported, error.describe())
    return Seen("load_config", 0, ())


def via_cli(surface: str, case: Case, folder: Path) -> Seen:
    """``gpu-fabric render``, ``check`` or ``check --preview`` of the case's stack file."""
    project = project_of(case, folder)
    command = {"render": ["render", "--out", str(folder / "out")], "check": ["check"],
               "check-preview": ["check", "--preview"]}[surface]
    outcome = run_cli(*command, "--project", str(project), "--stack", STACK)
    assert not outcome.crashed, outcome.describe()
    text = outcome.out + "\n" + outcome.err
    return Seen(surface, outcome.code or 0, tuple(tagged_chunks(text)), text)


def via_lint(case: Case, folder: Path) -> Seen:
    """``gpu-fabric lint --stack x`` over the case's manifests (one file)."""
    project = project_of(case, folder)
    manifests = folder / "workloads.yaml"
    manifests.write_text(dump_all(case.manifests))
    outcome = run_cli("lint", "--project", str(project), "--stack", STACK, str(manifests))
    assert not outcome.crashed, outcome.describe()
    text = outcome.out + "\n" + outcome.err
    return Seen("lint", outcome.code or 0, tuple(tagged_chunks(text)), text)


def dump_all(documents) -> str:
    return "---\n".join(dump(dict(document)) for document in documents)


_RENDERED: dict[str, tuple] = {}


def rendered_stack(case: Case, folder: Path) -> tuple:
    """The case's stack rendered as the pack sees it, once per process for each stack file.

    The corpus's 140 cases the pack judges start from 10 stack files (most add manifests or edit a rendered
    resource of an example stack), and a stack file renders the same resources every time
    (tests/cli/test_render_cli.py): what differs between those cases is added to, or edited in, a copy.
    """
    from gpu_fabric.program.render import render_stack

    key = json.dumps(case.stack_document(), sort_keys=True, default=str)
    if key not in _RENDERED:
        project = project_of(case, folder)
        # What the pack judges is built here, not judged: the stack program runs in this process (a harness), not
        # in a forked child as the CLI surfaces run it -- the same resources, without a fork of this test process.
        program = str(project / "stacks" / "__main__.py")
        rendered = render_stack(STACK, project, program=lambda: runpy.run_path(program, run_name="__main__"))
        _RENDERED[key] = tuple(r.policy_resource() for r in rendered.resources)
    return _RENDERED[key]


def pack_resources(case: Case, folder: Path) -> list:
    """The rendered stack's resources as the pack sees them, plus the case's manifests, with its edits applied."""
    from support.policy_helpers import k8s, replace_props

    resources = list(rendered_stack(case, folder))
    resources += [k8s(dict(manifest), name=f"team-{i}") for i, manifest in enumerate(case.manifests)]
    for edit in case.resources:
        resources = _edited(resources, edit, replace_props)
    return resources


def _edited(resources: list, edit, replace_props) -> list:
    from corpus import _set, _unset

    def change(props: dict) -> None:
        for path, value in (edit.get("set") or {}).items():
            _set(props, path, value)
        for path in edit.get("unset") or ():
            _unset(props, path)

    def matches(r) -> bool:
        return r.type == edit["type"] and edit.get("name", "") in r.name

    matched = [r for r in resources if matches(r)]
    assert matched, f"no rendered resource of type {edit['type']} named like {edit.get('name', '')!r}"
    resources = replace_props(resources, matches, change)
    if "dependencies" not in edit:
        return resources
    # What the engine says an input is built from (``property_dependencies``): input -> names of rendered resources.
    # The pack knows a new security group on an interface only so, its id being unknown at preview.
    urns = {r.name: r.urn for r in resources}
    dependencies = {prop: tuple(urns[name] for name in names) for prop, names in edit["dependencies"].items()}
    return [type(r)(r.type, r.name, r.urn, r.props, r.parent, {**r.property_dependencies, **dependencies})
            if matches(r) else r for r in resources]


def _pack_seen(surface: str, violations) -> Seen:
    reported = []
    for violation in violations:
        match = TAG.search(violation.message)
        reported.append(Reported(match.group(1) if match else f"(untagged {violation.policy})",
                                 violation.message, violation.mandatory))
    exit_code = 1 if any(v.mandatory for v in violations) else 0
    return Seen(surface, exit_code, tuple(reported), "\n".join(v.message for v in violations))


def via_pack(case: Case, folder: Path) -> Seen:
    """The pack in this process (``check``'s way) over the stack and the case's objects."""
    from gpu_fabric.policies import ALL_POLICIES
    from gpu_fabric.policies.runner import run_policies

    return _pack_seen("pack", run_policies(ALL_POLICIES, pack_resources(case, folder)))


@contextlib.contextmanager
def _served() -> Iterator:
    from gpu_fabric import __version__
    from gpu_fabric.policies import pack_display_name
    from gpu_fabric.policies.over_grpc import served_pack

    with served_pack(display_name=pack_display_name(__version__)) as stub:
        yield stub


def via_pack_grpc(case: Case, folder: Path, stub=None) -> Seen:
    """The pack over the analyzer's gRPC protocol, as the engine drives it at ``pulumi preview``."""
    from gpu_fabric.policies.over_grpc import analyze_over_grpc

    resources = pack_resources(case, folder)
    if stub is None:
        with _served() as served:
            return _pack_seen("pack-grpc", analyze_over_grpc(served, resources).violations)
    return _pack_seen("pack-grpc", analyze_over_grpc(stub, resources).violations)


RUNNERS = {
    "load_config": via_load_config,
    "render": lambda case, folder: via_cli("render", case, folder),
    "check": lambda case, folder: via_cli("check", case, folder),
    "check-preview": lambda case, folder: via_cli("check-preview", case, folder),
    "lint": via_lint,
    "pack": via_pack,
    "pack-grpc": via_pack_grpc,
}
