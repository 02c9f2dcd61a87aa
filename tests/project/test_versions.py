"""Every place that names gpu-fabric's version or release tag agrees with ``gpu_fabric.__version__``.

A release is the annotated tag ``v<__version__>`` (scripts/release.py, docs/development.md#releasing). The
README, the docs, the provider's and the pack's files and the example workflows name that tag or the wheel
``gpu_fabric-<version>-py3-none-any.whl``; a version bump that leaves one behind sends a user to a tag that
does not exist, which is how issue 38 began (``@v0.1.0`` with no tag). Checked in every tracked text file,
with the spellings that refer to gpu-fabric only (``actions/checkout@v4`` and an AMI alias are not ours).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

import gpu_fabric

PROJECT_DIR = Path(__file__).resolve().parents[2]
VERSION = gpu_fabric.__version__
SEMVER = r"(\d+\.\d+\.\d+(?:[-+.][0-9A-Za-z.-]+)?)"

MENTIONS = {
    "provider tag": re.compile(rf"/provider@v{SEMVER}"),
    "git install at a tag": re.compile(rf"gpu-fabric @ git\+[^\"\n]*?@v{SEMVER}"),
    "wheel file": re.compile(rf"gpu_fabric-{SEMVER}-py3-none-any\.whl"),
    "pin": re.compile(rf"gpu-fabric=={SEMVER}"),
}
"""The spellings of gpu-fabric's version in prose, commands and files, each capturing the version."""


def tracked_text(root: Path = PROJECT_DIR) -> dict[str, str]:
    """Path -> text of every tracked UTF-8 file outside the Go wrapper modules (their versions are Go's)."""
    try:
        listed = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True, timeout=60).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the tracked files cannot be listed")
    texts = {}
    for name in filter(None, listed.decode().split("\0")):
        path = root / name
        if name.startswith("scripts/engine/") or not path.is_file():
            continue
        try:
            texts[name] = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
    return texts


def mentions(text: str) -> list[tuple[str, str]]:
    """``(spelling, version)`` of every mention of a gpu-fabric version in ``text``."""
    return [(kind, match.group(1)) for kind, pattern in MENTIONS.items() for match in pattern.finditer(text)]


def test_the_patterns_catch_each_spelling_and_nothing_else():
    text = ('pip install "gpu-fabric @ git+https://example.invalid/gpu-fabric@v0.2.0"\n'
            "pulumi package add https://example.invalid/gpu-fabric/provider@v0.2.0\n"
            "pip install dist/gpu_fabric-0.2.0-py3-none-any.whl\ngpu-fabric==0.2.0\n"
            "uses: actions/checkout@v4\namiVersion: al2023@v20260801\nuses: pulumi/actions@v7\n")
    assert sorted(mentions(text)) == sorted([("git install at a tag", "0.2.0"), ("provider tag", "0.2.0"),
                                            ("wheel file", "0.2.0"), ("pin", "0.2.0")])


def test_every_mention_of_a_gpu_fabric_version_is_the_current_one():
    texts = tracked_text()
    found = {name: [m for m in mentions(text) if m[1] != VERSION] for name, text in texts.items()}
    stale = {name: wrong for name, wrong in found.items() if wrong and name != "tests/project/test_versions.py"}
    assert stale == {}, f"version mentions other than {VERSION}: {stale}"
    # The README's install line names the release tag, so it is checked, not just allowed.
    assert ("git install at a tag", VERSION) in mentions(texts["README.md"])
    assert ("provider tag", VERSION) in mentions(texts["provider/PulumiPlugin.yaml"])


def test_the_pack_and_the_changelog_carry_the_version():
    pack = (PROJECT_DIR / "policy" / "PulumiPolicy.yaml").read_text()
    assert re.search(rf"^version: {re.escape(VERSION)}$", pack, re.MULTILINE), "policy/PulumiPolicy.yaml version:"
    changelog = (PROJECT_DIR / "CHANGELOG.md").read_text()
    first = re.search(r"^## (\S+)", changelog, re.MULTILINE)
    assert first is not None and first.group(1) == VERSION, "the top CHANGELOG section is the current version"


def test_no_requirements_file_asks_an_index_for_gpu_fabric():
    """No index has gpu-fabric (issue 38: provider/requirements.txt asked for gpu-fabric==0.1.0)."""
    for name in ("provider/requirements.txt", "policy/requirements.txt"):
        lines = [line.strip() for line in (PROJECT_DIR / name).read_text().splitlines()
                 if line.strip() and not line.lstrip().startswith("#")]
        assert not [line for line in lines if re.match(r"gpu[-_]fabric\s*(?:[=<>~!]|$)", line)], name
    provider = [line.strip() for line in (PROJECT_DIR / "provider" / "requirements.txt").read_text().splitlines()
                if line.strip() and not line.startswith("#")]
    assert provider == [".."], "the provider installs the checkout (or tag) it belongs to"
