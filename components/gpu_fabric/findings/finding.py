"""A finding: one rule's verdict on one field of one object (or of the configuration).

Every surface -- the components before they register anything, ``load_config``, the policy pack,
``gpu-fabric lint`` and ``check`` -- receives findings from the same rules and decides from their
fields alone: refuse or warn (:attr:`Finding.severity`), exit 1 or 2 (:attr:`Finding.exit_code`),
which policy reports it (:attr:`Finding.policy`), and whether it waits because it rests on a value
unknown at preview (:attr:`Finding.rests_on_unknown`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional

from gpu_fabric.findings.path import FieldPath, PathLike, as_path
from gpu_fabric.findings.rule import Rule
from gpu_fabric.findings.severity import Severity
from gpu_fabric.findings.subject import ObjectRef


@dataclass(frozen=True)
class Finding:
    """One verdict of :attr:`rule` on the field at :attr:`path` of :attr:`subject`."""

    rule: Rule
    path: FieldPath
    """The field at fault, relative to :attr:`subject` (or to the configuration when there is no subject)."""
    message: str
    severity: Severity = Severity.ERROR
    subject: Optional[ObjectRef] = None
    """The object the finding is about (``None``: the configuration, or the field path says it all)."""
    rests_on_unknown: bool = False
    """The verdict reads a value that is unknown at preview: it is not decided yet, so it waits for the
    value rather than refuse (or pass) on a guess."""
    pool: Optional[str] = None
    """The pool the verdict holds for, when the rule judges an object per pool (a workload landing on it,
    a device plugin serving it)."""

    @classmethod
    def of(cls, rule: Rule, path: PathLike, message: str, *, severity: Severity = Severity.ERROR,
           subject: Optional[ObjectRef] = None, rests_on_unknown: bool = False,
           pool: Optional[str] = None) -> "Finding":
        """A finding of ``rule`` at ``path`` (a :class:`~gpu_fabric.findings.path.FieldPath`, its text or segments)."""
        return cls(rule, as_path(path), message, severity, subject, rests_on_unknown, pool)

    @property
    def rule_id(self) -> str:
        return self.rule.id

    @property
    def rule_tag(self) -> str:
        """``[rule-id]``: how every surface (``lint``, ``render``, ``check``, the pack at ``pulumi preview``)
        ends a finding's line, so the id leads to the rule's row in docs/rules.md."""
        return f"[{self.rule.id}]"

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR

    @property
    def policy(self) -> Optional[str]:
        """The policy that reports this finding at preview (the rule's, or its advisory one for a warning)."""
        if self.severity is Severity.WARNING and self.rule.warnings_policy is not None:
            return self.rule.warnings_policy
        return self.rule.policy

    @property
    def is_policy_refusal(self) -> bool:
        """An error a mandatory policy of the pack refuses on well-formed input (see :class:`Rule`)."""
        return self.is_error and self.rule.is_policy_refusal

    @property
    def exit_code(self) -> int:
        """The exit status of a command refused by this finding alone: 1 for a policy's refusal, else 2."""
        return self.rule.refuses_as.exit_code

    @property
    def decided(self) -> bool:
        """Not :attr:`rests_on_unknown`: the verdict holds whatever the engine learns later."""
        return not self.rests_on_unknown

    def at(self, prefix: PathLike) -> "Finding":
        """This finding with its path placed under ``prefix`` (``spec.x`` under ``pools[0]``)."""
        return replace(self, path=as_path(prefix) / self.path)

    def moved(self, path: PathLike) -> "Finding":
        """This finding at another path."""
        return replace(self, path=as_path(path))

    def about(self, subject: Optional[ObjectRef]) -> "Finding":
        """This finding about another object."""
        return replace(self, subject=subject)

    def waiting(self, rests_on_unknown: bool = True) -> "Finding":
        """This finding marked as resting (or not) on a value unknown at preview."""
        return replace(self, rests_on_unknown=rests_on_unknown)

    def __str__(self) -> str:
        """``Kind namespace/name: path: message``, leaving out what the finding does not have."""
        return ": ".join(part for part in (str(self.subject or ""), str(self.path), self.message) if part)
