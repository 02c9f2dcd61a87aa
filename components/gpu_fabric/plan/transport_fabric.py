"""KV-cache transports match the fabric of the nodes they run on.

Each Mooncake member group of a KVCacheBackend runs on the nodes its ``nodeSelector`` picks; its
effective protocol and device request come from the operator's admission analysis
(:class:`~gpu_fabric.gpustack.transfer_legs.MemberGrant`). A ModelDeployment role's transfer leg is granted
the device key of its fabric (:class:`~gpu_fabric.gpustack.transfer_legs.RoleGrant`) on the nodes of the pool
it names. Mooncake moves KV segments with ``efa`` only over EFA devices and with ``rdma`` only over RDMA
verbs devices (kvcache-ai/Mooncake: ``mooncake-transfer-engine/src/transport/``), which EFA nodes do not
expose; a device request beyond the node's interfaces is never granted.

* :func:`member_findings`: one member group on one pool it selects (``kv-cache-transport-fabric``);
* :func:`role_leg_findings`: one role's transfer leg on its pool. ``load_config`` refuses it as unusable
  input (the operator would grant a device the pool's nodes do not have); the same policy reports it.
* :func:`shared_node_findings`: one role's Pod beside the Mooncake member groups on the same nodes
  (``role-interfaces-beside-members``): a member DaemonSet's Pod holds its interfaces on every node it selects,
  so a role's Pod fits only in what is left of the node.
"""

from __future__ import annotations

from typing import Sequence

from gpu_fabric.config.constants import EFA_RESOURCE
from gpu_fabric.findings import Finding, ObjectRef, Refusal, Rule
from gpu_fabric.gpustack.transfer_legs import MemberGrant, RoleGrant
from gpu_fabric.kube.pool_view import PoolView

POLICY = "kv-cache-transport-fabric"

KV_MEMBER_TRANSPORT_FABRIC = Rule(
    "kv-member-transport-fabric",
    "a Mooncake member group uses EFA only on EFA pools, RDMA never on EFA pools, and no more interfaces than a node has",
    "https://github.com/kvcache-ai/Mooncake/tree/main/mooncake-transfer-engine/src/transport", policy=POLICY)
ROLE_TRANSFER_LEG_FABRIC = Rule(
    "role-transfer-leg-fabric", "a ModelDeployment role's transfer leg uses its pool's fabric",
    "gpustack/gpustack-operator: pkg/worker/controllers/worker/model_deployment_fabric.go", policy=POLICY,
    refusal=Refusal.INPUT)


ROLE_INTERFACES_BESIDE_MEMBERS = Rule(
    "role-interfaces-beside-members",
    "a ModelDeployment role's Pod and the Mooncake member groups on the same nodes together ask for no more EFA "
    "interfaces than a node of the pool has",
    "https://kubernetes.io/docs/concepts/configuration/manage-resources-containers/", policy=POLICY)


def member_findings(grant: MemberGrant, pool: PoolView) -> list[Finding]:
    """Problems of one fabric member group on one pool its ``nodeSelector`` picks (at the member group's path)."""
    problems = []
    if grant.protocol == "efa" and pool.fabric != "efa":
        problems.append(f"uses EFA transport but selects pool {pool.name}, which has fabric {pool.fabric} (EFA only on EFA pools)")
    if grant.protocol == "rdma" and pool.fabric == "efa":
        problems.append(f"uses RDMA transport but selects EFA pool {pool.name} (EFA nodes have no RDMA verbs devices for "
                        "Mooncake RDMA)")
    count = grant.fabric_interface_count
    if grant.protocol in ("efa", "rdma") and pool.interfaces_per_node is not None and count > pool.interfaces_per_node:
        problems.append(f"fabricInterfaceCount {count} exceeds the {pool.interfaces_per_node} interfaces per node of pool "
                        f"{pool.name}")
    subject = ObjectRef("KVCacheBackend", grant.backend)
    path = f"spec.connection.managed.members[{grant.group_index}]"
    return [Finding.of(KV_MEMBER_TRANSPORT_FABRIC, path, problem, subject=subject, pool=pool.name,
                       rests_on_unknown=pool.fabric_unknown) for problem in problems]


def shared_node_findings(grant: RoleGrant, pool: PoolView, members: Sequence[MemberGrant]) -> list[Finding]:
    """A role whose Pod asks for more of a fabric key than a node of its pool has left once the member groups selecting
    that pool's nodes took theirs (at the role's interface request). Members of other pools or keys do not count."""
    if pool.interfaces_per_node is None or pool.uses_dra:
        return []  # on a dra pool nothing advertises the key at all: dra-pool-plugin-keys refuses the request
    found = []
    # EFA only: AWS's plugin advertises exactly the node's EFA interfaces, one per device. On RDMA pools the seed
    # walkthrough itself runs members and roles asking for every NIC on the same nodes, and the sources do not say
    # how the Device Manager counts a member's grant against a role's, so that is not judged here.
    for key, wanted in sorted(item for item in grant.resources.items() if item[0] == EFA_RESOURCE):
        beside = [(member, member.resources.get(key, 0)) for member in members
                  if member.resources.get(key) and pool.matches_selector(member.node_selector)]
        taken = sum(count for _, count in beside)
        if not beside or wanted + taken <= pool.interfaces_per_node:
            continue
        listed = ", ".join(f"KVCacheBackend {member.backend} members[{member.group_index}] {count}"
                           for member, count in sorted(beside, key=lambda item: -item[1]))
        found.append(Finding.of(ROLE_INTERFACES_BESIDE_MEMBERS, f"spec.roles[{grant.role_index}].resources.interface", (
            f"role {grant.role}'s Pod asks for {wanted} {key} on pool {pool.name}, whose nodes have "
            f"{pool.interfaces_per_node}, but the Mooncake member groups on the same nodes hold {taken} ({listed}): the "
            f"Pod never fits; ask for at most {max(pool.interfaces_per_node - taken, 0)}, or lower the members' "
            "fabricInterfaceCount"),
            subject=ObjectRef("ModelDeployment", grant.deployment, grant.namespace), pool=pool.name,
            rests_on_unknown=pool.fabric_unknown))
    return found


def role_leg_findings(grant: RoleGrant, pool: PoolView) -> list[Finding]:
    """A role whose transfer leg's fabric is not its pool's (at the role's interface request)."""
    if pool.fabric == grant.fabric:
        return []
    return [Finding.of(ROLE_TRANSFER_LEG_FABRIC, f"spec.roles[{grant.role_index}].resources.interface",
                       f"the transfer leg uses {grant.fabric.upper()} but pool {pool.name} has fabric {pool.fabric}",
                       subject=ObjectRef("ModelDeployment", grant.deployment, grant.namespace), pool=pool.name,
                       rests_on_unknown=pool.fabric_unknown)]
