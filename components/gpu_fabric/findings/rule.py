"""A rule: what it decides, where that decision comes from, and which policy of the pack enforces it.

The decisions a caller draws from a finding are properties of its rule, never read from its text:

* which policy of the pack reports it (:attr:`Rule.policy`), and whether that policy refuses
  (:attr:`Rule.enforcement`);
* what a refusal means to the command line (:attr:`Rule.refusal`): input that the API it targets
  refuses anyway (the operator's admission, the API server's schema, a configuration field) is
  unusable input, exit 2; a well-formed input that a mandatory policy of the pack refuses is a policy
  violation, exit 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, StrEnum
from typing import Optional

EXIT_POLICY_REFUSAL = 1
"""Exit status of a command whose input a mandatory policy refuses (the CLI's ``EXIT_FINDINGS``)."""
EXIT_UNUSABLE_INPUT = 2
"""Exit status of a command given input it cannot use (the CLI's ``EXIT_USAGE``)."""


class Enforcement(StrEnum):
    """Pulumi CrossGuard's enforcement levels, as far as a rule is concerned."""

    MANDATORY = "mandatory"
    """A violation fails the preview."""
    ADVISORY = "advisory"
    """A violation is reported; the preview goes on."""


class Refusal(Enum):
    """What an error of a rule means to whoever refuses it before anything is registered."""

    POLICY = "policy"
    """A well-formed input that a mandatory policy of the pack refuses."""
    INPUT = "input"
    """Input the target refuses whatever the pack says: a configuration field, a schema, an admission rule."""

    @property
    def exit_code(self) -> int:
        """1 for a policy's refusal, 2 for unusable input."""
        return EXIT_POLICY_REFUSAL if self is Refusal.POLICY else EXIT_UNUSABLE_INPUT


@dataclass(frozen=True)
class Rule:
    """One rule gpu-fabric decides: its id, one line of what it refuses, its source, its policy."""

    id: str
    """Stable and unique (``fabric-pool-topology``, ``efa-hugepages``); printed with workload findings."""
    summary: str
    """One line: what the rule refuses or warns about."""
    source: str
    """Where the rule comes from: an upstream URL or a repository path (``gpustack/gpustack-operator:
    pkg/worker/webhooks/...``), or ``gpu-fabric`` for a rule of gpu-fabric's own."""
    policy: Optional[str] = None
    """The policy of the pack that reports the rule's findings at preview (``None``: no policy does)."""
    enforcement: Enforcement = Enforcement.MANDATORY
    """The enforcement level of :attr:`policy` (irrelevant without one)."""
    refusal: Optional[Refusal] = None
    """What an error means before registration; default: :attr:`Refusal.POLICY` for a rule a mandatory policy
    reports, :attr:`Refusal.INPUT` otherwise. Rules that mirror an upstream validator (the operator's webhooks,
    the CRD schemas) are :attr:`Refusal.INPUT` even though a policy reports them too."""
    warnings_policy: Optional[str] = None
    """The advisory policy that reports this rule's warnings, when it is not :attr:`policy`."""

    @property
    def refuses_as(self) -> Refusal:
        """:attr:`refusal`, or the default it stands for."""
        if self.refusal is not None:
            return self.refusal
        if self.policy is not None and self.enforcement is Enforcement.MANDATORY:
            return Refusal.POLICY
        return Refusal.INPUT

    @property
    def is_policy_refusal(self) -> bool:
        """An error of this rule is a mandatory policy's verdict on well-formed input (exit 1)."""
        return self.refuses_as is Refusal.POLICY
