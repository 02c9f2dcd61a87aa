"""The 0.11 line (documented release ``0.11.2``): ``acceleratorType``, optional role cpu/ram/localStorage,
``kvTransfer.backend``, ``leader.electionBackend``, and an enforced binding dtype.

Sources: the v0.11.2 docs page openings (https://docs.gpustack.ai/gpustack-operator/v0.11.2/docs/modules/model-deployment/configuration/
and the pages cited beside each fact). The schema is *derived*: the 0.10 line's with
the documented changes (``data/gpustack-operator/releases/v0.11/changes.yaml``). Open questions, kept
open: whether ``instanceType`` is still accepted as an alias (not found: refused, naming
``acceleratorType``), the values ``kvTransfer.backend`` and ``electionBackend`` take beyond the docs'
``None`` example, and the text of the enforced-dtype rule ("Upgrading to an Enforced Binding Dtype"
could not be read), which is why a binding's dtype is reported as unconfirmed rather than judged.
"""

from __future__ import annotations

from gpu_fabric.gpustack.profiles.model import FieldNote, Profile
from gpu_fabric.gpustack.profiles.released import (
    ENGINE_VERSION_OPEN, SHARED_HINTS, docs_page, released_sources, required_engine_image_rule)

RELEASE = "0.11.2"
CONFIGURATION = docs_page(RELEASE, "docs/modules/model-deployment/configuration/")

PROFILE = Profile(
    line="0.11",
    releases=(RELEASE,),
    summary=("docs-derived from the v0.11.2 docs (no released CRD or webhook source read): engine.image required, "
             "acceleratorType, optional cpu/ram/localStorage, kvTransfer.backend, leader.electionBackend"),
    schema_folder="releases/v0.11",
    schema_basis="derived",
    pool_field="acceleratorType",
    engine_rule=required_engine_image_rule,
    hints=(
        FieldNote("ModelDeployment", "spec.roles.instanceType", (
            "operator {version} names a role's pool in roles[].acceleratorType (an AcceleratorType, "
            f"`kubectl get acctype`) ({CONFIGURATION}); whether instanceType is still accepted as an alias was "
            "not found"), CONFIGURATION, rename_to="acceleratorType"),
        *SHARED_HINTS,
    ),
    unconfirmed=(
        FieldNote("ModelDeployment", "spec.engine.version", ENGINE_VERSION_OPEN.format(version=RELEASE), CONFIGURATION),
        FieldNote("KVCacheBackend", "spec.connection.managed.members.fabricInterfaceCount",
                  "fabricInterfaceCount is not shown by any v0.11.2 page read; without it each fabric member gets "
                  "one interface", docs_page(RELEASE, "docs/modules/kv-cache/backend/")),
        FieldNote("KVCachePoolBinding", "spec.domain.dtype",
                  "0.11 enforces the binding dtype against the engine (\"Upgrading to an Enforced Binding Dtype\"); "
                  "the rule's text was not read, so this dtype is not judged here: check it matches the engine's "
                  "--kv-cache-dtype", docs_page(RELEASE, "docs/operate/migration/index.md")),
    ),
    sources=released_sources(RELEASE, {
        "model.name and engine.name required; engine.image required; roles name acceleratorType; resources.cpu/ram/"
        "localStorage optional": "docs/modules/model-deployment/configuration/",
        "AcceleratorType selects accelerated pools (kubectl get acctype)": "docs/modules/devices/",
        "the direct connector depends on spec.kvTransfer.backend": "docs/modules/model-deployment/prefill-decode/",
        "leader.electionBackend: None in the backend example; members[].medium immutable": "docs/modules/kv-cache/backend/",
        "KVCachePool and Binding as v0.9.2": "docs/modules/kv-cache/pool/",
        "the upgrade guide 'Upgrading to an Enforced Binding Dtype' exists": "docs/operate/migration/index.md",
    }),
    docs=CONFIGURATION,
)
