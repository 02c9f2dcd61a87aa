"""Fabric domains derived: which pools exchange EFA (or RDMA) traffic, over which legs, and why one cannot.

The KV cache of a disaggregated deployment moves between *different node groups*: the pools its
roles run on (direct leg, prefill -> decode) and the pools whose nodes its Mooncake member groups
select (cache leg). Pools joined by such legs form one domain. Every pool of an EFA domain must be
able to reach every other over EFA, which needs (EC2 rules, cited at :data:`EC2_EFA_LIMITS`):

* one Availability Zone and one VPC for all of them;
* no mix of P4d/P4de/DL1 with other instance types;
* one security group, shared by every EFA interface of every node group of the domain, that
  allows all traffic to and from itself (a group that admits only its own node group keeps the
  cache members out).

This module is pure: :func:`derive_domains` reads pool descriptions and the admission analysis
(:func:`gpu_fabric.gpustack.admission_pipeline.analyze`), so the components and ``load_config`` (from the
configuration, :mod:`gpu_fabric.plan.efa_domains.from_config`), the policy pack (from resource inputs) and
the CLI summaries all decide the same domains. Member-group selection reuses the scheduler's
``nodeSelector`` rule from :mod:`gpu_fabric.kube.coverage`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Literal, Mapping, Optional, Sequence

from gpu_fabric.findings import Finding
from gpu_fabric.gpustack.admission_pipeline import TransferReport
from gpu_fabric.gpustack.transfer_legs import FABRICS, MemberGrant, RoleGrant
from gpu_fabric.kube.scheduling import node_selector_matches
from gpu_fabric.plan.efa_domains.rules import (
    DOMAIN_AVAILABILITY_ZONE,
    DOMAIN_FABRIC_MIX,
    DOMAIN_ISOLATED_FAMILY,
    DOMAIN_MEMBER_SELECTOR,
    DOMAIN_SECURITY_GROUP,
    DOMAIN_VPC,
    EC2_EFA_LIMITS,
)

INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"

EC2_EFA_SECURITY_GROUP = "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-start.html#efa-start-security"
"""EC2 User Guide, "Get started with EFA", step 1: "An EFA requires a security group that allows all
inbound and outbound traffic to and from the security group itself." The same page recommends, but
does not require, a cluster placement group ("launches the instances into a low-latency group in a
single Availability Zone")."""

# Families whose EFA traffic EC2 does not carry to or from any other instance type (EC2_EFA_LIMITS).
ISOLATED_EFA_FAMILIES = ("p4d", "p4de", "dl1")

LegKind = Literal["direct", "cache"]


@dataclass(frozen=True)
class DomainPool:
    """One pool as far as domains care: its fabric, node labels, and where its node group lives."""

    name: str
    fabric: str
    """``efa``, ``rdma`` or ``none``."""
    path: str
    """Where the pool is declared: ``pools[1]`` in a configuration, a resource name in a policy."""
    labels: Mapping[str, str] = field(default_factory=dict)
    """Every label its nodes carry (what member-group ``nodeSelector``s are matched against)."""
    instance_types: tuple[str, ...] = ()
    availability_zone: Optional[str] = None
    vpc_id: Optional[str] = None
    subnet_id: Optional[str] = None
    efa_per_node: Optional[int] = None
    node_group: Optional[str] = None
    """Name of the node group -- or Karpenter NodePool -- that provides the nodes (``None`` when they come
    from elsewhere). A Karpenter pool and a node group can share one EFA domain and its security group."""
    provided_by: str = "node group"
    """What ``node_group`` names: ``node group`` or ``NodePool`` (Karpenter)."""
    field_prefix: str = ".aws"
    """Appended to ``path`` before ``.availabilityZone`` etc. when a finding names a field."""

    def field_path(self, name: str) -> str:
        """Config path of one node-group field of this pool, e.g. ``pools[1].aws.availabilityZone``."""
        return f"{self.path}{self.field_prefix}.{name}"


@dataclass(frozen=True)
class LegEnd:
    """One end of a transfer leg: who sends or receives, on which pool."""

    pool: str
    who: str
    """``ModelDeployment team-a/llama-pd role prefill`` or ``KVCacheBackend mooncake-efa members[0]``."""
    path: str
    """Config path (or object path) of the role or member group."""


@dataclass(frozen=True)
class Leg:
    """Fabric traffic between two ends: a direct prefill->decode leg or a KV-cache leg."""

    kind: LegKind
    protocol: str
    """``efa`` or ``rdma``."""
    source: LegEnd
    target: LegEnd

    def describe(self) -> str:
        """``cache leg (EFA): <source> (<path>) <-> <target> (<path>)``."""
        return (f"{self.kind} leg ({self.protocol.upper()}): {self.source.who} ({self.source.path}) <-> "
                f"{self.target.who} ({self.target.path})")


@dataclass(frozen=True)
class DomainPlan:
    """Pools that exchange fabric traffic, and the legs that join them.

    The plan of a domain; the Pulumi component that registers its shared security group is
    :class:`gpu_fabric.resources.efa_domain.EfaDomain`.
    """

    name: str
    """The first pool name in sort order: stable as long as that pool stays in the domain."""
    fabric: str
    """``efa``, ``rdma``, or ``mixed`` (refused)."""
    pools: tuple[DomainPool, ...]
    legs: tuple[Leg, ...]

    @property
    def pool_names(self) -> tuple[str, ...]:
        return tuple(pool.name for pool in self.pools)

    @property
    def node_group_pools(self) -> tuple[DomainPool, ...]:
        """The pools whose nodes come from a node group of this stack."""
        return tuple(pool for pool in self.pools if pool.node_group is not None)

    @property
    def availability_zone(self) -> Optional[str]:
        """The one AZ of the domain's node groups, when they agree."""
        zones = {pool.availability_zone for pool in self.pools if pool.availability_zone}
        return zones.pop() if len(zones) == 1 else None


@dataclass(frozen=True)
class DomainAnalysis:
    """The domains of a stack and every reason one of them cannot work."""

    domains: tuple[DomainPlan, ...] = ()
    findings: tuple[Finding, ...] = ()
    """Findings of :mod:`gpu_fabric.plan.efa_domains.rules` at the paths ``derive_domains`` was told to name."""

    def domain_of(self, pool: str) -> Optional[DomainPlan]:
        """The domain a pool belongs to, if any."""
        return next((d for d in self.domains if pool in d.pool_names), None)


# -- legs --------------------------------------------------------------------------------------------


def _object_role_path(grant: RoleGrant) -> str:
    return f"ModelDeployment {grant.namespace}/{grant.deployment} spec.roles[{grant.role_index}]"


def _object_member_path(grant: MemberGrant) -> str:
    return f"KVCacheBackend {grant.backend} spec.connection.managed.members[{grant.group_index}]"


def selects_pool(node_selector: Mapping[str, str], pool: DomainPool) -> bool:
    """Does a member group's ``nodeSelector`` pick (some of) the pool's nodes?

    A pool of several instance types has no single ``node.kubernetes.io/instance-type`` label; a
    selector naming one of its types picks the nodes of that type.
    """
    labels = dict(pool.labels)
    wanted_type = node_selector.get(INSTANCE_TYPE_LABEL)
    if wanted_type is not None and wanted_type in pool.instance_types:
        labels[INSTANCE_TYPE_LABEL] = wanted_type
    return node_selector_matches(node_selector, labels)


def _role_end(grant: RoleGrant, role_path: Callable[[RoleGrant], str]) -> LegEnd:
    return LegEnd(grant.instance_type, f"ModelDeployment {grant.namespace}/{grant.deployment} role {grant.role}",
                  role_path(grant))


def _member_ends(grant: MemberGrant, pools: Sequence[DomainPool],
                 member_path: Callable[[MemberGrant], str]) -> list[LegEnd]:
    who = f"KVCacheBackend {grant.backend} members[{grant.group_index}]"
    return [LegEnd(pool.name, who, member_path(grant)) for pool in pools
            if pool.fabric in FABRICS and selects_pool(grant.node_selector, pool)]


def transfer_legs(
    pools: Sequence[DomainPool],
    report: TransferReport,
    *,
    role_path: Callable[[RoleGrant], str] = _object_role_path,
    member_path: Callable[[MemberGrant], str] = _object_member_path,
) -> list[Leg]:
    """Every fabric leg of the analysed objects, in a deterministic order.

    * direct: between the roles of one deployment whose direct transfer uses a fabric;
    * cache: between each role whose cache leg uses a fabric and each fabric pool its backend's
      member groups select, and between the member groups' pools of one backend (members move
      cache segments among themselves).
    """
    legs: list[Leg] = []
    by_deployment: dict[tuple[str, str], list[RoleGrant]] = {}
    for grant in report.role_grants:
        by_deployment.setdefault((grant.namespace, grant.deployment), []).append(grant)
    member_ends: dict[str, list[tuple[MemberGrant, LegEnd]]] = {}
    for member in report.member_grants:
        if member.uses_fabric:
            for end in _member_ends(member, pools, member_path):
                member_ends.setdefault(member.backend, []).append((member, end))

    for key in sorted(by_deployment):
        grants = sorted(by_deployment[key], key=lambda g: g.role_index)
        direct = [g for g in grants if g.direct_protocol in FABRICS]
        for grant in direct[1:]:
            legs.append(Leg("direct", str(direct[0].direct_protocol),
                            _role_end(direct[0], role_path), _role_end(grant, role_path)))
        for grant in grants:
            if grant.cache_protocol not in FABRICS or grant.cache_backend is None:
                continue
            for member, end in member_ends.get(grant.cache_backend, []):
                legs.append(Leg("cache", member.protocol, _role_end(grant, role_path), end))
    for backend in sorted(member_ends):
        ends = member_ends[backend]
        first_member, first = ends[0]
        for member, end in ends[1:]:
            legs.append(Leg("cache", first_member.protocol, first, end))
    return legs


# -- domains -----------------------------------------------------------------------------------------


def _group(names: Iterable[str], legs: Sequence[Leg]) -> list[list[str]]:
    parent = {name: name for name in names}

    def root(name: str) -> str:
        while parent[name] != name:
            parent[name] = parent[parent[name]]
            name = parent[name]
        return name

    for leg in legs:
        a, b = root(leg.source.pool), root(leg.target.pool)
        if a != b:
            parent[max(a, b)] = min(a, b)
    groups: dict[str, list[str]] = {}
    for name in sorted(parent):
        groups.setdefault(root(name), []).append(name)
    return [groups[key] for key in sorted(groups)]


def _family(instance_type: str) -> str:
    return instance_type.split(".", 1)[0]


def _isolated(pool: DomainPool) -> set[str]:
    return {t for t in pool.instance_types if _family(t) in ISOLATED_EFA_FAMILIES}


def _leg_findings(leg: Leg, pools: Mapping[str, DomainPool]) -> Iterable[tuple[Finding, str]]:
    """Every reason the two ends of ``leg`` cannot exchange its traffic, each with the path of the other end."""
    a, b = pools[leg.source.pool], pools[leg.target.pool]
    if a.name == b.name:
        return
    joined = f"they exchange {leg.protocol.upper()} traffic over the {leg.describe()}"
    if a.fabric in FABRICS and b.fabric in FABRICS and a.fabric != b.fabric:
        yield Finding.of(DOMAIN_FABRIC_MIX, b.path, (
            f"pool {b.name} has fabric {b.fabric} but pool {a.name} ({a.path}) has fabric {a.fabric}; {joined}; "
            "one domain cannot mix EFA and RDMA pools")), a.path
    if leg.protocol != "efa":
        return
    for attribute, label, why, rule in (
        ("availability_zone", "availabilityZone", "EFA traffic can't cross Availability Zones", DOMAIN_AVAILABILITY_ZONE),
        ("vpc_id", "vpcId", "EFA traffic can't cross VPCs", DOMAIN_VPC),
    ):
        mine, theirs = getattr(b, attribute), getattr(a, attribute)
        if mine and theirs and mine != theirs:
            yield Finding.of(rule, b.field_path(label), (
                f"pool {b.name} is in {mine} but pool {a.name} ({a.field_path(label)}) is in {theirs}; {joined}; "
                f"{why} ({EC2_EFA_LIMITS})")), a.field_path(label)
    for one, other in ((a, b), (b, a)):
        isolated, rest = _isolated(one), set(other.instance_types) - _isolated(other)
        if isolated and rest:
            yield Finding.of(DOMAIN_ISOLATED_FAMILY, other.field_path("instanceTypes"), (
                f"pool {other.name} ({', '.join(sorted(rest))}) and pool {one.name} ({', '.join(sorted(isolated))}, "
                f"{one.field_path('instanceTypes')}) are joined; {joined}; EFA traffic between P4d/P4de/DL1 instances "
                f"and other instance types is not supported ({EC2_EFA_LIMITS})")), one.field_path("instanceTypes")
            break


def _unmatched_members(
    pools: Sequence[DomainPool], report: TransferReport, role_path: Callable[[RoleGrant], str],
    member_path: Callable[[MemberGrant], str],
) -> Iterable[Finding]:
    users: dict[str, list[RoleGrant]] = {}
    for grant in report.role_grants:
        if grant.cache_backend is not None and grant.cache_protocol in FABRICS:
            users.setdefault(grant.cache_backend, []).append(grant)
    for member in report.member_grants:
        if not member.uses_fabric:
            continue
        same_fabric = [p for p in pools if p.fabric == member.protocol and selects_pool(member.node_selector, p)]
        if same_fabric:
            continue
        selected = [f"{p.name} (fabric {p.fabric})" for p in pools if selects_pool(member.node_selector, p)]
        using = users.get(member.backend, [])
        readers = "; used by " + ", ".join(f"{g.deployment} role {g.role} ({role_path(g)})" for g in using) if using else ""
        selector = ", ".join(f"{k}={v}" for k, v in sorted(member.node_selector.items())) or "{}"
        yield Finding.of(DOMAIN_MEMBER_SELECTOR, f"{member_path(member)}.nodeSelector", (
            f"KVCacheBackend {member.backend} members[{member.group_index}] use {member.protocol.upper()} transport "
            f"but nodeSelector {selector} selects no {member.protocol} pool "
            f"(selects: {', '.join(selected) or 'no pool of this stack'}){readers}"))


def derive_domains(
    pools: Sequence[DomainPool],
    report: TransferReport,
    *,
    role_path: Callable[[RoleGrant], str] = _object_role_path,
    member_path: Callable[[MemberGrant], str] = _object_member_path,
) -> DomainAnalysis:
    """The fabric domains of a stack and every reason one cannot carry its traffic.

    ``pools`` describe every pool (by name, the InstanceType a role names); ``report`` is the
    transfer analysis of the stack's GPUStack objects. ``role_path`` / ``member_path`` say how a
    finding names a role or member group (config paths, or object paths in a policy). A pool that
    no fabric leg reaches is in no domain and keeps a node-group-local security group.
    """
    by_name = {pool.name: pool for pool in pools}
    legs = [leg for leg in transfer_legs(pools, report, role_path=role_path, member_path=member_path)
            if leg.source.pool in by_name and leg.target.pool in by_name]
    domains = []
    for names in _group([n for n in sorted(by_name) if any(n in (l.source.pool, l.target.pool) for l in legs)], legs):
        members = tuple(by_name[n] for n in names)
        fabrics = {p.fabric for p in members if p.fabric in FABRICS}
        domain_legs = tuple(leg for leg in legs if leg.source.pool in names)
        domains.append(DomainPlan(names[0], fabrics.pop() if len(fabrics) == 1 else "mixed", members, domain_legs))

    findings: list[Finding] = []
    seen: set[tuple[str, str]] = set()
    for leg in legs:
        # A pair of pools is reported once, whichever end a leg starts from.
        for finding, other_end in _leg_findings(leg, by_name):
            key = (str(finding.path), other_end)
            if key not in seen and (other_end, str(finding.path)) not in seen:
                seen.add(key)
                findings.append(finding)
    findings.extend(_unmatched_members(pools, report, role_path, member_path))
    return DomainAnalysis(tuple(domains), tuple(findings))


def shared_security_group_findings(domain: DomainPlan, groups: Mapping[str, Sequence[str]], shared: Sequence[str]) -> list[Finding]:
    """An EFA domain whose pools' node groups share no security group on their EFA interfaces.

    ``groups`` maps each pool of the domain whose groups are known to the names of the stack's groups on
    its EFA interfaces; ``shared`` are the groups on all of them. A group that admits only its own node group
    drops the other pools' EFA traffic (EC2 User Guide, "Get started with EFA", step 1).
    """
    if domain.fabric != "efa" or len(groups) < 2 or shared:
        return []
    listing = "; ".join(f"pool {pool}: {', '.join(found) or 'no group of this stack'}" for pool, found in sorted(groups.items()))
    legs = "; ".join(leg.describe() for leg in domain.legs if leg.source.pool != leg.target.pool)
    return [Finding.of(DOMAIN_SECURITY_GROUP, "", (
        f"EFA domain {domain.name}: the node groups of pools {', '.join(sorted(groups))} exchange EFA traffic "
        f"({legs}) but no security group of this stack is on the EFA interfaces of all of them ({listing}); "
        "a group that admits only its own node group drops the other pools' EFA traffic unless a group outside "
        "the stack happens to allow it"))]
