"""The GPUStack operator lines gpu-fabric mirrors, one :class:`Profile` each, and how a version names one.

A stack (``gpu-fabric:gpustackOperator``), ``gpu-fabric lint --operator``, the components'
``gpustack_operator`` argument and the policy pack all name the operator the cluster runs the way
``helm list`` shows it: ``0.9.2``, ``0.10.0``, ``0.11.2`` (any patch of a known line; a leading ``v``
is accepted), or ``main@5cfac77b`` for the pre-release commit gpu-fabric mirrored first.
:func:`profile_for` is the one place a version becomes a profile; everything else asks the profile.
"""

from __future__ import annotations

import re

from gpu_fabric.config.constants import DEFAULT_GPUSTACK_OPERATOR
from gpu_fabric.gpustack.operator_pin import OPERATOR_COMMIT
from gpu_fabric.gpustack.profiles import main_5cfac77b, release_0_9, release_0_10, release_0_11
from gpu_fabric.gpustack.profiles.model import FieldNote, Profile, Source

__all__ = ["DEFAULT_GPUSTACK_OPERATOR", "FieldNote", "PROFILES", "Profile", "Source", "UnknownOperatorVersion",
           "default_profile", "known_versions", "pin_profile", "profile_for"]

PROFILES: tuple[Profile, ...] = (release_0_9.PROFILE, release_0_10.PROFILE, release_0_11.PROFILE, main_5cfac77b.PROFILE)
"""Every mirrored line, oldest release first, the pre-release pin last."""

_RELEASE = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)$")
_MAIN = re.compile(r"^main@([0-9a-f]{8,40})$")


class UnknownOperatorVersion(ValueError):
    """A version no mirrored line covers; the message lists the ones that are."""


def known_versions() -> list[str]:
    """The versions to name, as messages list them: each documented release, then the pin."""
    return [release for profile in PROFILES for release in profile.releases] + [main_5cfac77b.LINE]


def profile_for(version: str) -> Profile:
    """The profile of operator ``version`` (remembering the exact version named); raise naming the known ones."""
    text = str(version).strip()
    release = _RELEASE.match(text)
    if release:
        line = f"{int(release.group(1))}.{int(release.group(2))}"
        for profile in PROFILES:
            if profile.line == line:
                return profile.for_version(".".join(str(int(part)) for part in release.groups()))
    main = _MAIN.match(text)
    if main and OPERATOR_COMMIT.startswith(main.group(1)):
        return main_5cfac77b.PROFILE.for_version(main_5cfac77b.LINE)
    lines = ", ".join(f"{p.line}.x" for p in PROFILES if p.releases)
    raise UnknownOperatorVersion(
        f"{text!r} is not a GPUStack operator version gpu-fabric mirrors: write one of {', '.join(known_versions())} "
        f"(any patch of {lines} is accepted, as `helm list` shows it)")


def default_profile() -> Profile:
    """The profile of :data:`DEFAULT_GPUSTACK_OPERATOR` (the 0.10 line: the walkthrough's own API)."""
    return profile_for(DEFAULT_GPUSTACK_OPERATOR)


def pin_profile() -> Profile:
    """The ``main@5cfac77b`` profile: the pre-release commit, decided exactly as the ported Go tests expect."""
    return profile_for(main_5cfac77b.LINE)
