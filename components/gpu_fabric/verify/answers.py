"""Reading an API server's answers through their expected shape (pure).

``verify`` does not trust the server: a field of the wrong type (``status`` a string, ``conditions``
strings, a taint without ``key``, ``labels`` a list) must become a refusal that names the object,
the field and the server -- never a ``KeyError`` or ``AttributeError`` deep in a check. Every answer
the checks read passes through one of the readers here first; what they return has exactly the
shape the pure checks (:mod:`gpu_fabric.verify.checks`) index without further tests.

The shapes are the API's own (k8s.io/api/core/v1/types.go: ``Node``, ``NodeSpec.Taints``,
``NodeStatus.Conditions``/``Allocatable``; k8s.io/api/apps/v1/types.go: ``DaemonSetStatus``;
k8s.io/apimachinery/pkg/apis/meta/v1/types.go: ``ObjectMeta``, ``ListMeta.Continue``,
``APIResourceList``): only the fields ``verify`` reads are checked; others pass through untouched.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Optional, Sequence

from gpu_fabric.verify.api import ClusterUnavailable


class MalformedAnswer(ClusterUnavailable):
    """The server answered JSON of a shape no Kubernetes API server sends; names object, field and server."""


def describe(value: Any) -> str:
    """What a JSON value is, for a refusal: ``a string ('Ready')``, ``a list``, ``null``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:40] + "..."
        return f"a string ({shown!r})"
    if isinstance(value, (int, float)):
        return f"a number ({value!r})"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def _field(path: Sequence[Any]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "the answer"


class Reader:
    """One answer (``subject`` of ``request`` from ``server``) read field by field with its expected type."""

    def __init__(self, server: str, request: str, subject: str):
        self.server = server
        self.request = request
        self.subject = subject

    def refuse(self, path: Sequence[Any], found: Any, expected: str) -> MalformedAnswer:
        """The refusal for ``path`` holding ``found`` where ``expected`` belongs."""
        return MalformedAnswer(f"{self.server} sent {self.subject} with {_field(path)} {describe(found)}, expected "
                               f"{expected} ({self.request}); not a Kubernetes API answer verify can judge")

    def mapping(self, value: Any, path: Sequence[Any], *, optional: bool = True) -> dict[str, Any]:
        """``value`` as a mapping (``null``/absent as empty when ``optional``)."""
        if value is None and optional:
            return {}
        if not isinstance(value, dict):
            raise self.refuse(path, value, "a mapping")
        return value

    def items(self, value: Any, path: Sequence[Any]) -> list[Any]:
        """``value`` as a list (``null``/absent as empty)."""
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.refuse(path, value, "a list")
        return value

    def string(self, value: Any, path: Sequence[Any], *, optional: bool = True, non_empty: bool = False) -> str:
        """``value`` as a string (``null``/absent as ``""`` when ``optional``)."""
        if value is None and optional and not non_empty:
            return ""
        if not isinstance(value, str) or (non_empty and not value):
            raise self.refuse(path, value, "a non-empty string" if non_empty else "a string")
        return value

    def string_map(self, value: Any, path: Sequence[Any]) -> dict[str, str]:
        """A ``map[string]string`` (labels, node selectors)."""
        found = self.mapping(value, path)
        for key, item in found.items():
            self.string(item, [*path, key], optional=False)
        return found

    def whole(self, value: Any, path: Sequence[Any], *, default: int = 0) -> int:
        """An ``int32`` count (``null``/absent as ``default``)."""
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.refuse(path, value, "a whole number")
        return value


# A Node's name is a DNS-1123 subdomain (k8s.io/kubernetes pkg/apis/core/validation: ValidateNodeName
# is NameIsDNSSubdomain; apimachinery's IsDNS1123Subdomain: at most 253 characters). Anything else --
# a newline, a terminal escape -- would be printed into the report as if it were a node.
_NODE_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def read_node(reader: Reader, node: Any, index: int) -> dict[str, Any]:
    """A listed Node whose ``metadata``, ``spec.taints`` and ``status`` the checks can index safely."""
    where: list[Any] = ["items", index]
    item = reader.mapping(node, where, optional=False)
    metadata = reader.mapping(item.get("metadata"), [*where, "metadata"], optional=False)
    name = reader.string(metadata.get("name"), [*where, "metadata", "name"], non_empty=True)
    if len(name) > 253 or not _NODE_NAME.fullmatch(name):
        raise reader.refuse([*where, "metadata", "name"], name, "a node name (a DNS-1123 subdomain)")
    named = Reader(reader.server, reader.request, f"node {name}")
    named.string_map(metadata.get("labels"), ["metadata", "labels"])
    spec = named.mapping(item.get("spec"), ["spec"])
    for position, taint in enumerate(named.items(spec.get("taints"), ["spec", "taints"])):
        at = ["spec", "taints", position]
        named.mapping(taint, at, optional=False)
        named.string(taint.get("key"), [*at, "key"], non_empty=True)
        named.string(taint.get("value"), [*at, "value"])
        named.string(taint.get("effect"), [*at, "effect"])
    status = named.mapping(item.get("status"), ["status"])
    for position, condition in enumerate(named.items(status.get("conditions"), ["status", "conditions"])):
        at = ["status", "conditions", position]
        named.mapping(condition, at, optional=False)
        named.string(condition.get("type"), [*at, "type"], optional=False)
        named.string(condition.get("status"), [*at, "status"])
    allocatable = named.mapping(status.get("allocatable"), ["status", "allocatable"])
    for resource, quantity in allocatable.items():
        # A quantity is a string on the wire (or a number, which the API's decoder accepts too);
        # one that does not parse is a finding of the allocatable check, not a refusal.
        if isinstance(quantity, bool) or not isinstance(quantity, (str, int, float)):
            raise named.refuse(["status", "allocatable", resource], quantity, "a quantity (string)")
    return item


def read_node_page(reader: Reader, page: Any) -> tuple[list[dict[str, Any]], str]:
    """A ``NodeList`` page: its nodes and its ``metadata.continue`` token (``""`` on the last page)."""
    document = reader.mapping(page, [], optional=False)
    items = document.get("items")
    if not isinstance(items, list):
        raise reader.refuse(["items"], items, "a list of nodes")
    metadata = reader.mapping(document.get("metadata"), ["metadata"])
    token = reader.string(metadata.get("continue"), ["metadata", "continue"])
    return [read_node(reader, node, index) for index, node in enumerate(items)], token


def read_list_page(reader: Reader, page: Any) -> tuple[list[Any], str]:
    """A page of any ``...List`` (``items``, ``metadata.continue``); the items are returned as sent, for a
    reader that judges each by its shape (a DRA claim's allocation of the wrong shape is a failed check)."""
    document = reader.mapping(page, [], optional=False)
    items = document.get("items")
    if not isinstance(items, list):
        raise reader.refuse(["items"], items, "a list")
    metadata = reader.mapping(document.get("metadata"), ["metadata"])
    return items, reader.string(metadata.get("continue"), ["metadata", "continue"])


def read_resource_list(reader: Reader, listing: Any) -> dict[str, dict[str, Any]]:
    """An ``APIResourceList``: kind -> resource (``name``, ``namespaced``), subresources left out."""
    document = reader.mapping(listing, [], optional=False)
    served: dict[str, dict[str, Any]] = {}
    for position, item in enumerate(reader.items(document.get("resources"), ["resources"])):
        at = ["resources", position]
        resource = reader.mapping(item, at, optional=False)
        name = reader.string(resource.get("name"), [*at, "name"], non_empty=True)
        kind = reader.string(resource.get("kind"), [*at, "kind"], non_empty=True)
        namespaced = resource.get("namespaced")
        if namespaced is not None and not isinstance(namespaced, bool):
            raise reader.refuse([*at, "namespaced"], namespaced, "true or false")
        if "/" not in name:
            served.setdefault(kind, {"name": name, "namespaced": bool(namespaced)})
    return served


def read_object(reader: Reader, found: Any, rollout: bool) -> dict[str, Any]:
    """A registered object; for DaemonSets (``rollout``) also its status counts and pod template."""
    document = reader.mapping(found, [], optional=False)
    reader.mapping(document.get("metadata"), ["metadata"])
    if rollout:
        status = reader.mapping(document.get("status"), ["status"])
        for key in ("desiredNumberScheduled", "numberReady"):
            reader.whole(status.get(key), ["status", key])
    if rollout:
        spec = reader.mapping(document.get("spec"), ["spec"])
        template = reader.mapping(spec.get("template"), ["spec", "template"])
        pod_spec = reader.mapping(template.get("spec"), ["spec", "template", "spec"])
        reader.string_map(pod_spec.get("nodeSelector"), ["spec", "template", "spec", "nodeSelector"])
        reader.mapping(pod_spec.get("affinity"), ["spec", "template", "spec", "affinity"])
        reader.items(pod_spec.get("tolerations"), ["spec", "template", "spec", "tolerations"])
    return document


def read_kubelet_config(document: Any) -> Optional[Mapping[str, Any]]:
    """The ``kubeletconfig`` section of a ``/configz`` answer, or ``None`` when it has none."""
    config = document.get("kubeletconfig") if isinstance(document, dict) else None
    return config if isinstance(config, dict) else None
