"""The conformance corpus: for every registered rule, inputs it accepts and inputs it refuses (or warns about).

Cases are data, one YAML file per policy of the pack in ``tests/conformance/cases/`` (a file per domain where a
rule has no policy). Each file is a list of entries::

    - rule: dra-pool-topology          # a rule id of gpu_fabric.validation.rule_registry.REGISTRY
      accepts:
        - name: claim sizes that tile p5en's PCIe roots
          stack: dra-efa               # stacks/Pulumi.<stack>.yaml, the starting point
          set: {pools[0].gpusPerClaim: [1, 2, 8]}
      refuses:                         # or ``warns:`` for a warning (an advisory rule, or a warning of a rule)
        - name: claims of 3 GPUs strand two GPUs of the node
          stack: dra-efa
          set: {pools[0].gpusPerClaim: [3, 8]}
          path: pools[0].gpusPerClaim  # the field at fault, as every surface prints it

What a case is made of decides what reads it (:mod:`surfaces`):

* ``stack`` with ``set``/``unset`` (paths into the ``gpu-fabric:`` configuration, FieldPath syntax): a stack
  file. It goes through ``load_config``, ``gpu-fabric render``, ``check`` and ``check --preview``.
  ``fleet: <scale>`` replaces the stack's ``gpu-fabric:`` values with benchmarks/render_fleet.py's synthetic
  fleet at that scale before ``set``/``unset`` (a stack file too large to write out in a case).
* ``manifests`` (objects a team applies beside the stack): ``gpu-fabric lint --stack``, and the pack over
  the rendered stack plus those objects, in process and over the analyzer's gRPC protocol, as a team's
  program registering them meets it at ``pulumi preview``.
* ``resources`` (edits of the rendered resources' inputs, for rules over what a program registers that the
  stack itself never renders wrong: launch templates, security groups): the pack, in process and over gRPC.
  Each edit names a ``type`` and part of a ``name``, with ``set``/``unset`` of its inputs and, optionally,
  ``dependencies`` (input -> names of rendered resources its value comes from, as the engine reports them).

A case may name its ``surfaces`` instead (a rule decided by the pack alone does not claim ``render``). The
expected exit code is the registry's for the rule (a refusal: 1 for a policy's, 2 for unusable input; a warning
or an accepted input: 0), so the corpus cannot drift from docs/rules.md.
"""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional

import yaml

from gpu_fabric.findings.path import FieldPath, Key
from support.stack_configs import fleet_config, stack_document

CASES_DIR = Path(__file__).parent / "cases"

STACK_SURFACES = ("load_config", "render", "check", "check-preview")
MANIFEST_SURFACES = ("lint", "pack", "pack-grpc")
RESOURCE_SURFACES = ("pack", "pack-grpc")
SURFACES = ("load_config", "render", "check", "check-preview", "lint", "pack", "pack-grpc")

VERDICTS = ("accepts", "refuses", "warns")


@dataclass(frozen=True)
class Case:
    """One input and the verdict every surface it names must reach on it."""

    rule: str
    verdict: str
    """``accepts``, ``refuses`` or ``warns``."""
    name: str
    file: str
    stack: str
    set: Mapping[str, Any] = field(default_factory=dict)
    unset: tuple[str, ...] = ()
    manifests: tuple[Mapping[str, Any], ...] = ()
    resources: tuple[Mapping[str, Any], ...] = ()
    path: Optional[str] = None
    surfaces: tuple[str, ...] = ()
    engine: bool = False
    """Also run under the real engine (``pulumi preview --policy-pack policy``; ``pytest -m engine``)."""
    fleet: Optional[int] = None
    """The scale of benchmarks/render_fleet.py's fleet whose values replace the stack's ``gpu-fabric:`` ones."""

    @property
    def id(self) -> str:
        return f"{self.rule}:{self.verdict}:{self.name}"

    @property
    def kind(self) -> str:
        """``manifests``, ``resources`` or ``stack``: what the case changes."""
        if self.manifests:
            return "manifests"
        if self.resources:
            return "resources"
        return "stack"

    def stack_document(self) -> dict[str, Any]:
        """The stack file of the case: the named example with ``set`` and ``unset`` applied."""
        document = stack_document(self.stack)
        config = document["config"]
        values = {key.split(":", 1)[1]: value for key, value in config.items() if key.startswith("gpu-fabric:")}
        if self.fleet is not None:
            values = {key.split(":", 1)[1]: value for key, value in fleet_config(self.fleet).items()}
        for path, value in self.set.items():
            _set(values, path, copy.deepcopy(value))
        for path in self.unset:
            _unset(values, path)
        for key in [key for key in config if key.startswith("gpu-fabric:")]:
            del config[key]
        config.update({f"gpu-fabric:{key}": value for key, value in values.items()})
        return document


