"""The API server's own validation of DRA claims and pods' claims: the floor of :data:`DRA_CLAIM_SHAPE` (pure).

``gpu-fabric lint`` and the policy pack must refuse every claim shape kube-apiserver refuses at create, or the
preview says yes and ``pulumi up`` fails (issue 40; tests/e2e/test_claim_shapes_differential.py compares both
verdicts on generated shapes). The rules here restate, field for field, k8s.io/kubernetes

* ``pkg/apis/resource/validation/validation.go``: ``validateDeviceClaim`` (at most 32 requests and 32
  constraints, request names unique), ``validateDeviceRequest`` (a DNS-label name; exactly one of ``exactly`` or
  a non-empty ``firstAvailable``), ``validateDeviceSubRequest`` (at most 8, names unique), ``validateExactDeviceRequest``
  and ``validateDeviceClass`` (``deviceClassName`` required, a DNS subdomain), ``validateSelector`` (``cel``
  required), ``validateDeviceAllocationMode`` (``ExactCount`` with a count above zero, ``All`` without one, no other
  spelling), ``validateDeviceConstraint`` and ``validateRequestNameRef`` (names of the claim's requests, or
  ``request/subrequest`` of a ``firstAvailable`` request; unique; ``matchAttribute`` or ``distinctAttribute``
  required) and ``validateFullyQualifiedName`` (``domain/name``: the domain a driver name, the name a C identifier
  of at most 32 characters);
* ``pkg/apis/resource/v1/defaults.go``: an absent or empty ``allocationMode`` is ``ExactCount`` and an absent or
  zero ``count`` under it is 1 (``count: 0`` is therefore accepted: it is omitted on the wire and defaulted);
* ``pkg/apis/core/validation/validation.go``: ``validatePodResourceClaim`` (a DNS-label name, unique, exactly one
  of ``resourceClaimName`` / ``resourceClaimTemplateName``, each a DNS subdomain) and ``validateResourceClaimNames``
  (each container's ``resources.claims[].name`` present, unique in the container, one of the pod's claims).

``resource.k8s.io/v1beta1`` keeps a request's ``exactly`` fields on the request itself (``ResourceNormalizationRules``
in validation.go maps ``requests[i].deviceClassName`` to ``requests[i].exactly.deviceClassName``): such a request
is read as one with ``exactly``. Values of the wrong type are the reader's findings already; the checks here
skip them, and values unknown at preview decide nothing.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Mapping, TypeGuard

from gpu_fabric.config.shapes import is_unknown
from gpu_fabric.findings import FieldPath

Report = Callable[[FieldPath, str], None]

DEVICE_REQUESTS_MAX = 32          # resource.DeviceRequestsMaxSize
DEVICE_CONSTRAINTS_MAX = 32       # resource.DeviceConstraintsMaxSize
FIRST_AVAILABLE_MAX = 8           # resource.FirstAvailableDeviceRequestMaxSize
DEVICE_SELECTORS_MAX = 32         # resource.DeviceSelectorsMaxSize
DEVICE_MAX_ID_LENGTH = 32         # resource.DeviceMaxIDLength
DRIVER_NAME_MAX_LENGTH = 63       # corevalidation.ValidateCSIDriverName
ALLOCATION_MODES = ("ExactCount", "All")

# k8s.io/apimachinery pkg/util/validation: IsDNS1123Label, IsDNS1123Subdomain, IsCIdentifier.
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_C_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# The fields of a v1beta1 request that v1 keeps under ``exactly`` (validation.go ResourceNormalizationRules).
BETA_EXACT_FIELDS = ("deviceClassName", "selectors", "allocationMode", "count", "adminAccess", "tolerations")


def is_dns_label(value: str) -> bool:
    return len(value) <= 63 and _DNS_LABEL.fullmatch(value) is not None


def is_dns_subdomain(value: str) -> bool:
    return len(value) <= 253 and _DNS_SUBDOMAIN.fullmatch(value) is not None


def _set(value: Any) -> bool:
    """Present and decided: not absent, not ``null``, not unknown at preview."""
    return value is not None and not is_unknown(value)


def _text(value: Any) -> TypeGuard[str]:
    return isinstance(value, str)


def _name(report: Report, value: Any, path: FieldPath, what: str = "request name") -> None:
    """validateRequestName / ValidateDNS1123Label: required, a lowercase RFC 1123 label."""
    if is_unknown(value) or (value is not None and not _text(value)):
        return
    if not value:
        report(path, f"a {what} is required (a lowercase RFC 1123 label)")
    elif not is_dns_label(value):
        report(path, f"{value!r} is not a lowercase RFC 1123 label (a-z, 0-9 and '-', at most 63 characters)")


def _items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def exact_ask(report: Report, node: Mapping[str, Any], path: FieldPath) -> None:
    """validateExactDeviceRequest / validateDeviceSubRequest's device fields, after v1's defaults."""
    device_class = node.get("deviceClassName")
    if not is_unknown(device_class) and (device_class is None or device_class == ""):
        report(path / "deviceClassName", "deviceClassName is required")
    elif _text(device_class) and not is_dns_subdomain(device_class):
        report(path / "deviceClassName", f"{device_class!r} is not a DeviceClass name (a lowercase RFC 1123 subdomain)")
    selectors = _items(node.get("selectors"))
    if len(selectors) > DEVICE_SELECTORS_MAX:
        report(path / "selectors", f"{len(selectors)} selectors: the API allows at most {DEVICE_SELECTORS_MAX}")
    for index, selector in enumerate(selectors):
        if isinstance(selector, Mapping) and not _set(selector.get("cel")) and not is_unknown(selector.get("cel")):
            report(path / "selectors" / index / "cel", "cel is required")
    mode, count = node.get("allocationMode"), node.get("count")
    if is_unknown(mode) or (mode is not None and not _text(mode)):
        return
    mode = mode or "ExactCount"  # v1 defaults.go: SetDefaults_ExactDeviceRequest
    counted = isinstance(count, int) and not isinstance(count, bool)
    if mode not in ALLOCATION_MODES:
        report(path / "allocationMode", f"allocationMode {mode!r} is not supported: ExactCount or All (case matters)")
    elif mode == "All" and counted and count != 0:
        report(path / "count", "count must not be set when allocationMode is 'All'")
    elif mode == "ExactCount" and counted and isinstance(count, int) and count < 0:
        report(path / "count", f"count must be greater than zero, not {count}")


def _request(report: Report, node: Mapping[str, Any], path: FieldPath, beta: bool) -> None:
    """validateDeviceRequest: exactly one of ``exactly`` or a non-empty ``firstAvailable``."""
    _name(report, node.get("name"), path / "name")
    first = node.get("firstAvailable")
    has_first = isinstance(first, list) and len(first) > 0
    if beta:
        has_exactly = any(_set(node.get(key)) for key in BETA_EXACT_FIELDS)
        exactly: Any = node
        exactly_path = path
    else:
        has_exactly = _set(node.get("exactly"))
        exactly, exactly_path = node.get("exactly"), path / "exactly"
    if is_unknown(first) or (not beta and is_unknown(node.get("exactly"))):
        return
    if has_first and has_exactly:
        report(path, "exactly one of `exactly` or `firstAvailable` is allowed, and both are set")
    elif not has_first and not has_exactly:
        report(path, "exactly one of `exactly` or `firstAvailable` is required, and neither is set")
    elif has_exactly:
        exact_ask(report, _mapping(exactly), exactly_path)
    else:
        alternatives = _items(first)
        if len(alternatives) > FIRST_AVAILABLE_MAX:
            report(path / "firstAvailable", f"{len(alternatives)} alternatives: the API allows at most {FIRST_AVAILABLE_MAX}")
        seen: set[str] = set()
        for index, sub in enumerate(alternatives):
            where = path / "firstAvailable" / index
            sub = _mapping(sub)
            sub_name = sub.get("name")
            _name(report, sub_name, where / "name", "subrequest name")
            if _text(sub_name) and sub_name:
                if sub_name in seen:
                    report(where / "name", f"subrequest {sub_name!r} is named twice")
                seen.add(sub_name)
            exact_ask(report, sub, where)


def fully_qualified_name(report: Report, value: Any, path: FieldPath) -> None:
    """validateFullyQualifiedName: ``domain/name``, the domain a driver name, the name a C identifier."""
    if not _text(value):
        return
    if "/" not in value:
        report(path, f"{value!r} must be a domain and a name separated by a slash (e.g. resource.kubernetes.io/pcieRoot)")
        return
    parts = value.split("/")
    if len(parts) != 2:
        return  # validateQualifiedName checks one or two parts only (its TODO): the server accepts more
    domain, name = parts
    if not domain:
        report(path, f"{value!r}: the domain must not be empty")
    elif len(domain) > DRIVER_NAME_MAX_LENGTH or not is_dns_subdomain(domain):
        report(path, f"{value!r}: the domain {domain!r} must be a lowercase RFC 1123 subdomain of at most "
                     f"{DRIVER_NAME_MAX_LENGTH} characters")
    if not name:
        report(path, f"{value!r}: the name must not be empty")
    elif len(name) > DEVICE_MAX_ID_LENGTH or not _C_IDENTIFIER.fullmatch(name):
        report(path, f"{value!r}: the name {name!r} must be a C identifier of at most {DEVICE_MAX_ID_LENGTH} characters")


def _request_names(requests: list[Any]) -> dict[str, set[str] | None] | None:
    """gatherRequestNames: request -> its subrequests' names (``None`` for a request without firstAvailable);
    ``None`` when a name, a request or its alternatives are unknown at preview (no reference is then decided)."""
    names: dict[str, set[str] | None] = {}
    for node in requests:
        if is_unknown(node):
            return None
        node = _mapping(node)
        name, first = node.get("name"), node.get("firstAvailable")
        if is_unknown(name) or is_unknown(first) or any(
                is_unknown(sub) or is_unknown(_mapping(sub).get("name")) for sub in _items(first)):
            return None
        if not _text(name):
            continue
        names[name] = ({sub_name for sub in first if isinstance(sub_name := _mapping(sub).get("name"), str)} if isinstance(first, list) and first else None)
    return names


def _names_request(names: dict[str, set[str] | None], reference: str) -> bool:
    """requestNames.Has: ``request``, or ``request/subrequest`` of a request with firstAvailable."""
    segments = reference.split("/")
    if len(segments) > 2 or segments[0] not in names:
        return False
    return len(segments) == 1 or segments[1] in (names[segments[0]] or ())


def device_claim(report: Report, devices: Mapping[str, Any], path: FieldPath, beta: bool = False) -> None:
    """validateDeviceClaim over ``devices`` (a ResourceClaimSpec's ``devices``) at ``path``."""
    requests = devices.get("requests")
    if isinstance(requests, list):
        if len(requests) > DEVICE_REQUESTS_MAX:
            report(path / "requests", f"{len(requests)} requests: the API allows at most {DEVICE_REQUESTS_MAX}")
        seen: set[str] = set()
        for index, node in enumerate(requests):
            if not isinstance(node, Mapping):
                continue
            name = node.get("name")
            if _text(name) and name:
                if name in seen:
                    report(path / "requests" / index / "name", f"request {name!r} is named twice")
                seen.add(name)
            _request(report, node, path / "requests" / index, beta)
    constraints = devices.get("constraints")
    if not isinstance(constraints, list) or is_unknown(requests):
        return
    if len(constraints) > DEVICE_CONSTRAINTS_MAX:
        report(path / "constraints", f"{len(constraints)} constraints: the API allows at most {DEVICE_CONSTRAINTS_MAX}")
    names = _request_names(_items(requests))
    for index, node in enumerate(constraints):
        if not isinstance(node, Mapping):
            continue
        where = path / "constraints" / index
        refs = node.get("requests")
        seen_refs: set[str] = set()
        for position, reference in enumerate(_items(refs)):
            if not _text(reference):
                continue
            at = where / "requests" / position
            if reference in seen_refs:
                report(at, f"{reference!r} is named twice")
            seen_refs.add(reference)
            if names is not None and not _names_request(names, reference):
                report(at, f"{reference!r} is not a request of the claim (nor request/subrequest of a firstAvailable "
                           f"request); requests: {', '.join(sorted(names)) or 'none'}")
        match, distinct = node.get("matchAttribute"), node.get("distinctAttribute")
        if is_unknown(match) or is_unknown(distinct):
            continue
        if match is not None and match != "":
            fully_qualified_name(report, match, where / "matchAttribute")
        elif distinct is not None and distinct != "":
            fully_qualified_name(report, distinct, where / "distinctAttribute")
        else:
            report(where / "matchAttribute", "matchAttribute (or distinctAttribute) is required")


def pod_claims(report: Report, spec: Mapping[str, Any], path: FieldPath) -> None:
    """validatePodResourceClaim(s) and validateResourceClaimNames over a pod spec at ``path``."""
    claims = spec.get("resourceClaims")
    pod_names: set[str] = set()
    names_known = not is_unknown(claims)
    for index, node in enumerate(_items(claims)):
        if not isinstance(node, Mapping):
            names_known = False
            continue
        where = path / "resourceClaims" / index
        name = node.get("name")
        if is_unknown(name) or (name is not None and not _text(name)):
            names_known = False
        else:
            _name(report, name, where / "name", "pod claim name")
            if name and name in pod_names:
                report(where / "name", f"pod claim {name!r} is named twice")
            pod_names.add(name or "")
        sources = [key for key in ("resourceClaimName", "resourceClaimTemplateName") if _set(node.get(key))]
        if any(is_unknown(node.get(key)) for key in ("resourceClaimName", "resourceClaimTemplateName")):
            continue
        if len(sources) == 2:
            report(where, "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be set")
        elif not sources:
            report(where, "one of `resourceClaimName` or `resourceClaimTemplateName` is required")
        for key in sources:
            value = node.get(key)
            if _text(value) and not is_dns_subdomain(value):
                report(where / key, f"{value!r} is not a lowercase RFC 1123 subdomain")
    for key in ("initContainers", "containers"):
        for index, container in enumerate(_items(spec.get(key))):
            resources = _mapping(_mapping(container).get("resources"))
            used: set[str] = set()
            for position, claim in enumerate(_items(resources.get("claims"))):
                at = path / key / index / "resources" / "claims" / position
                name = _mapping(claim).get("name")
                if is_unknown(name) or (name is not None and not _text(name)):
                    continue
                if not name:
                    report(at / "name", "a container's claim names one of the pod's resourceClaims: name is required")
                    continue
                if name in used:
                    report(at / "name", f"claim {name!r} is named twice in this container")
                used.add(name)
                if names_known and name not in pod_names:
                    report(at / "name", f"{name!r} is not one of the pod's spec.resourceClaims "
                                        f"({', '.join(sorted(n for n in pod_names if n)) or 'none'})")
