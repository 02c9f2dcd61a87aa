"""The rules an EFA (or RDMA) domain obeys: pools that exchange fabric traffic can reach each other.

EC2's "EFA limitations" (:data:`EC2_EFA_LIMITS`): "EFA traffic can't cross Availability Zones or VPCs", and
"EFA traffic between P4d/P4de/DL1 instances and other instance types is currently not supported". A
domain cannot mix EFA and RDMA pools, and a fabric member group must select a pool of its fabric. The
domains and their findings are derived by :mod:`gpu_fabric.plan.efa_domains.derivation`; ``load_config`` refuses
them as unusable input (EC2 would not carry the traffic), and ``efa-domain-placement`` reports them at
preview (a member group on a pool of the wrong fabric is ``kv-cache-transport-fabric``'s to report).
"""

from __future__ import annotations

from gpu_fabric.findings import Refusal, Rule

EC2_EFA_LIMITS = "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa.html#efa-limits"
"""EC2 User Guide, "Elastic Fabric Adapter" -> "EFA limitations" (read 2026-11-30).

It states "EFA traffic can't cross Availability Zones or VPCs." and "EFA traffic between P4d/P4de/DL1
instances and other instance types is currently not supported." It lists no subnet restriction:
the older text "EFA OS-bypass traffic is limited to a single subnet" is gone since EC2 added
cross-subnet EFA in 2024. So pools of one domain may use different subnets of the same AZ and VPC,
and gpu-fabric refuses only different AZs, different VPCs and the P4d/P4de/DL1 mix.
"""

POLICY = "efa-domain-placement"

DOMAIN_AVAILABILITY_ZONE = Rule(
    "efa-domain-availability-zone", "pools that exchange EFA traffic are in one Availability Zone", EC2_EFA_LIMITS,
    policy=POLICY, refusal=Refusal.INPUT)
DOMAIN_VPC = Rule(
    "efa-domain-vpc", "pools that exchange EFA traffic are in one VPC", EC2_EFA_LIMITS, policy=POLICY,
    refusal=Refusal.INPUT)
DOMAIN_ISOLATED_FAMILY = Rule(
    "efa-domain-isolated-family", "P4d/P4de/DL1 pools exchange EFA traffic only with their own kind", EC2_EFA_LIMITS,
    policy=POLICY, refusal=Refusal.INPUT)
DOMAIN_FABRIC_MIX = Rule(
    "fabric-domain-mix", "one domain does not mix EFA and RDMA pools",
    "https://github.com/kvcache-ai/Mooncake/tree/main/mooncake-transfer-engine/src/transport",
    policy="kv-cache-transport-fabric", refusal=Refusal.INPUT)
DOMAIN_MEMBER_SELECTOR = Rule(
    "fabric-member-selector", "a fabric member group's nodeSelector selects a pool of its fabric",
    "https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodeselector", policy=POLICY,
    refusal=Refusal.INPUT)

DOMAIN_SECURITY_GROUP = Rule(
    "efa-domain-security-group",
    "the node groups of pools that exchange EFA traffic share one security group of the stack on their EFA interfaces",
    "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-start.html#efa-start-security",
    policy="efa-domain-security-group")

RULES: tuple[Rule, ...] = (DOMAIN_AVAILABILITY_ZONE, DOMAIN_VPC, DOMAIN_ISOLATED_FAMILY, DOMAIN_FABRIC_MIX,
                          DOMAIN_MEMBER_SELECTOR, DOMAIN_SECURITY_GROUP)
