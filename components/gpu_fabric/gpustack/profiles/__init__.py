"""The GPUStack operator lines gpu-fabric mirrors, one :class:`Profile` each, and how a version names one.

A stack (``gpu-fabric:gpustackOperator``), ``gpu-fabric lint --operator``, the components'
``gpustack_operator`` argument and the policy pack all name the operator the cluster runs the way
``helm list`` shows it: ``0.9.2``, ``0.10.0``, ``0.11.2`` (any patch of a known line; a leading ``v``
is accepted), or ``main@5cfac77b`` for the pre-release commit gpu-fabric mirrored first. A release
newer than every mirrored line is refused unless the user asks, explicitly, for the newest line's rules
to stand in for it: ``0.12.0+as-0.11`` (the ``+as-<line>`` suffix, wherever a version is written: the
stack's ``gpu-fabric:gpustackOperator``, ``lint --operator``, the components' ``gpustack_operator``); the
profile is then marked :attr:`Profile.stand_in` and every render, check and lint warns.
:func:`profile_for` is the one place a version becomes a profile; everything else asks the profile.
"""

from __future__ import annotations

import re
from typing import Iterable

from gpu_fabric.config.constants import DEFAULT_GPUSTACK_OPERATOR
from gpu_fabric.findings import Finding, Severity
from gpu_fabric.findings.printable import quoted
from gpu_fabric.gpustack.operator_pin import OPERATOR_COMMIT
from gpu_fabric.gpustack.rules import GPUSTACK_OPERATOR_STAND_IN
from gpu_fabric.gpustack.profiles import main_5cfac77b, release_0_9, release_0_10, release_0_11
from gpu_fabric.gpustack.profiles.model import FieldNote, Profile, Source

__all__ = ["DEFAULT_GPUSTACK_OPERATOR", "FieldNote", "PROFILES", "Profile", "Source", "UnknownOperatorVersion",
           "default_profile", "known_versions", "newest_line", "pin_profile", "profile_for", "stand_in_findings"]

PROFILES: tuple[Profile, ...] = (release_0_9.PROFILE, release_0_10.PROFILE, release_0_11.PROFILE, main_5cfac77b.PROFILE)
"""Every mirrored line, oldest release first, the pre-release pin last."""

# ASCII digits only (round 4: an Arabic-Indic or full-width "٠.١٠.٠" is no version ``helm list`` shows), and at
# most 9 of them: int() of a 5,000-digit part raises (sys.int_info.str_digits_check_threshold), and no release
# is numbered beyond that. ``\Z``, not ``$``, which would take a trailing newline.
_NUMBER = r"(0|[1-9][0-9]{0,8})"
_RELEASE = re.compile(rf"^v?{_NUMBER}\.{_NUMBER}\.{_NUMBER}\Z", re.ASCII)
_MAIN = re.compile(r"^main@([0-9a-f]{8,40})\Z", re.ASCII)


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
    stand_in = _STAND_IN.match(text)
    if stand_in:
        return _stand_in(text, stand_in.group("version"), stand_in.group("line"))
    lines = ", ".join(f"{p.line}.x" for p in PROFILES if p.releases)
    newer = ""
    if release and _is_newer(release.groups()):
        newer = (f"; {text} is newer than every line gpu-fabric mirrors: to decide it under the newest line's rules "
                 f"anyway, unverified and warned about on every render, write {text}+as-{newest_line().line}")
    raise UnknownOperatorVersion(
        f"{quoted(text)} is not a GPUStack operator version gpu-fabric mirrors: write one of {', '.join(known_versions())} "
        f"(any patch of {lines} is accepted, as `helm list` shows it){newer}")


_STAND_IN = re.compile(rf"^(?P<version>v?{_NUMBER}\.{_NUMBER}\.{_NUMBER})\+as-(?P<line>{_NUMBER}\.{_NUMBER})\Z", re.ASCII)
"""``0.12.0+as-0.11``: operator 0.12.0, decided under the 0.11 line's rules (the explicit stand-in setting)."""


def newest_line() -> Profile:
    """The newest released line gpu-fabric mirrors (the one that may stand in for a newer release)."""
    return max((p for p in PROFILES if p.releases), key=lambda p: tuple(int(part) for part in p.line.split(".")))


def _is_newer(parts: tuple[str, ...]) -> bool:
    newest = tuple(int(part) for part in newest_line().line.split("."))
    return (int(parts[0]), int(parts[1])) > newest


def _stand_in(text: str, version: str, line: str) -> Profile:
    """``version`` under ``line``'s rules: only a release newer than every mirrored line, only under the newest line."""
    newest = newest_line()
    parts = _RELEASE.match(version)
    if parts is None:  # not reached: _STAND_IN's version is a release
        raise UnknownOperatorVersion(f"{text!r}: {version!r} is not a release version")
    named = ".".join(str(int(part)) for part in parts.groups())
    if not _is_newer(parts.groups()):
        raise UnknownOperatorVersion(f"{text!r}: {named} is a line gpu-fabric mirrors (or older than the newest, "
                                     f"{newest.line}); write {named} itself, without +as-{line}")
    if line != newest.line:
        raise UnknownOperatorVersion(f"{text!r}: only the newest mirrored line stands in for a newer release; "
                                     f"write {named}+as-{newest.line}")
    return newest.standing_in_for(named)


def default_profile() -> Profile:
    """The profile of :data:`DEFAULT_GPUSTACK_OPERATOR` (the 0.10 line: the walkthrough's own API)."""
    return profile_for(DEFAULT_GPUSTACK_OPERATOR)


def components_operator(named: Iterable[str]) -> tuple[Profile | None, str | None]:
    """The operator profile a stack's components name (``gpustackOperator`` of each), and the problem with it.

    ``(profile, None)`` when they agree on a known version (or name none: the default); ``(None, problem)`` when
    they disagree or name an unknown version. The pack (reading the engine's resources) and ``render`` (reading
    what it registered) both decide it here.
    """
    versions = sorted(set(named))
    if len(versions) > 1:
        return None, (f"the stack's components name different GPUStack operator versions ({', '.join(versions)}); "
                      "one cluster runs one operator: set gpu-fabric:gpustackOperator once")
    if not versions:
        return default_profile(), None
    try:
        return profile_for(versions[0]), None
    except UnknownOperatorVersion as error:
        return None, f"gpustackOperator: {error}"


def pin_profile() -> Profile:
    """The ``main@5cfac77b`` profile: the pre-release commit, decided exactly as the ported Go tests expect."""
    return profile_for(main_5cfac77b.LINE)


def stand_in_findings(profile: Profile) -> list[Finding]:
    """The warning (at ``gpustackOperator``) of a profile standing in for a newer release; none otherwise.

    The one rule behind the warning ``render``, ``check``, ``verify`` and ``lint`` print and the
    ``gpustack-operator-unverified`` policy reports at preview.
    """
    warning = profile.stand_in_warning()
    if warning is None:
        return []
    return [Finding.of(GPUSTACK_OPERATOR_STAND_IN, "gpustackOperator", warning, severity=Severity.WARNING)]
