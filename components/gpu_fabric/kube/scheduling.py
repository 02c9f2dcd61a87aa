"""Can a pod run on a node with these labels and taints? The kube-scheduler's rules, from data alone (pure).

``nodeSelector``, required node affinity (``matchExpressions`` with every operator), and taints versus
tolerations, plus the tolerations the DaemonSet controller adds to every DaemonSet pod. Each check returns
why a pod cannot land ("" when it can), so :mod:`gpu_fabric.kube.coverage` and the workload rules can say it.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from gpu_fabric.config.taints import normalize_effect


# Effects that keep a pod off a node; PreferNoSchedule is only a scoring hint.
_BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")

# The DaemonSet controller adds these to every DaemonSet pod (pkg/controller/daemon/util), so
# node-condition taints never keep a DaemonSet off a node even though the template omits them.
_DAEMONSET_DEFAULT_TOLERATIONS: tuple[Mapping[str, str], ...] = (
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
)
_HOST_NETWORK_DEFAULT_TOLERATION = {
    "key": "node.kubernetes.io/network-unavailable",
    "operator": "Exists",
    "effect": "NoSchedule",
}

def node_selector_mismatch(node_selector: Mapping[str, str], labels: Mapping[str, str]) -> str:
    """Why ``nodeSelector`` does not select a node with ``labels`` ("" when it does)."""
    for key in sorted(node_selector):
        wanted = node_selector[key]
        if key not in labels:
            return f"nodeSelector requires {key}={wanted} but the nodes have no label {key}"
        if labels[key] != wanted:
            return f"nodeSelector requires {key}={wanted} but the nodes carry {key}={labels[key]}"
    return ""


def node_selector_matches(node_selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    """True when every ``key: value`` of a ``nodeSelector`` holds on a node carrying ``labels``.

    The kube-scheduler's rule (exact key and value); used for DaemonSets here and for the nodes a
    Mooncake member group selects (:mod:`gpu_fabric.plan.efa_domains`).
    """
    return not node_selector_mismatch(node_selector, labels)


def _as_int(text: str) -> int | None:
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def _expression_mismatch(expression: Mapping[str, Any], labels: Mapping[str, str]) -> str:
    """Return why one ``matchExpressions`` entry fails on ``labels`` ('' when it matches)."""
    if not isinstance(expression, Mapping):
        return f"a matchExpressions entry must be a mapping, not {type(expression).__name__}"
    key = expression.get("key", "")
    operator = expression.get("operator", "")
    raw_values = expression.get("values") or []
    if not isinstance(key, str) or not isinstance(operator, str) or not isinstance(raw_values, list) \
            or not all(isinstance(value, str) for value in raw_values):
        # The API server refuses this shape (key and operator are strings, values a list of strings).
        return f"malformed matchExpressions entry {expression!r:.80} (key and operator strings, values a list of strings)"
    values = list(raw_values)
    present = key in labels
    value = labels.get(key)
    if operator == "In":
        if present and value in values:
            return ""
        if present:
            return f"{key} In {values} but the nodes carry {key}={value}"
        return f"{key} In {values} but the nodes have no label {key}"
    if operator == "NotIn":
        # An absent label satisfies NotIn, as in the scheduler.
        return f"{key} NotIn {values} but the nodes carry {key}={value}" if present and value in values else ""
    if operator == "Exists":
        return "" if present else f"{key} Exists but the nodes have no label {key}"
    if operator == "DoesNotExist":
        return f"{key} DoesNotExist but the nodes carry {key}={value}" if present else ""
    if operator in ("Gt", "Lt"):
        bound = _as_int(values[0]) if len(values) == 1 else None
        if bound is None:
            return f"{key} {operator} needs exactly one integer value, got {values}"
        actual = _as_int(value) if present and value is not None else None
        if actual is None:
            return f"{key} {operator} {bound} but the nodes have no integer label {key}"
        matches = actual > bound if operator == "Gt" else actual < bound
        return "" if matches else f"{key} {operator} {bound} but the nodes carry {key}={value}"
    return f"unknown node selector operator {operator!r} on {key}"


def _term_mismatch(term: Mapping[str, Any], labels: Mapping[str, str]) -> str:
    if not isinstance(term, Mapping):
        return f"a node selector term must be a mapping, not {type(term).__name__}"
    expressions = term.get("matchExpressions") or []
    if not isinstance(expressions, list):
        return f"matchExpressions must be a list, not {type(expressions).__name__}"
    if term.get("matchFields"):
        # matchFields can only name metadata.name, i.e. pin individual nodes; a pool's node
        # names are unknown before the nodes exist.
        return "matchFields pins named nodes, which a pool's future nodes cannot be known to match"
    if not expressions:
        return "an empty node selector term matches no node"
    for expression in expressions:
        reason = _expression_mismatch(expression, labels)
        if reason:
            return reason
    return ""


def node_affinity_mismatch(pod_spec: Mapping[str, Any], labels: Mapping[str, str]) -> str:
    """Why the pod's required node affinity refuses a node with ``labels`` ("" when no term refuses it)."""
    node_affinity = (pod_spec.get("affinity") or {}).get("nodeAffinity") or {}
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        return ""
    reasons = [_term_mismatch(term, labels) for term in required.get("nodeSelectorTerms") or []]
    if not reasons:
        return "required node affinity has no nodeSelectorTerms and matches no node"
    if any(reason == "" for reason in reasons):
        return ""
    return "required node affinity: " + " | ".join(reasons)


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """Kubernetes' ``Toleration.ToleratesTaint``, with EKS effect spelling accepted on both sides."""
    toleration_effect = toleration.get("effect") or ""
    # A policy's value unknown at preview is not a string: an effect we cannot read restricts nothing.
    if isinstance(toleration_effect, str) and toleration_effect and isinstance(taint.get("effect"), str) \
            and normalize_effect(toleration_effect) != normalize_effect(taint["effect"]):
        return False
    toleration_key = toleration.get("key") or ""
    # An empty key (only valid with Exists) matches every key.
    if toleration_key and toleration_key != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    return (toleration.get("value") or "") == (taint.get("value") or "")


def _describe_taint(taint: Mapping[str, Any]) -> str:
    value = taint.get("value")
    key = f"{taint.get('key')}={value}" if value else str(taint.get("key"))
    return f"{key}:{normalize_effect(taint.get('effect', ''))}"


def untolerated_taint(pod_spec: Mapping[str, Any], taints: Iterable[Mapping[str, Any]], *, daemonset: bool = True) -> str:
    """The first blocking taint the pod does not tolerate ("" when none); ``daemonset`` adds the tolerations the
    DaemonSet controller gives every DaemonSet pod."""
    tolerations = [*(pod_spec.get("tolerations") or []), *(_DAEMONSET_DEFAULT_TOLERATIONS if daemonset else ())]
    if daemonset and pod_spec.get("hostNetwork"):
        tolerations.append(_HOST_NETWORK_DEFAULT_TOLERATION)
    for taint in taints:
        if normalize_effect(taint.get("effect", "")) not in _BLOCKING_EFFECTS:
            continue
        if not any(tolerates(toleration, taint) for toleration in tolerations):
            return f"taint {_describe_taint(taint)} is not tolerated"
    return ""
