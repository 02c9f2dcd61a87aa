"""Every rule's accepting and refusing cases, run through every surface each case claims: they must agree.

The corpus is ``tests/conformance/cases/`` (:mod:`corpus`); the surfaces are :mod:`surfaces`. A refusal must be
reported by every surface the case names, under the case's rule id, naming its field path, with the exit code
the registry gives the rule (the pack: a mandatory violation, which fails ``pulumi preview``); a warning is
reported and exits 0; an accepted input is passed whole (exit 0, the rule silent). The completeness test fails
when a registered rule lacks an accepting case or a refusing (or warning) one.
"""

from __future__ import annotations

import pytest

from corpus import Case, load_cases
from surfaces import RUNNERS, Seen, _served, via_pack_grpc

from gpu_fabric.validation.rule_registry import REGISTRY, registered

CASES = load_cases()
PACK_SURFACES = ("pack", "pack-grpc")


@pytest.fixture(scope="module")
def pack_stub():
    with _served() as stub:
        yield stub


def _expected_exit(case: Case, surface: str) -> int:
    if case.verdict != "refuses":
        return 0
    return 1 if surface in PACK_SURFACES else registered(case.rule).exit_code


def judge(case: Case, seen: Seen) -> None:
    """Assert that ``seen`` is the case's verdict."""
    found = seen.of_rule(case.rule)
    where = f"{case.file}: {case.id}\n{seen.describe()}"
    assert seen.exit_code == _expected_exit(case, seen.surface), where
    if case.verdict == "accepts":
        assert not found, where
        return
    assert found, where
    if case.verdict == "warns":
        assert not any(f.mandatory for f in found) or seen.surface not in PACK_SURFACES, where
    if case.path:
        assert any(case.path in f.text for f in found), f"path {case.path} not named\n{where}"


@pytest.mark.parametrize("case, surface", [pytest.param(case, surface, id=f"{case.id}@{surface}")
                                           for case in CASES for surface in case.surfaces])
def test_every_surface_reaches_the_cases_verdict(case: Case, surface: str, tmp_path, pack_stub) -> None:
    if surface == "pack-grpc":
        seen = via_pack_grpc(case, tmp_path, pack_stub)
    else:
        seen = RUNNERS[surface](case, tmp_path)
    judge(case, seen)


def test_every_registered_rule_has_an_accepting_and_a_refusing_case() -> None:
    ids = {entry.id for entry in REGISTRY}
    covered: dict[str, set[str]] = {}
    for case in CASES:
        assert case.rule in ids, f"{case.file}: {case.id}: no such registered rule"
        covered.setdefault(case.rule, set()).add("accepts" if case.verdict == "accepts" else "refuses")
    missing = sorted(f"{rule} (no {kind} case)" for rule in ids for kind in ("accepts", "refuses")
                     if kind not in covered.get(rule, set()))
    assert not missing, "rules without both cases:\n  " + "\n  ".join(missing)


def registers_aws_resources(case: Case) -> bool:
    """The case's stack provisions a pool on AWS or reaches its cluster through EKS, so a full preview of it needs the
    AWS provider plugin."""
    config = case.stack_document()["config"]
    pools = config.get("gpu-fabric:pools") or []
    target = config.get("gpu-fabric:kubernetes") or {}
    return any(isinstance(pool, dict) and "aws" in pool for pool in pools) or (
        isinstance(target, dict) and "eksCluster" in target)  # the provider's kubeconfig is read from EKS


def runs_under_the_engine_here(case: Case) -> bool:
    """A real ``pulumi preview`` of the case can run on this machine: the AWS provider plugin cannot be built or
    downloaded here (docs/real-engine.md), so a case either registers nothing of AWS (a Kubernetes-only stack, with
    or without a team's objects) or is refused by ``load_config`` before the program registers anything."""
    if case.kind == "resources":
        return False  # edits of rendered resources: no program registers them so, the pack alone reads them
    return not registers_aws_resources(case) or (case.verdict == "refuses" and "load_config" in case.surfaces)


ENGINE_UNREACHABLE = {
    "efa-domain-security-group": "the EFA node groups' security groups are AWS resources: the AWS provider plugin "
                                 "cannot run here",
    "efa-launch-template-interfaces": "launch templates are AWS resources: the AWS provider plugin cannot run here",
    "efa-security-group-self-rules": "security group rules are AWS resources: the AWS provider plugin cannot run here",
    "launch-template-ebs-encrypted": "launch templates are AWS resources: the AWS provider plugin cannot run here",
    "launch-template-imdsv2": "launch templates are AWS resources: the AWS provider plugin cannot run here",
}
"""Policies no engine case reaches on this machine, and why (each is still run by ``check --preview``'s gRPC pack)."""


def test_every_policy_has_a_case_under_the_real_engine() -> None:
    from gpu_fabric.policies import ALL_POLICIES

    marked = [case for case in CASES if case.engine]
    unrunnable = [case.id for case in marked if not runs_under_the_engine_here(case)]
    assert not unrunnable, f"cases marked engine: true that no real preview can run here: {unrunnable}"
    engine = {registered(case.rule).policy for case in marked if case.verdict != "accepts"}
    missing = sorted(policy.name for policy in ALL_POLICIES
                     if policy.name not in engine and policy.name not in ENGINE_UNREACHABLE)
    assert not missing, f"policies without a refusing case marked engine: true: {missing}"
    assert not engine & set(ENGINE_UNREACHABLE), "a policy listed as unreachable has an engine case: drop it from the list"
