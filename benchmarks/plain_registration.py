"""The floor the render benchmarks stand against: a plain Pulumi program that registers a render's resources.

It reads a render's ``resources.json`` (or ``render_fleet.py --dump``) and registers every resource in it,
parents first, under Pulumi's own mock runtime (``pulumi.runtime.set_mocks``), with no gpu-fabric code and the
interpreter's defaults, then prints its figures as JSON: the resources registered, CPU and wall seconds of the
registration, the process's peak RSS.

- plain (``render_fleet.py``'s floor): every custom resource as ``pulumi.CustomResource`` of its type.
- ``--typed`` (``startup_and_render.py``'s lower bound): each custom resource made from its SDK class
  (``pulumi_kubernetes.apps.v1.DaemonSet``, ``pulumi_aws.ec2.LaunchTemplate``, ...) with the rendered inputs as
  keyword arguments, so the SDK does what it does for a real program: it evaluates the class's input types (for
  an ``apps/v1`` object that imports ``core/v1``'s), serializes them and registers.
- ``--paused``: the collector paused first, as gpu-fabric pauses it for a render.
- ``--frozen-exit``: the heap frozen before the interpreter exits, as the ``gpu-fabric`` console script freezes it
  (:func:`gpu_fabric.interpreter.collector.no_collection_at_exit`; this program stays free of gpu-fabric code).

    python benchmarks/plain_registration.py RESOURCES_JSON [--typed] [--paused] [--frozen-exit]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib
import json
import re
import resource
import time
from pathlib import Path
from typing import Any, Optional

import pulumi

_KUBERNETES_GROUPS = {"core": "core", "apps": "apps", "rbac.authorization.k8s.io": "rbac",
                      "coordination.k8s.io": "coordination"}


def class_path(resource_type: str) -> Optional[str]:
    """The SDK class a registered resource type is, as a dotted path (None for gpu-fabric's components)."""
    package, module, kind = resource_type.split(":")
    if package == "pulumi" and module == "providers":
        return f"pulumi_{kind}.Provider"
    if package == "kubernetes":
        group, version = module.split("/")
        if group in _KUBERNETES_GROUPS:
            return f"pulumi_kubernetes.{_KUBERNETES_GROUPS[group]}.{version}.{kind}"
        return "pulumi_kubernetes.apiextensions." + ("CustomResourcePatch" if kind.endswith("Patch") else "CustomResource")
    if package == "aws":
        return f"pulumi_aws.{module.split('/')[0]}.{kind}"
    return None


class _Mocks(pulumi.runtime.Mocks):
    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict]:
        return f"{args.name}_id", args.inputs

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict:
        return {}


def _snake(key: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


def _made(entry: dict[str, Any], opts: pulumi.ResourceOptions, typed: bool) -> pulumi.Resource:
    if not entry["custom"]:
        return pulumi.ComponentResource(entry["type"], entry["name"], None, opts)
    path = class_path(entry["type"]) if typed else None
    if path is None:
        return pulumi.CustomResource(entry["type"], entry["name"], dict(entry["inputs"]), opts)
    module, _, name = path.rpartition(".")
    kwargs = {_snake(key): value for key, value in entry["inputs"].items()}
    return getattr(importlib.import_module(module), name)(entry["name"], opts=opts, **kwargs)


def register_all(listed: list[dict[str, Any]], typed: bool) -> dict[str, pulumi.Resource]:
    """Register ``listed`` (entries of a ``resources.json``), parents first, in the running Pulumi program:
    under the mocks (:func:`register`) or as the program of a real engine (``engine_preview.py``'s bare program)."""
    parents = {entry["urn"]: entry["parent"] for entry in listed}

    def depth(urn: str) -> int:
        return 0 if not parents.get(urn) else 1 + depth(parents[urn])

    registered: dict[str, pulumi.Resource] = {}
    for entry in sorted(listed, key=lambda entry: (depth(entry["urn"]), entry["urn"])):
        registered[entry["urn"]] = _made(entry, pulumi.ResourceOptions(parent=registered.get(entry["parent"])), typed)
    return registered


def register(listed: list[dict[str, Any]], typed: bool) -> int:
    """Register ``listed`` under Pulumi's mock runtime, to the end; return how many."""
    pulumi.runtime.set_mocks(_Mocks(), project="floor", stack="floor", preview=False)
    registered = register_all(listed, typed)

    async def drain() -> None:  # every registration the program started, to its end
        while pending := [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]:
            await asyncio.gather(*pending)

    loop = asyncio.get_event_loop()
    loop.run_until_complete(drain())
    loop.close()
    return len(registered)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("resources", type=Path, help="a render's resources.json")
    parser.add_argument("--typed", action="store_true", help="make each custom resource from its SDK class")
    parser.add_argument("--paused", action="store_true", help="the collector paused, as in a render")
    parser.add_argument("--frozen-exit", action="store_true",
                        help="freeze the heap before exiting, as the gpu-fabric console script does")
    args = parser.parse_args()
    if args.paused:
        gc.disable()
    listed = json.loads(args.resources.read_text())
    started_cpu, started_wall = time.process_time(), time.perf_counter()
    count = register(listed, args.typed)
    print(json.dumps({"resources": count, "cpu": round(time.process_time() - started_cpu, 3),
                      "seconds": round(time.perf_counter() - started_wall, 3),
                      "peak_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}))
    if args.frozen_exit:
        gc.freeze()


if __name__ == "__main__":
    main()
