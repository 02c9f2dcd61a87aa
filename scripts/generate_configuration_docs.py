"""Write ``docs/configuration.md``, the configuration reference, from the models' JSON Schema.

    python scripts/generate_configuration_docs.py            # rewrite docs/configuration.md
    python scripts/generate_configuration_docs.py --check    # exit 1 when the file is stale

The text is :func:`gpu_fabric.config.reference_doc.reference_markdown` (the same schema
``gpu-fabric schema`` prints); ``tests/config/test_schema.py`` fails when the committed file is stale.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "configuration.md"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 when the file differs")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT / "components"))
    from gpu_fabric.config.reference_doc import reference_markdown

    text = reference_markdown()
    try:
        if args.check:
            current = DOC.read_text(encoding="utf-8") if DOC.is_file() else ""
            if current != text:
                print(f"{DOC} is stale: run python scripts/generate_configuration_docs.py", file=sys.stderr)
                return 1
            print(f"{DOC} is up to date")
            return 0
        DOC.write_text(text, encoding="utf-8")
    except OSError as error:  # a folder, a read-only file or a full disk where the reference goes: one line
        print(f"generate_configuration_docs: cannot {'read' if args.check else 'write'} {DOC}: "
              f"{error.strerror or error}", file=sys.stderr)
        return 2
    print(f"wrote {DOC} ({len(text.splitlines())} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
