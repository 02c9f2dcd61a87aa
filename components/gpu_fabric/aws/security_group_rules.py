"""The EFA security group lets all traffic in from and out to itself, and nothing in from anywhere.

EC2 User Guide, "Get started with EFA", step 1: "An EFA requires a security group that allows all
inbound and outbound traffic to and from the security group itself." EFA's SRD traffic needs the
self-referencing rule in *both* directions; an ``egress 0.0.0.0/0`` rule does not cover it (the symptom
is "Unresponsive receiver"). A group guarding EFA interfaces that admits the whole internet is refused
too.

:func:`self_rule_findings` judges one group from its rules (:class:`GroupRule`), however they were
written: inline blocks, ``aws:vpc`` ingress/egress rule resources or ``aws:ec2`` security group rules.
The ``efa-security-group-self-rules`` policy finds the groups and reads their rules from a stack.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from gpu_fabric.findings import Finding, Rule

EFA_SECURITY_GROUP_SELF_RULES = Rule(
    "efa-security-group-self-rules",
    "the EFA security group allows all protocols in from and out to itself, and no ingress from 0.0.0.0/0 or ::/0",
    "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-start.html#efa-start-security",
    policy="efa-security-group-self-rules")

OPEN_CIDRS = ("0.0.0.0/0", "::/0")


@dataclass(frozen=True)
class GroupRule:
    """One rule of a security group, as far as EFA cares."""

    direction: str
    """``ingress`` or ``egress``."""
    all_protocols: bool
    """It allows every protocol (``-1``), or its protocol is unknown at preview (it may be ``-1``)."""
    to_itself: bool
    """Its peer is the group itself."""
    cidrs: tuple[str, ...] = ()
    """The CIDR blocks it opens to."""


def self_rule_findings(group: str, rules: Sequence[GroupRule]) -> list[Finding]:
    """Every problem of the EFA security group named ``group`` with ``rules``."""
    problems = []
    for direction, phrase in (("ingress", "inbound from"), ("egress", "outbound to")):
        if not any(rule.direction == direction and rule.all_protocols and rule.to_itself for rule in rules):
            problems.append(
                f"security group {group} guards EFA interfaces but has no rule allowing all protocols "
                f"{phrase} itself (EFA SRD traffic needs both directions; 0.0.0.0/0 egress does not cover it)")
    for rule in rules:
        open_cidrs = [cidr for cidr in rule.cidrs if cidr in OPEN_CIDRS]
        if rule.direction == "ingress" and open_cidrs:
            problems.append(f"security group {group} guards EFA interfaces and allows ingress from {', '.join(open_cidrs)}")
    return [Finding.of(EFA_SECURITY_GROUP_SELF_RULES, "", problem) for problem in problems]
