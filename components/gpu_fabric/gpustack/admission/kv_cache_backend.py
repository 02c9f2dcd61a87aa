"""The GPUStack operator's KVCacheBackend admission rules (``pkg/worker/webhooks/worker/kv_cache_backend.go``).

At the commit :data:`gpu_fabric.gpustack.operator_pin.SOURCE_FILES` names, with the operator's messages:
the subset that the pinned schema's fields carry and that is answered from the object alone. Not mirrored:
the fallback-image Setting, image-reference parsing, leader/member extraArgs rule tables, the
disk-tier/offload pairing (leader.offload is not in the pinned schema) and update-time rules.
"""

from __future__ import annotations

from typing import Any, Mapping

from gpu_fabric.config.shapes import list_at, mapping_at
from gpu_fabric.config.syntax import DNS_SUBDOMAIN, is_dns1035_label, is_qualified_name, is_valid_label_value
from gpu_fabric.gpustack.admission.common import int_or, object_findings, quantity_or_none
from gpu_fabric.findings import Finding, ObjectRef, Severity
from gpu_fabric.gpustack.rules import KV_CACHE_BACKEND_ADMISSION

MAX_LEADER_REPLICAS = 5  # MaxLeaderReplicas (the schema's leader.replicas maximum carries the same number)


def _refuse(path: str, message: str) -> Finding:
    """A refusal of the webhook at ``path`` of the object (named by the caller)."""
    return Finding.of(KV_CACHE_BACKEND_ADMISSION, path, message)



def _host_port_problem(address: str) -> str | None:
    """``checkHostPort``: why an address is not one the operator could dial, or ``None``."""
    if address != address.strip():
        return "must not begin or end with a space: the address is stored and dialed exactly as written here"
    host, sep, port = address.rpartition(":")
    if not sep:
        return f"address {address}: missing port in address"
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not host:
        return "no host"
    if not port.isdigit():
        return f'port "{port}" is not a number'
    if not 1 <= int(port) <= 65535:
        return f"port {int(port)} is outside 1-65535"
    if any(ch in host for ch in " /?#@"):
        return "cannot be used as an address: the host part is not a host name"
    return None


def backend_findings(backend: Mapping[str, Any]) -> list[Finding]:
    """``validateKVCacheBackendSpec`` on create: names, image, pull secrets, connection branch and its contents."""
    meta = mapping_at(backend, "metadata")
    name = str(meta.get("name") or "")
    spec = mapping_at(backend, "spec")
    connection = mapping_at(spec, "connection")
    managed, external = connection.get("managed"), connection.get("external")
    found: list[Finding] = []
    if isinstance(managed, Mapping):
        # validateKVCacheBackendName: the leader Service (<name>-leader) and member DaemonSets (<name>-member-<i>).
        members = list_at(managed, "members")
        for rendered in [f"{name}-leader", *(f"{name}-member-{i}" for i in range(len(members)))]:
            why = is_dns1035_label(rendered)
            if why:
                found.append(_refuse("metadata.name", f'this backend renders an object named "{rendered}", which is not a '
                                                f"valid name for one: {'; '.join(why)}"))
                break
        # validateKVCacheBackendImage: blank is refused (unset falls back to the cluster Setting).
        image = spec.get("image")
        if isinstance(image, str) and image and not image.strip():
            found.append(_refuse("spec.image", 'must not be blank: an image is either named here or left out entirely so the '
                                        '"kv-cache-backend-image" setting decides'))
    secrets = list_at(spec, "imagePullSecrets")
    for i, ref in enumerate(secrets):
        secret = str((ref or {}).get("name") or "") if isinstance(ref, Mapping) else ""
        if not secret:
            found.append(_refuse(f"spec.imagePullSecrets[{i}].name", "name of the referenced secret must be specified"))
        elif len(secret) > 253 or not DNS_SUBDOMAIN.fullmatch(secret):
            found.append(_refuse(f"spec.imagePullSecrets[{i}].name", "a lowercase RFC 1123 subdomain must consist of lower "
                                                               "case alphanumeric characters, '-' or '.', and must "
                                                               "start and end with an alphanumeric character"))
    # validateKVCacheBackendConnection: exactly one branch.
    if managed is None and external is None:
        found.append(_refuse("spec.connection", 'one of "managed" or "external" must be set: a backend with neither describes nothing'))
    elif managed is not None and external is not None:
        found.append(_refuse("spec.connection", 'only one of "managed" or "external" may be set: a backend with both describes two'))
    elif isinstance(external, Mapping):
        found += _backend_external(external)
    elif isinstance(managed, Mapping):
        found += _backend_managed(managed)
    return object_findings("KVCacheBackend", backend, found, None)