def _segments(path: str) -> list[Any]:
    return [segment.name if isinstance(segment, Key) else segment for segment in FieldPath.parse(path).segments]


def _walk(values: Any, segments: list[Any]) -> Any:
    for segment in segments:
        values = values[segment]
    return values


def _set(values: dict[str, Any], path: str, value: Any) -> None:
    segments = _segments(path)
    parent = values
    for segment, following in zip(segments, segments[1:]):
        if isinstance(parent, dict) and segment not in parent:
            parent[segment] = [] if isinstance(following, int) else {}
        parent = parent[segment]
    last = segments[-1]
    if isinstance(parent, list) and last == len(parent):
        parent.append(value)
    else:
        parent[last] = value


def _unset(values: dict[str, Any], path: str) -> None:
    segments = _segments(path)
    del _walk(values, segments[:-1])[segments[-1]]


@functools.lru_cache(maxsize=None)
def load_cases() -> tuple[Case, ...]:
    """Every case of every file in :data:`CASES_DIR`, in file order."""
    cases: list[Case] = []
    for file in sorted(CASES_DIR.glob("*.yaml")):
        for entry in yaml.safe_load(file.read_text()) or []:
            unknown = set(entry) - {"rule", *VERDICTS}
            if unknown:
                raise ValueError(f"{file.name}: rule {entry.get('rule')}: unknown keys {sorted(unknown)}")
            for verdict in VERDICTS:
                for raw in entry.get(verdict) or []:
                    cases.append(_case(file.name, entry["rule"], verdict, raw))
    return tuple(cases)


_CASE_KEYS = {"name", "stack", "set", "unset", "manifests", "resources", "path", "surfaces", "engine", "fleet"}


def _case(file: str, rule: str, verdict: str, raw: Mapping[str, Any]) -> Case:
    unknown = set(raw) - _CASE_KEYS
    if unknown:
        raise ValueError(f"{file}: rule {rule}: case {raw.get('name')!r}: unknown keys {sorted(unknown)}")
    case = Case(rule=rule, verdict=verdict, name=str(raw["name"]), file=file, stack=str(raw.get("stack", "seed-rdma")),
                set=dict(raw.get("set") or {}), unset=tuple(raw.get("unset") or ()),
                manifests=tuple(raw.get("manifests") or ()), resources=tuple(raw.get("resources") or ()),
                path=raw.get("path"), surfaces=tuple(raw.get("surfaces") or ()), engine=bool(raw.get("engine")),
                fleet=raw.get("fleet"))
    if not case.surfaces:
        defaults = {"stack": STACK_SURFACES, "manifests": MANIFEST_SURFACES, "resources": RESOURCE_SURFACES}
        case = Case(**{**case.__dict__, "surfaces": defaults[case.kind]})
    bad = set(case.surfaces) - set(SURFACES)
    if bad:
        raise ValueError(f"{file}: {case.id}: unknown surfaces {sorted(bad)} (known: {', '.join(SURFACES)})")
    return case
