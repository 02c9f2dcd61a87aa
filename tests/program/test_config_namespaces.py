"""The stack program refuses a misspelt ``gpu-fabric:`` namespace among the values the engine hands it (issue 37).

``render`` and ``check`` refuse ``gpufabric:modelDeployments`` in the stack file (config/stack_file.py); under
``pulumi preview`` the program reads the engine's configuration instead, which holds every namespace's values, and
must refuse the same key rather than render the stack without its deployments.
"""

from __future__ import annotations

import pytest

from gpu_fabric.config.base import ConfigError
from gpu_fabric.program.render import render_stack
from support.stack_configs import PROJECT_DIR, stack_document


@pytest.mark.parametrize("namespace", ["gpufabric", "gpu_fabric", "GPU-Fabric"])
def test_a_misspelt_namespace_is_refused_by_the_program_naming_the_key(namespace: str) -> None:
    config = stack_document("seed-rdma")["config"]
    config[f"{namespace}:modelDeployments"] = config.pop("gpu-fabric:modelDeployments")
    with pytest.raises(ConfigError) as refused:
        render_stack("seed-rdma", PROJECT_DIR, config=config)
    assert refused.value.pairs == [(f"{namespace}:modelDeployments",
                                    f"namespace {namespace!r} is not 'gpu-fabric:', so gpu-fabric would never read it "
                                    "(write gpu-fabric:modelDeployments) [configuration]")]


def test_other_namespaces_are_left_to_their_owners() -> None:
    config = stack_document("seed-rdma")["config"]
    config["kubernetes:context"] = "kind-dev"
    config["team:owner"] = "ml-platform"
    assert render_stack("seed-rdma", PROJECT_DIR, config=config).resources
