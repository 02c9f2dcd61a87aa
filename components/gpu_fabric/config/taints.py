"""Taints: the one model (:class:`Taint`) and their effects in both spellings, Kubernetes
(``NoSchedule``) and the EKS node-group API (``NO_SCHEDULE``).

Pools, node groups, device plugins and kubelet flags all take taints; this is the one place that
declares what a taint is and translates between the two spellings.
"""

from __future__ import annotations

from typing import Literal, Optional

from gpu_fabric.config import syntax
from gpu_fabric.config.base import SpecModel

EKS_TAINT_KEY_MAX = 63
"""EKS ``Taint.key`` is 1-63 characters (Amazon EKS API Reference, data type ``Taint``:
https://docs.aws.amazon.com/eks/latest/APIReference/API_Taint.html), shorter than a
Kubernetes qualified name may be; only node-group taints are held to it (:func:`eks_taint`), as to
the EKS effect spelling."""

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


class Taint(SpecModel):
    """A node taint; ``effect`` accepts Kubernetes (``NoSchedule``) or EKS (``NO_SCHEDULE``) spelling."""

    key: syntax.TaintKey
    """Taint key (a Kubernetes qualified name)."""
    value: Optional[syntax.TaintValue] = None
    """Taint value; omit for a key-only taint."""
    effect: Literal["NoSchedule", "NoExecute", "PreferNoSchedule", "NO_SCHEDULE", "NO_EXECUTE", "PREFER_NO_SCHEDULE"]
    """``NoSchedule``, ``NoExecute`` or ``PreferNoSchedule`` (EKS spelling ``NO_SCHEDULE`` etc. also accepted)."""

    def as_dict(self) -> dict[str, str]:
        """The taint in Kubernetes spelling, as a plain dict (no ``value`` key when it has none)."""
        return {"key": self.key, **({"value": self.value} if self.value is not None else {}),
                "effect": normalize_effect(self.effect)}


def check_eks_taint_key(key: str) -> None:
    """Refuse a taint key longer than an EKS node group accepts (a node group carries every taint of
    its pool, so a pool's own taints are held to this too)."""
    if len(key) > EKS_TAINT_KEY_MAX:
        raise ValueError(f"taint key {key!r} is {len(key)} characters; an EKS node group accepts at most "
                         f"{EKS_TAINT_KEY_MAX}")


def eks_taint(taint: Taint) -> Taint:
    """Refuse a taint the EKS node-group API would refuse: a key longer than it accepts, or an effect
    in Kubernetes spelling (node-group taints are written as EKS takes them, ``NO_SCHEDULE``)."""
    check_eks_taint_key(taint.key)
    if taint.effect not in _EKS.values():
        raise ValueError(f"taint effect {taint.effect!r}: an EKS node group takes {', '.join(sorted(_EKS.values()))} "
                         f"(here {eks_effect(taint.effect)})")
    return taint
