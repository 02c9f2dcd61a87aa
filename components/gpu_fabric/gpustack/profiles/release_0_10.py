"""The 0.10 line (documented release ``0.10.0``): the API the seed walkthrough writes, and the default.

The seed's Step 3 ModelDeployment (``engine.image`` with ``roles[].instanceType``) and Step 4/5
KVCacheBackends (``fabricInterfaceCount``) have the shape of the v0.10.0 docs; the seed itself is the
operator's main docs captured between v0.9.2 and v0.10.0 (gpustack/gpustack-operator ``docs/walkthroughs/rdma/network-endpoints.md``: its Contents list
"Environment" with the old Summary, as no release's docs do), so it is this line's source
for ``fabricInterfaceCount``, which no v0.10.0 page opening shows. No schema change between the v0.9.2
and v0.10.0 page openings was found: the schema is the 0.9 line's (``data/gpustack-operator/releases/v0.10/``).
"""

from __future__ import annotations

from gpu_fabric.gpustack.profiles.model import FieldNote, Profile, Source
from gpu_fabric.gpustack.profiles.released import (
    ENGINE_VERSION_OPEN, docs_page, hints_before_0_11, released_sources, required_engine_image_rule)

RELEASE = "0.10.0"

PROFILE = Profile(
    line="0.10",
    releases=(RELEASE,),
    summary=("docs-derived from the v0.10.0 docs and the seed walkthrough (no released CRD or webhook source read): "
             "engine.image required, instanceType; the walkthrough's YAML matches it"),
    schema_folder="releases/v0.10",
    schema_basis="derived",
    pool_field="instanceType",
    engine_rule=required_engine_image_rule,
    hints=hints_before_0_11(),
    unconfirmed=(
        FieldNote("ModelDeployment", "spec.engine.version", ENGINE_VERSION_OPEN.format(version=RELEASE),
                  docs_page(RELEASE, "docs/modules/model-deployment/deployment/index.md")),
    ),
    sources=(
        *released_sources(RELEASE, {
            "engine.image required (minimal manifest as v0.9.2)": "docs/modules/model-deployment/deployment/index.md",
            "roles still name instanceType (engine.image gpustack/runner:cuda13.0-vllm0.30.0, instanceType elastic-gpu); "
            "elasticEp.width 2..64, no decrease": "docs/modules/model-deployment/elastic-ep/",
            "KVCacheBackend leader {}; exactly one of connection.managed/external": "docs/modules/kv-cache/backend/",
            "KVCachePool and Binding as v0.9.2": "docs/modules/kv-cache/pool/",
            "RDMA walkthrough with the Environment section": "docs/walkthroughs/rdma/network-endpoints/",
        }),
        Source("Step 3 ModelDeployment (engine.image, instanceType, interface 2) and Step 4/5 KVCacheBackends "
               "(fabricInterfaceCount 2); the message 'no effective RDMA or EFA transfer leg uses the requested interfaces'",
               "gpustack/gpustack-operator docs/walkthroughs/rdma/network-endpoints.md, the seed walkthrough "
               "(operator main docs between v0.9.2 and v0.10.0)"),
    ),
    docs=docs_page(RELEASE, "docs/modules/model-deployment/deployment/index.md"),
)
