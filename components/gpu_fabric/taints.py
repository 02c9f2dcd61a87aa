"""Taint effects in both spellings: Kubernetes (``NoSchedule``) and the EKS node-group API (``NO_SCHEDULE``).

Pools, node groups, device plugins and kubelet flags all take taints; this is the one place that
translates between the two spellings.
"""

from __future__ import annotations

_KUBERNETES = {
    "NoSchedule": "NoSchedule",
    "NoExecute": "NoExecute",
    "PreferNoSchedule": "PreferNoSchedule",
    # EKS node group API spelling (aws eks create-nodegroup --taints, pulumi-aws NodeGroup).
    "NO_SCHEDULE": "NoSchedule",
    "NO_EXECUTE": "NoExecute",
    "PREFER_NO_SCHEDULE": "PreferNoSchedule",
}
_EKS = {"NoSchedule": "NO_SCHEDULE", "NoExecute": "NO_EXECUTE", "PreferNoSchedule": "PREFER_NO_SCHEDULE"}


def normalize_effect(effect: str) -> str:
    """Return the Kubernetes spelling of a taint effect, accepting EKS's ``NO_SCHEDULE`` style."""
    try:
        return _KUBERNETES[effect]
    except KeyError:
        allowed = ", ".join(sorted(_KUBERNETES))
        raise ValueError(f"unknown taint effect {effect!r}; expected one of {allowed}") from None


def eks_effect(effect: str) -> str:
    """Return the EKS node-group spelling of a taint effect given in either spelling."""
    return _EKS[normalize_effect(effect)]
