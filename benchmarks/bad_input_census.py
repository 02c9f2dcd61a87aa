"""Refusal rates over the bad-input table of ``tests/project/test_bad_input.py``.

Renders every bad stack file of the table through the command line and prints, per category, how
many were refused cleanly (exit 2, the path named, no traceback), refused without naming the path,
accepted, or crashed. Run from the project folder: ``python benchmarks/bad_input_census.py``.
"""

from __future__ import annotations

import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent / "tests"
sys.path[:0] = [str(TESTS), str(TESTS / "project")]  # support.* helpers, and the table's test module

from support.bad_input import render_file  # noqa: E402
from test_bad_input import CASES  # noqa: E402


def classify(text, fragments) -> str:
    with tempfile.TemporaryDirectory() as folder:
        outcome = render_file(Path(folder), text)
    if outcome.crashed:
        return "crashed"
    if outcome.code == 0:
        return "accepted"
    if all(fragment in outcome.err for fragment in fragments):
        return "refused"
    return "refused-unclear"


def main() -> int:
    by_category: dict[str, Counter] = defaultdict(Counter)
    failures = []
    for case, (text, fragments) in sorted(CASES.items()):
        verdict = classify(text, fragments)
        by_category[case.split("/")[0]][verdict] += 1
        if verdict != "refused":
            failures.append(f"{verdict:<16} {case}")
    total = Counter()
    print(f"{'category':<12} {'cases':>5} {'refused':>8} {'unclear':>8} {'accepted':>9} {'crashed':>8}")
    for category, counts in sorted(by_category.items()):
        total.update(counts)
        print(f"{category:<12} {sum(counts.values()):>5} {counts['refused']:>8} {counts['refused-unclear']:>8} "
              f"{counts['accepted']:>9} {counts['crashed']:>8}")
    cases = sum(total.values())
    print(f"{'all':<12} {cases:>5} {total['refused']:>8} {total['refused-unclear']:>8} {total['accepted']:>9} {total['crashed']:>8}")
    print(f"refused cleanly: {100 * total['refused'] / cases:.0f}%")
    print("\n".join(failures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
