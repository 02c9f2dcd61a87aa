"""How a policy reports the findings of the rules it adapts: one violation per finding that is decided.

A finding that rests on a value unknown at preview (:attr:`gpu_fabric.findings.Finding.rests_on_unknown`)
is not a decision yet: it waits for the value and is not reported. Every other finding becomes one
violation, in the words the policy chooses for it, on the resource it names.
"""

from __future__ import annotations

from typing import Any, Optional

from gpu_fabric.findings import Finding


def report_finding(report_violation: Any, finding: Finding, message: str, urn: Optional[str] = None) -> None:
    """Report ``finding`` as a violation reading ``message`` (on ``urn``), unless it waits for an unknown value."""
    if finding.rests_on_unknown:
        return
    report_violation(message, urn)
