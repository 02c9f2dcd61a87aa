"""What one GPUStack operator release line looks like to gpu-fabric: the :class:`Profile`.

A profile holds, for one line, every fact a builder, a policy or ``lint`` needs to decide as that
line's API server and admission webhooks would: which CRD schemas (and whether they were transcribed
from the operator's Go or derived from another line plus documented changes), what to write instead
of a field the line does not have, which fields the sources leave open, which engine rule its
webhook runs, and where each fact came from. Callers ask the profile; nothing else branches on a
version string.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping

from gpu_fabric.findings import Finding

EngineRule = Callable[[Mapping[str, Any], "Profile"], list[Finding]]
"""An object-only admission rule over a ModelDeployment ``spec`` under a profile: findings (errors or
warnings) at paths of the spec."""


@dataclass(frozen=True)
class Source:
    """Where one fact of a profile comes from: a docs page (URL and version) or a Go file at a commit."""

    fact: str
    where: str


@dataclass(frozen=True)
class FieldNote:
    """A field of ``kind`` (dotted path, ``[]`` for list items) with something to say about it.

    Used two ways: as a *hint* (the line does not have the field; ``note`` says what to write instead)
    and as an *unconfirmed* field (the line's schema keeps it, but no source read says whether the
    release still has it; ``note`` says what is known).
    """

    kind: str
    path: str
    note: str
    """The text; ``{version}`` in it stands for the version the user named."""
    source: str = ""
    rename_to: str = ""
    """For a hint: the field's name on this line when it is the same field spelt differently
    (``instanceType`` -> ``acceleratorType``); the refusal then quotes the value to move."""


@dataclass(frozen=True)
class Profile:
    """One operator release line's API: schema, field model, defaults, admission and provenance."""

    line: str
    """The line's name as users write it: ``0.9``, ``0.10``, ``0.11`` or ``main@5cfac77b``."""
    releases: tuple[str, ...]
    """The releases of the line whose docs were read (``0.10.0``); any patch of the line is accepted."""
    summary: str
    """One line: what this profile mirrors and how sure it is."""
    schema_folder: str
    """Folder under ``gpu_fabric/data/gpustack-operator/`` holding the CRD schemas or their derivation
    (``changes.yaml``, applied to ``derived_from``'s schemas); ``""`` is the pin's folder itself."""
    pool_field: str
    """The role field naming the pool (``instanceType``, or ``acceleratorType`` from 0.11)."""
    engine_rule: EngineRule
    """The webhook's engine rule: engine version for synthesized images (pin), or a required image."""
    schema_basis: str
    """``transcribed`` (read from ``zz_generated.crds.go`` at a commit) or ``derived`` (another line's
    schema plus the changes its docs state)."""
    hints: tuple[FieldNote, ...] = ()
    """Fields this line does not have, with what to write instead (named in the refusal)."""
    unconfirmed: tuple[FieldNote, ...] = ()
    """Fields kept in the schema that no source confirms for this line: reported as warnings."""
    sources: tuple[Source, ...] = ()
    """Where every fact of the profile comes from."""
    docs: str = ""
    """The line's docs root (``https://docs.gpustack.ai/gpustack-operator/v0.10.0/``), or ``""``."""
    version: str = ""
    """The version the user named (``0.10.3``); ``""`` until :meth:`for_version` sets it."""
    stand_in: bool = False
    """True when :attr:`version` is newer than every mirrored line and this line's rules stand in for it,
    because the user asked for that explicitly (``0.12.0+as-0.11``); every render warns (:meth:`stand_in_warning`)."""

    @property
    def assumed(self) -> str:
        """The version decisions are made for: what the user named, else the line's newest documented release."""
        return self.version or (self.releases[-1] if self.releases else self.line)

    @property
    def as_written(self) -> str:
        """The version as a setting names it (``0.12.0+as-0.11`` for a stand-in): what components pass on, so
        the pack reads the same choice back."""
        return f"{self.version}+as-{self.line}" if self.stand_in else self.assumed

    def for_version(self, version: str) -> "Profile":
        """This profile, remembering the exact version the user named (messages quote it)."""
        return replace(self, version=version)

    def standing_in_for(self, version: str) -> "Profile":
        """This (the newest) line's rules for ``version``, an operator release newer than every mirrored line."""
        return replace(self, version=version, stand_in=True)

    def stand_in_warning(self) -> str | None:
        """The warning every render, check and lint prints while this line stands in for a newer release."""
        if not self.stand_in:
            return None
        return (f"GPUStack operator {self.version} is newer than every line gpu-fabric mirrors: its objects are decided "
                f"under the {self.line} line's schema and rules ({self.releases[-1] if self.releases else self.line}), which "
                f"{self.version} may have changed; nothing here is verified for {self.version} (check its release notes, "
                f"and let pulumi preview against the cluster run the operator's own admission)")

    def hint(self, kind: str, path: str) -> FieldNote | None:
        """What to write instead of ``kind``'s ``path`` (indices removed) when this line lacks it."""
        return next((note for note in self.hints if note.kind == kind and note.path == path), None)

    def unconfirmed_note(self, kind: str, path: str) -> FieldNote | None:
        """The note on an unconfirmed field, or ``None`` when the field is confirmed (or absent)."""
        return next((note for note in self.unconfirmed if note.kind == kind and note.path == path), None)

    def describe(self) -> str:
        """One line for ``gpu-fabric --version``: the line, its releases, how sure it is, and where it was read."""
        releases = ", ".join(self.releases) if self.releases else "no release"
        where = self.docs or (self.sources[0].where if self.sources else "")
        return f"{self.line} ({releases}): {self.summary}; read at {where} ({len(self.sources)} sources)"

    def provenance(self, pin: str) -> tuple[str, str]:
        """``(from operator code, from docs)``: what of this line is mirrored from the operator's Go source
        (at the pinned commits, ``pin``) and what is gpu-fabric's reading of the line's docs."""
        docs_sources = [source for source in self.sources if source.where.startswith("http")]
        if self.schema_basis == "transcribed":
            return (f"everything: CRD schemas, admission rules and the operator's messages, read from its Go source at {pin}",
                    "nothing")
        return (f"the base: the CRD schemas, admission rules and messages of {pin}",
                f"this line's differences (schema changes, {self.pool_field}, the engine rule, field notes) from "
                f"{len(docs_sources)} docs pages of {', '.join(self.releases)}; no released CRD or webhook code was read")
