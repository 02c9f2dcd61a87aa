"""The 0.9 line (documented release ``0.9.2``): ``engine.image`` required, no image synthesis, ``instanceType``.

Sources: the v0.9.2 docs (docs source revision ``25c6524f``, named by the release's ``llms.txt``), page
openings only (https://docs.gpustack.ai/gpustack-operator/v0.9.2/, each page cited beside its fact). v0.9.0
(-rc2/-rc3) has no page that could be read, so only 0.9.2 is documented; other patches of 0.9 are
assumed to share its API. The schema is *derived*: the pin's plus ``engine.image``
(``data/gpustack-operator/releases/v0.9/``).
"""

from __future__ import annotations

from gpu_fabric.gpustack.profiles.model import FieldNote, Profile
from gpu_fabric.gpustack.profiles.released import (
    ENGINE_VERSION_OPEN, docs_page, hints_before_0_11, released_sources, required_engine_image_rule)

RELEASE = "0.9.2"

PROFILE = Profile(
    line="0.9",
    releases=(RELEASE,),
    summary=("docs-derived from the v0.9.2 docs (no released CRD or webhook source read): engine.image required, "
             "instanceType; rules beyond the pin's are gpu-fabric's reading of the docs"),
    schema_folder="releases/v0.9",
    schema_basis="derived",
    pool_field="instanceType",
    engine_rule=required_engine_image_rule,
    hints=hints_before_0_11(),
    unconfirmed=(
        FieldNote("ModelDeployment", "spec.engine.version", ENGINE_VERSION_OPEN.format(version=RELEASE),
                  docs_page(RELEASE, "docs/modules/model-deployment/deployment/")),
        FieldNote("KVCacheBackend", "spec.connection.managed.members.fabricInterfaceCount",
                  "fabricInterfaceCount is not shown by any v0.9.2 page read (the seed walkthrough that uses it is "
                  "later than v0.9.2); without it each fabric member gets one interface",
                  docs_page(RELEASE, "docs/modules/kv-cache/backend/index.md")),
    ),
    sources=released_sources(RELEASE, {
        "engine.image required; roles name instanceType; 'Role images' replaces 'Runner image formula'":
            "docs/modules/model-deployment/deployment/",
        "prefill and decode admitted as one set; connectors under llm-d-router":
            "docs/modules/model-deployment/prefill-decode/",
        "KVCacheBackend: leader {}, members nodeSelector/medium/capacityPerMember": "docs/modules/kv-cache/backend/index.md",
        "KVCachePool backends[1] and quota.total; Binding quota.ceiling and immutable domain": "docs/modules/kv-cache/pool/",
        "vLLM minimum 0.29.0; Mooncake 0.3.13": "docs/modules/model-deployment/engine-versions/index.md",
    }),
    docs=docs_page(RELEASE, "docs/modules/model-deployment/deployment/"),
)
