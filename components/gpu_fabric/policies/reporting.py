"""How a policy reports the findings of the rules it adapts: one violation per finding that is decided.

A finding that rests on a value unknown at preview (:attr:`gpu_fabric.findings.Finding.rests_on_unknown`)
is not a decision yet: it waits for the value and is not reported. Every other finding becomes one
violation, in the words the policy chooses for it, on the resource it names.
"""

from __future__ import annotations

from typing import Any, Optional

from gpu_fabric.findings import Finding


def report_finding(report_violation: Any, finding: Finding, message: str, urn: Optional[str] = None) -> None:
    """Report ``finding`` as a violation reading ``message`` (on ``urn``), unless it waits for an unknown value.

    The message ends with the rule's ``[id]`` as ``lint`` and ``render`` end theirs: the analyzer protocol
    carries a policy name and a message, nothing else (pulumi/proto/pulumi/analyzer.proto, AnalyzeDiagnostic),
    so the id is how ``pulumi preview`` names the rule that refused."""
    if finding.rests_on_unknown:
        return
    tag = finding.rule_tag
    report_violation(message if message.endswith(tag) else f"{message} {tag}", urn)


def at_path(finding: Finding) -> str:
    """``path: message`` (the message alone when it names its path already, or the finding has none): how a
    resource policy names the field at fault, as ``lint`` and ``render`` do."""
    path = str(finding.path)
    return finding.message if not path or finding.message.startswith(path) else f"{path}: {finding.message}"
