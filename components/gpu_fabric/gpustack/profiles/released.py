"""What the released operator lines (0.9, 0.10, 0.11) share, read from their versioned docs.

No released CRD schema or webhook source could be read (the readable history of gpustack/gpustack-operator
holds pre-release commits only): every fact here comes from the opening of a docs page under
``https://docs.gpustack.ai/gpustack-operator/<version>/``, cited beside it. Where a page shows a
field but not its rule, the rule here is labelled as gpu-fabric's reading, and where the pages
leave a field's fate open the field is *unconfirmed* (a lint warning), never silently passed or refused.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping

from gpu_fabric.config.shapes import mapping_at
from gpu_fabric.findings import Finding, Severity
from gpu_fabric.gpustack.rules import MODEL_DEPLOYMENT_ADMISSION
from gpu_fabric.gpustack.profiles.model import FieldNote, Profile, Source

DOCS_ROOT = "https://docs.gpustack.ai/gpustack-operator"


def docs_page(version: str, page: str) -> str:
    """The URL of ``page`` (``docs/modules/...``) in the docs of release ``version`` (``0.10.0``)."""
    return f"{DOCS_ROOT}/v{version}/{page}"


SHARED_HINTS: tuple[FieldNote, ...] = (
    FieldNote("ModelDeployment", "spec.engineVersion", "the engine version is spec.engine.version"),
    FieldNote("KVCachePoolBinding", "spec.quotaCeiling", "the binding's quota is spec.quota.ceiling"),
)
"""Retired spellings every line refuses the same way (schema at ``ad484497`` and every release's pool page)."""

_CONFIGURATION_0_11 = docs_page("0.11.2", "docs/modules/model-deployment/configuration/")
_PREFILL_DECODE_0_11 = docs_page("0.11.2", "docs/modules/model-deployment/prefill-decode/")
_BACKEND_0_11 = docs_page("0.11.2", "docs/modules/kv-cache/backend/")

LATER_LINE_FIELDS: tuple[FieldNote, ...] = (
    FieldNote("ModelDeployment", "spec.roles.acceleratorType",
              "roles[].acceleratorType (an AcceleratorType, `kubectl get acctype`) is the 0.11 line's spelling; "
              "this line names the pool in roles[].instanceType", _CONFIGURATION_0_11, rename_to="instanceType"),
    *(FieldNote("ModelDeployment", f"spec.roles.resources.{name}",
                f"roles[].resources.{name} arrives with the 0.11 line; drop it here", _CONFIGURATION_0_11)
      for name in ("cpu", "ram", "localStorage")),
    FieldNote("ModelDeployment", "spec.kvTransfer.backend",
              "kvTransfer.backend (the direct connector's backend) arrives with the 0.11 line; drop it here",
              _PREFILL_DECODE_0_11),
    FieldNote("KVCacheBackend", "spec.connection.managed.leader.electionBackend",
              "leader.electionBackend arrives with the 0.11 line; drop it here", _BACKEND_0_11),
)
"""Fields the 0.11 docs show that older lines lack: refused there, naming where they come from."""


def hints_before_0_11() -> tuple[FieldNote, ...]:
    """:data:`LATER_LINE_FIELDS` worded for a line older than 0.11 (``{version}`` is the version assumed),
    plus the shared hints."""
    return (*SHARED_HINTS, *(replace(n, note=f"{n.note} (operator {{version}} has no such field; see {n.source})")
                             for n in LATER_LINE_FIELDS))


def required_engine_image_rule(spec: Mapping[str, Any], profile: Profile) -> list[Finding]:
    """The released lines' engine rule: ``engine.image`` names the runner; no image is synthesized any more.

    The v0.9.2, v0.10.0 and v0.11.2 ModelDeployment pages annotate ``engine.image`` as required, and
    their contents replace "Runner image formula" with "Role images" (``docs/modules/model-deployment/deployment/`` of
    https://docs.gpustack.ai/gpustack-operator/v0.9.2/, v0.10.0/ and the v0.11.2 ``configuration/`` page). The text of
    "Role images" and of "Admission refusals" could not be read, so two things are gpu-fabric's reading:
    a deployment without ``engine.image`` whose every role names its own ``image`` is not refused but
    warned about (whether role images waive the engine image is not confirmed), and the message wording
    is gpu-fabric's (the operator's own refusal text was not found).
    """
    version = profile.assumed
    engine = mapping_at(spec, "engine")
    if engine.get("image"):
        return []
    roles = [role if isinstance(role, Mapping) else {} for role in spec.get("roles") or []]
    imageless = [str(role.get("name", "")) for role in roles if not role.get("image")]
    version_hint = engine.get("version")
    example = (f"gpustack/runner:cuda13.0-{str(engine.get('name', 'vLLM')).lower()}{version_hint}"
               if version_hint else "gpustack/runner:cuda13.0-vllm0.29.0")
    if imageless:
        return [Finding.of(MODEL_DEPLOYMENT_ADMISSION, "spec.engine.image", (
            f"Required value: GPUStack operator {version} requires engine.image (the runner image) and no longer "
            f"synthesizes one from engine.version; role \"{imageless[0]}\" names no image of its own. Write "
            f"engine.image (for example {example}) (docs: \"Role images\", {profile.docs})"))]
    return [Finding.of(MODEL_DEPLOYMENT_ADMISSION, "spec.engine.image", (
        f"not confirmed for {version}: the docs mark engine.image required; whether an image on every role "
        "waives it was not found. Set engine.image to be sure"), severity=Severity.WARNING)]


ENGINE_VERSION_OPEN = (
    "engine.version is not in the minimal manifest of the {version} docs and no page read says whether the field "
    "still exists; image synthesis from it is gone (\"Role images\" replaced \"Runner image formula\"), so it "
    "chooses nothing here. Drop it unless you know your operator keeps it")


def released_sources(version: str, pages: Mapping[str, str]) -> tuple[Source, ...]:
    """``Source`` entries for a release's docs pages (fact -> page path)."""
    return tuple(Source(fact, docs_page(version, page)) for fact, page in pages.items())