def _backend_external(external: Mapping[str, Any]) -> list[Finding]:
    """validateKVCacheBackendExternal: dialable addresses, and both a Client and an Admin entry."""
    endpoints = list_at(external, "endpoints")
    found = []
    for i, endpoint in enumerate(endpoints):
        address = str((endpoint or {}).get("address", "")) if isinstance(endpoint, Mapping) else ""
        problem = _host_port_problem(address)
        if problem:
            found.append(_refuse(f"spec.connection.external.endpoints[{i}].address",
                          f"must be host:port, and this operator dials it as given: {problem}"))
    names = {str((endpoint or {}).get("name")) for endpoint in endpoints if isinstance(endpoint, Mapping)}
    for role in ("Client", "Admin"):
        if role not in names:
            found.append(_refuse("spec.connection.external.endpoints",
                          f'an entry named "{role}" is required: this operator reads the "Admin" address and publishes '
                          'the "Client" one, so an external backend naming only one leaves either the scrape or every '
                          "engine with no address"))
    return found


def _backend_managed(managed: Mapping[str, Any]) -> list[Finding]:
    """validateKVCacheBackendManaged / validateKVCacheBackendMember / validateKVCacheBackendScaleIn (create)."""
    found = []
    leader = mapping_at(managed, "leader")
    replicas = leader.get("replicas")
    if replicas is not None:
        replicas = int_or(replicas, 0)
        if replicas > MAX_LEADER_REPLICAS:
            found.append(_refuse("spec.connection.managed.leader.replicas",
                          f"at most {MAX_LEADER_REPLICAS} is supported: only one leader serves at a time and the rest "
                          "are standbys, so more of them adds spare processes rather than capacity"))
        if replicas > 1 and leader.get("highAvailability") is None:
            found.append(_refuse("spec.connection.managed.leader.replicas",
                          "more than one leader requires leader.highAvailability, which elects one of them through a "
                          "Kubernetes Lease; without it every replica would serve"))
    members = list_at(managed, "members")
    for i, member in enumerate(members):
        found += _backend_member(member if isinstance(member, Mapping) else {}, f"spec.connection.managed.members[{i}]")
        capacity = quantity_or_none((member or {}).get("capacityPerMember")) if isinstance(member, Mapping) else None
        if capacity is not None and capacity <= 0:
            found.append(_refuse(f"spec.connection.managed.members[{i}].capacityPerMember",
                          "must be greater than 0: a member contributing nothing is a Pod with no reason to run"))
        elif capacity is not None and capacity > 2**63 - 1:
            found.append(_refuse(f"spec.connection.managed.members[{i}].capacityPerMember",
                          "must not exceed 9223372036854775807 (2^63-1) bytes: the renderer reads this as a signed "
                          "64-bit count, and a larger one does not survive the conversion"))
    scale_in = mapping_at(managed, "scaleIn")
    grace = scale_in.get("gracePeriodSeconds")
    if grace is not None and int_or(grace, 0) < 0:
        found.append(_refuse("spec.connection.managed.scaleIn.gracePeriodSeconds", "must not be negative"))
    return found


def _backend_member(member: Mapping[str, Any], path: str) -> list[Finding]:
    """validateKVCacheBackendMember: localBufferSize not negative, a node selector made of labels, no blank image."""
    found = []
    buffer = quantity_or_none(member.get("localBufferSize")) if member.get("localBufferSize") is not None else None
    if buffer is not None and buffer < 0:
        found.append(_refuse(f"{path}.localBufferSize", "must not be negative: it is added to the member Pod's memory request"))
    selector = mapping_at(member, "nodeSelector")
    for key in sorted(selector, key=str):
        problems = is_qualified_name(str(key))
        if problems:
            found.append(_refuse(f"{path}.nodeSelector[{key}]", "is not a label key: " + "; ".join(problems)))
        problems = is_valid_label_value(str(selector[key]))
        if problems:
            found.append(_refuse(f"{path}.nodeSelector[{key}]", "is not a label value: " + "; ".join(problems)))
    image = member.get("image")
    if isinstance(image, str) and image and not image.strip():
        found.append(_refuse(f"{path}.image", "must not be blank: an image is either named here or left out so the "
                                       "backend's decides"))
    return found
