"""Write docs/rules.md: every rule, the policy that reports it, its source and the function deciding it.

    python scripts/generate_rule_catalogue.py          # write the file
    python scripts/generate_rule_catalogue.py --check  # exit 1 when the committed file is stale

The text is :func:`gpu_fabric.policies.catalogue.rule_catalogue_markdown` over the pack's policies;
tests/validation/test_rule_catalogue.py fails when the committed file differs from it.
"""

from __future__ import annotations

import sys
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parent.parent


def main(argv: list[str]) -> int:
    from gpu_fabric.policies import ALL_POLICIES
    from gpu_fabric.policies.catalogue import CATALOGUE_PATH, rule_catalogue_markdown

    path = PROJECT_DIR / CATALOGUE_PATH
    text = rule_catalogue_markdown(ALL_POLICIES)
    if "--check" in argv:
        current = path.read_text() if path.exists() else ""
        if current != text:
            print(f"{CATALOGUE_PATH} is stale: run python scripts/generate_rule_catalogue.py", file=sys.stderr)
            return 1
        return 0
    path.write_text(text)
    print(f"wrote {CATALOGUE_PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
