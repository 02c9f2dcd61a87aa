"""Write docs/rules.md: every rule, the policy that reports it, its source, the function deciding it, and its examples.

    python scripts/generate_rule_catalogue.py          # write the file
    python scripts/generate_rule_catalogue.py --check  # exit 1 when the committed file is stale

The text is :func:`gpu_fabric.policies.catalogue.rule_catalogue_markdown` over the pack's policies, with each
rule's examples taken from the conformance corpus (``tests/conformance/cases``: the first case it accepts and
the first it refuses or warns about, as :func:`rule_examples` words them). tests/validation/test_rule_catalogue.py
fails when the committed file differs from it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(PROJECT_DIR / "tests"), str(PROJECT_DIR / "tests" / "conformance")]


def _change(case) -> str:
    """What the case changes, shortly: the stack's edits, the team's objects or the resources' edits."""
    if case.manifests:
        objects = ", ".join(f"{m.get('kind')} {(m.get('metadata') or {}).get('name')}" for m in case.manifests)
        return f"objects applied beside `{case.stack}`: {objects}"
    if case.resources:
        edits = "; ".join(f"{edit['type'].rsplit(':', 1)[-1]} with " + ", ".join(
            [f"`{path}: {json.dumps(value)}`" for path, value in (edit.get("set") or {}).items()]
            + [f"no `{path}`" for path in edit.get("unset") or ()]) for edit in case.resources)
        return f"`{case.stack}`'s {edits}"
    edits = [f"`{path}: {json.dumps(value)}`" for path, value in case.set.items()]
    edits += [f"no `{path}`" for path in case.unset]
    stack = f"`{case.stack}`" if case.fleet is None else f"benchmarks/render_fleet.py's fleet at scale {case.fleet}"
    return f"{stack} with {', '.join(edits)}" if edits else f"{stack} as it is"


def rule_examples() -> dict[str, list[tuple[str, str]]]:
    """Per rule id: its first accepting case and its first refusing (or warning) case, one line each."""
    from corpus import load_cases

    examples: dict[str, list[tuple[str, str]]] = {}
    for verdicts in (("accepts",), ("refuses", "warns")):
        for case in load_cases():
            if case.verdict in verdicts and not any(v in verdicts for v, _ in examples.get(case.rule, [])):
                text = case.name.rstrip(".") + f" ({_change(case)}" + (f"; at `{case.path}`)" if case.path else ")")
                examples.setdefault(case.rule, []).append((case.verdict, text.replace("|", "\\|")))
    return examples


def catalogue_text() -> str:
    from gpu_fabric.policies import ALL_POLICIES
    from gpu_fabric.policies.catalogue import rule_catalogue_markdown

    return rule_catalogue_markdown(ALL_POLICIES, rule_examples())


def main(argv: list[str]) -> int:
    from gpu_fabric.policies.catalogue import CATALOGUE_PATH

    path = PROJECT_DIR / CATALOGUE_PATH
    text = catalogue_text()
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
