"""The stack program's body: read ``gpu-fabric:*`` configuration, build the ``GpuFabric``.

Kept in the package (``stacks/__main__.py`` only calls :func:`build_stack`) so that the program
that ``pulumi up`` runs and the one ``gpu-fabric render`` runs under mocks are the same code.
"""

from __future__ import annotations

import json
from typing import Any

import pulumi

from gpu_fabric.resources.fabric import GpuFabric
from gpu_fabric.spec.base import ConfigError
from gpu_fabric.spec.fabric import CONFIG_NAMESPACE, config_keys, load_config


def _all_config_keys() -> set[str]:
    from pulumi.runtime import config as runtime_config

    return set(runtime_config.CONFIG.get()) | set(runtime_config.get_config_env())


def read_configuration() -> dict[str, Any]:
    """Return the ``gpu-fabric:*`` values of the selected stack, decoded, with unknown keys refused."""
    known = config_keys()
    prefix = f"{CONFIG_NAMESPACE}:"
    unknown = sorted(key[len(prefix):] for key in _all_config_keys() if key.startswith(prefix) and key[len(prefix):] not in known)
    if unknown:
        raise ConfigError((key, f"unknown configuration key; known keys: {', '.join(known)}") for key in unknown)
    config = pulumi.Config(CONFIG_NAMESPACE)
    values: dict[str, Any] = {}
    for key in known:
        raw = config.get(key)
        if raw is None:
            continue
        try:
            # Structured values arrive JSON-encoded; plain strings (``queueOwner: gpustack``) do not.
            values[key] = json.loads(raw)
        except ValueError:
            values[key] = raw
    return values


def build_stack(name: str = "fabric") -> GpuFabric:
    """Validate the whole configuration, then register the fabric and export its entry points."""
    values = read_configuration()
    load_config(values)  # every problem, with its path, before the first resource exists
    fabric = GpuFabric(name, values)
    pulumi.export("localQueues", fabric.local_queues)
    return fabric
