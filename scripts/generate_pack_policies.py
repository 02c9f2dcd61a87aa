"""Write components/gpu_fabric/policies/pack_policies.json: what the ready pack tells the engine about each policy.

    python scripts/generate_pack_policies.py          # write the file
    python scripts/generate_pack_policies.py --check  # exit 1 when the committed file is stale

The text is :func:`gpu_fabric.policies.served_pack.policies_file_text` over
:data:`gpu_fabric.policies.ALL_POLICIES`; the pack's process serves it before it imports the policies
(:mod:`gpu_fabric.policies.served_pack` says why). tests/policies/test_served_pack.py fails when the
committed file differs from it.
"""

from __future__ import annotations

import sys

from gpu_fabric.policies import ALL_POLICIES
from gpu_fabric.policies.served_pack import POLICIES_FILE, policies_file_text


def main(argv: list[str]) -> int:
    text = policies_file_text(list(ALL_POLICIES))
    if argv[1:] == ["--check"]:
        current = POLICIES_FILE.read_text(encoding="utf-8") if POLICIES_FILE.exists() else ""
        if current != text:
            print(f"{POLICIES_FILE} is stale: run python scripts/generate_pack_policies.py", file=sys.stderr)
            return 1
        return 0
    if argv[1:]:
        print("usage: generate_pack_policies.py [--check]", file=sys.stderr)
        return 2
    POLICIES_FILE.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
