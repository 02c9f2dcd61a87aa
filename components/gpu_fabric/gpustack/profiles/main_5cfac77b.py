"""``main@5cfac77b``: the pre-release operator commit gpu-fabric mirrored before any release carried the KV-cache API.

Everything here is read from the operator's Go source at the commits in
:mod:`gpu_fabric.gpustack.operator_pin`: the schemas are transcriptions of ``zz_generated.crds.go`` at
``ad484497`` (nothing pruned, nothing added), the rules and messages are the webhook's at ``5cfac77b``
(33 Go test cases ported in tests/gpustack/test_operator_admission.py). Image synthesis lives on this line:
a role with no image of its own runs ``gpustack/runner:<backend><runtime>-<engine><version>``, so the
webhook owes ``engine.version`` (``validateModelDeploymentEngineVersion``) and ``engine.image`` does not exist.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping

from gpu_fabric.findings import Finding
from gpu_fabric.gpustack.operator_pin import OPERATOR_COMMIT, OPERATOR_REPOSITORY, SCHEMA_COMMIT, SOURCE_FILES
from gpu_fabric.gpustack.profiles.model import FieldNote, Profile, Source
from gpu_fabric.gpustack.profiles.released import LATER_LINE_FIELDS, SHARED_HINTS

LINE = "main@" + OPERATOR_COMMIT[:8]


def _engine_version(spec: Mapping[str, Any], _profile: Profile) -> list[Finding]:
    """``validateModelDeploymentEngineVersion`` at the pin: a role without an image owes ``engine.version``."""
    # Imported here: the admission rules pull in the syntax types (pydantic), and the CLI's --help lists
    # the profiles' versions without deciding anything.
    from gpu_fabric.gpustack.admission.model_deployment import engine_version_rule

    return engine_version_rule(spec)

PROFILE = Profile(
    line=LINE,
    releases=(),
    summary=(f"pre-release {OPERATOR_REPOSITORY} commit (rules at {OPERATOR_COMMIT[:12]}, CRD schemas transcribed "
             f"at {SCHEMA_COMMIT[:12]}): read from the Go source, the surest profile, but older than every release"),
    schema_folder="",
    schema_basis="transcribed",
    pool_field="instanceType",
    engine_rule=_engine_version,
    hints=(
        FieldNote("ModelDeployment", "spec.engine.image", (
            "this operator commit has no engine.image: name the image on each role (spec.roles[].image), or set "
            "spec.engine.version and let the operator synthesize gpustack/runner:<backend><runtime>-<engine><version>; "
            "or set gpustackOperator to the release the cluster runs (0.10.0 and 0.11.2 take engine.image)"),
            f"pkg/worker/webhooks/worker/model_deployment.go@{OPERATOR_COMMIT[:12]}"),
        *SHARED_HINTS,
        *(replace(note, note=f"{note.note}; main@{OPERATOR_COMMIT[:8]} does not have it") for note in LATER_LINE_FIELDS),
    ),
    unconfirmed=(),
    sources=tuple(Source(f"{path} (rules, schema or messages)", f"{OPERATOR_REPOSITORY}/{path}@{commit}")
                  for path, commit in SOURCE_FILES.items()),
    docs="",
)
