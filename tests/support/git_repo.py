"""Scratch git repositories for tests: one identity, no user or system configuration, a fixed PATH."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Mapping, Optional

GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.invalid", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1",
           "PATH": "/usr/bin:/bin:/usr/local/bin"}
"""The whole environment of a test's git command: the same commits on every machine, whatever its git config."""


def git(repo: Path, *args: str, env: Optional[Mapping[str, str]] = None) -> str:
    """``git -C repo ARGS`` (``env`` added to :data:`GIT_ENV`); its standard output; raises when git fails."""
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env={**GIT_ENV, **(env or {})}).stdout


def commit_everything(repo: Path, message: str = "base") -> None:
    """Make ``repo`` a repository whose one commit, on branch main, holds every file in it."""
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", message]):
        git(repo, *args)
