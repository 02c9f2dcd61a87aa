"""Offline answers for the engine calls a gpu-fabric stack makes under the mock runtime."""

from __future__ import annotations

from typing import Any

import pulumi


class OfflineMocks(pulumi.runtime.Mocks):
    """Record every resource; answer data sources with deterministic offline values."""

    def __init__(self, recorded: list[tuple[str, str, dict[str, Any], bool]]):
        self._recorded = recorded

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        self._recorded.append((args.typ, args.name, dict(args.inputs), bool(args.custom)))
        # A stable id and the inputs as outputs: enough for names and references to resolve.
        return f"{args.name}-id", dict(args.inputs)

    def call(self, args: pulumi.runtime.MockCallArgs):
        if args.token == "aws:eks/getCluster:getCluster":
            # A placeholder endpoint and CA: the kubeconfig shape is real, the cluster is not.
            name = args.args.get("name", "cluster")
            return {"name": name, "endpoint": f"https://{name}.eks.offline.invalid",
                    "certificateAuthorities": [{"data": "T0ZGTElORQ=="}], "arn": f"arn:aws:eks:offline:000000000000:cluster/{name}"}
        return {}
