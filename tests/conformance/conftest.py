"""The conformance corpus's folder: its helper modules import by name, and the run prints the corpus's size."""

from __future__ import annotations

import sys
from pathlib import Path

if str(Path(__file__).parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).parent))


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    """One line: how many rules, cases and surface runs the corpus holds (the issue's count to report)."""
    from corpus import load_cases
    from gpu_fabric.validation.rule_registry import REGISTRY

    cases = load_cases()
    rules = {case.rule for case in cases}
    runs = sum(len(case.surfaces) for case in cases)
    terminalreporter.write_line(f"conformance corpus: {len(rules)} of {len(REGISTRY)} rules, {len(cases)} cases, "
                                f"{runs} surface runs")
