"""Findings: the one shape of every verdict gpu-fabric gives, and the rules that give them.

The bottom layer of the package: it imports nothing else of it, and every other layer reports
through it. A :class:`Finding` names its :class:`Rule`, the field at fault (:class:`FieldPath`), the
object it is about (:class:`ObjectRef`), how grave it is (:class:`Severity`), and whether it rests
on a value unknown at preview. The rule says which policy of the pack reports it and what a
refusal means to the command line (exit 1 or 2).
"""

from gpu_fabric.findings.finding import Finding
from gpu_fabric.findings.path import FieldPath, Key, PathLike, Segment, as_path
from gpu_fabric.findings.rule import (
    EXIT_POLICY_REFUSAL,
    EXIT_UNUSABLE_INPUT,
    Enforcement,
    Refusal,
    Rule,
)
from gpu_fabric.findings.severity import Severity
from gpu_fabric.findings.subject import ObjectRef

__all__ = [
    "EXIT_POLICY_REFUSAL",
    "EXIT_UNUSABLE_INPUT",
    "Enforcement",
    "FieldPath",
    "Finding",
    "Key",
    "ObjectRef",
    "PathLike",
    "Refusal",
    "Rule",
    "Segment",
    "Severity",
    "as_path",
]
