"""Offline answers for the engine calls a gpu-fabric stack makes under the mock runtime."""

from __future__ import annotations

from typing import Any

import pulumi


_COMPUTED = {
    "aws:ec2/placementGroup:PlacementGroup": {"name": lambda args: args.name},
    "aws:ec2/launchTemplate:LaunchTemplate": {"name": lambda args: args.name, "latestVersion": lambda args: 1},
    "aws:ec2/securityGroup:SecurityGroup": {"name": lambda args: args.name},
    "aws:eks/nodeGroup:NodeGroup": {"nodeGroupName": lambda args: args.name,
                                    "arn": lambda args: f"arn:aws:eks:offline:000000000000:nodegroup/{args.name}"},
}


class OfflineMocks(pulumi.runtime.Mocks):
    """Record every resource; answer data sources with deterministic offline values."""

    def __init__(self, recorded: list[tuple[str, str, dict[str, Any], bool]], preview: bool = False):
        self._recorded = recorded
        self._preview = preview

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        self._recorded.append((args.typ, args.name, dict(args.inputs), bool(args.custom)))
        # A stable id and the inputs as outputs, plus what the provider would compute that other
        # resources read (auto-names, template versions): enough for references to resolve.
        outputs = dict(args.inputs)
        if self._preview:
            # At preview nothing exists yet: no id, and only the inputs are known outputs.
            return "", outputs
        outputs.update({key: value(args) for key, value in _COMPUTED.get(args.typ, {}).items() if key not in outputs})
        return f"{args.name}-id", outputs

    def call(self, args: pulumi.runtime.MockCallArgs):
        if args.token == "aws:eks/getCluster:getCluster":
            # A placeholder endpoint and CA: the kubeconfig shape is real, the cluster is not.
            name = args.args.get("name", "cluster")
            return {"name": name, "endpoint": f"https://{name}.eks.offline.invalid",
                    "certificateAuthorities": [{"data": "T0ZGTElORQ=="}], "arn": f"arn:aws:eks:offline:000000000000:cluster/{name}"}
        return {}
