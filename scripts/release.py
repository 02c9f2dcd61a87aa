"""Make a release of gpu-fabric: the annotated tag ``v<version>`` and the wheel, from a clean checkout.

    python scripts/release.py            # tag v<gpu_fabric.__version__> at HEAD, build dist/gpu_fabric-<version>-py3-none-any.whl
    python scripts/release.py --check    # only say what is missing; exit 1 if anything is

The version is ``gpu_fabric.__version__`` (``components/gpu_fabric/__init__.py``), read from the file without
importing the package (the tag must name the checkout's version, not an installed one). Refused, before anything
is made, with one line saying what to do: a working tree with uncommitted changes (the tag would not hold them),
a CHANGELOG.md without a dated ``## <version> (YYYY-MM-DD)`` section (an ``(unreleased)`` one must be dated and
committed first), a tag ``v<version>`` that exists already. The wheel is built as ``.github/workflows/package.yml``
builds it (``pip wheel . --no-deps``), with ``--no-build-isolation`` so that no package index is asked: the
dev extra's setuptools and wheel build it. Pushing the tag (``git push origin v<version>``) is left to the person
releasing: nothing here talks to a remote. tests/project/test_release.py runs this in a scratch clone and installs
the result from the tag and from the wheel, each in a fresh virtualenv.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VERSION_FILE = Path("components") / "gpu_fabric" / "__init__.py"
VERSION_LINE = re.compile(r'^__version__ = "([^"]+)"$', re.MULTILINE)


class ReleaseError(Exception):
    """What stops a release, worded as what to do."""


def version_of(root: Path) -> str:
    """``__version__`` as the checkout's source file has it."""
    match = VERSION_LINE.search((root / VERSION_FILE).read_text(encoding="utf-8"))
    if match is None:
        raise ReleaseError(f"{VERSION_FILE}: no line __version__ = \"...\"")
    return match.group(1)


def _git(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=120)


def problems(root: Path, version: str) -> list[str]:
    """Everything that stops releasing ``version`` from ``root`` now, as instructions."""
    found = []
    status = _git(root, "status", "--porcelain", "--untracked-files=no")
    if status.returncode != 0:
        found.append(f"not a git checkout: {status.stderr.strip()}")
    elif status.stdout.strip():
        found.append("commit or stash the changes to tracked files first: the tag holds only what is committed")
    changelog = (root / "CHANGELOG.md").read_text(encoding="utf-8") if (root / "CHANGELOG.md").is_file() else ""
    if not re.search(rf"^## {re.escape(version)} \(\d{{4}}-\d{{2}}-\d{{2}}\)$", changelog, re.MULTILINE):
        found.append(f"CHANGELOG.md: date the section of {version} (`## {version} (YYYY-MM-DD)`) and commit it")
    if _git(root, "rev-parse", "-q", "--verify", f"refs/tags/v{version}").returncode == 0:
        found.append(f"the tag v{version} exists already: bump __version__ in {VERSION_FILE} for a new release")
    return found


def release(root: Path) -> tuple[str, Path]:
    """Tag HEAD ``v<version>`` (annotated) and build the wheel into ``root/dist``; return the tag and the wheel."""
    version = version_of(root)
    found = problems(root, version)
    if found:
        raise ReleaseError("; ".join(found))
    tag = f"v{version}"
    # The wheel first: a build that fails leaves no tag behind (nothing half-made).
    dist = root / "dist"
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", str(root), "--no-deps", "--no-build-isolation",
                            "--no-index", "-q", "-w", str(dist)], capture_output=True, text=True, timeout=600)
    wheel = dist / f"gpu_fabric-{version}-py3-none-any.whl"
    if build.returncode != 0 or not wheel.is_file():
        raise ReleaseError(f"the wheel did not build (pip exit {build.returncode}): {build.stderr.strip()[-2000:]}")
    made = _git(root, "tag", "--annotate", tag, "--message", f"gpu-fabric {version}")
    if made.returncode != 0:
        raise ReleaseError(f"git tag {tag} failed: {made.stderr.strip()}")
    return tag, wheel


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only list what stops a release; exit 1 if anything")
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        if args.check:
            version = version_of(args.root)
            found = problems(args.root, version)
            for problem in found:
                print(f"release: {problem}", file=sys.stderr)
            if not found:
                print(f"release: v{version} can be made")
            return 1 if found else 0
        tag, wheel = release(args.root)
    except ReleaseError as error:
        print(f"release: {error}", file=sys.stderr)
        return 1
    print(f"tagged {tag} (annotated) and built {wheel}; publish with: git push origin {tag}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
