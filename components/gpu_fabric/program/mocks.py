"""Offline answers for the engine calls a gpu-fabric stack makes under the mock runtime.

The resources gpu-fabric's own components create get the few computed outputs other resources
read (auto-names, template versions, ARNs), deterministic offline. Any other ``aws:*`` resource
a team's own program creates (a VPC, a cluster, a role) is answered from its pulumi-aws class:
every output the provider computes and the program did not give is there, a name or ARN
deterministic offline, the rest *unknown* (what the engine itself answers at preview). A program
that reads ``cluster.endpoint`` or ``role.arn`` therefore renders and is checked, instead of
validating ``None`` and failing with ``Output`` reprs.
"""

from __future__ import annotations

import importlib
from typing import Any, Optional

import pulumi


_COMPUTED = {
    "aws:ec2/placementGroup:PlacementGroup": {"name": lambda args: args.name},
    "aws:ec2/launchTemplate:LaunchTemplate": {"name": lambda args: args.name, "latestVersion": lambda args: 1},
    "aws:ec2/securityGroup:SecurityGroup": {"name": lambda args: args.name},
    "aws:eks/nodeGroup:NodeGroup": {"nodeGroupName": lambda args: args.name,
                                    "arn": lambda args: f"arn:aws:eks:offline:000000000000:nodegroup/{args.name}"},
}


# Services whose ARNs carry no region (IAM: arn:aws:iam::123456789012:role/name; AWS General Reference, "ARN format").
_GLOBAL_SERVICES = frozenset({"iam", "s3", "cloudfront", "route53", "organizations", "globalaccelerator"})


# EC2 resource ids are "<prefix>-<17 hex digits>" (EC2 API Reference, "Resource IDs"); the stack's
# syntax checks (gpu_fabric.config.syntax) read these shapes, so offline ids must have them too.
_EC2_ID_PREFIXES = {
    "aws:ec2/vpc:Vpc": "vpc", "aws:ec2/subnet:Subnet": "subnet", "aws:ec2/securityGroup:SecurityGroup": "sg",
    "aws:ec2/internetGateway:InternetGateway": "igw", "aws:ec2/routeTable:RouteTable": "rtb",
    "aws:ec2/natGateway:NatGateway": "nat", "aws:ec2/eip:Eip": "eipalloc", "aws:ec2/instance:Instance": "i",
    "aws:ec2/networkInterface:NetworkInterface": "eni", "aws:ec2/capacityReservation:CapacityReservation": "cr",
    "aws:ec2/vpcEndpoint:VpcEndpoint": "vpce", "aws:ec2/launchTemplate:LaunchTemplate": "lt",
}


def offline_id(type_token: str, name: str) -> str:
    """The id a resource gets offline: EC2's id shape where the type has one, else ``<name>-id``."""
    import hashlib

    prefix = _EC2_ID_PREFIXES.get(type_token)
    if prefix is None:
        return f"{name}-id"
    return f"{prefix}-{hashlib.sha256(name.encode()).hexdigest()[:17]}"


def _aws_class(type_token: str) -> Optional[type]:
    """The pulumi-aws class of ``aws:<module>/<name>:<Class>`` (``None`` when it is not one)."""
    package, _, rest = type_token.partition(":")
    module, _, class_name = rest.partition(":")
    if package != "aws" or not class_name:
        return None
    folder = module.split("/", 1)[0]
    try:
        found = importlib.import_module("pulumi_aws" if folder == "index" else f"pulumi_aws.{folder}")
    except ImportError:
        return None
    cls = getattr(found, class_name, None)
    return cls if isinstance(cls, type) else None


def provider_outputs(type_token: str, name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """What the AWS provider would add to ``inputs`` for a resource of ``type_token``, offline.

    Every output property of the pulumi-aws class (``pulumi.getter`` names) that ``inputs`` lack:
    ``name`` the logical name (Pulumi's auto-name, without its random suffix), ``arn`` an ARN in
    the offline account, every other one unknown.
    """
    from pulumi.runtime import rpc

    cls = _aws_class(type_token)
    if cls is None:
        return {}
    service = type_token.split(":")[1].split("/", 1)[0]
    kind = type_token.rsplit(":", 1)[-1].lower()
    outputs: dict[str, Any] = {}
    for attribute in vars(cls).values():
        key = getattr(getattr(attribute, "fget", None), "_pulumi_name", None)
        if not isinstance(attribute, property) or not isinstance(key, str) or key in inputs:
            continue
        if key == "name":
            outputs[key] = name
        elif key == "arn":
            region = "" if service in _GLOBAL_SERVICES else "offline"
            outputs[key] = f"arn:aws:{service}:{region}:000000000000:{kind}/{name}"
        else:
            outputs[key] = rpc.UNKNOWN
    return outputs


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
        if args.typ in _COMPUTED:
            # gpu-fabric's own resources: their offline answers are part of the example renders.
            outputs.update({key: value(args) for key, value in _COMPUTED[args.typ].items() if key not in outputs})
            return f"{args.name}-id", outputs
        outputs.update(provider_outputs(args.typ, args.name, outputs))
        return offline_id(args.typ, args.name), outputs

    def call(self, args: pulumi.runtime.MockCallArgs):
        if args.token == "aws:eks/getCluster:getCluster":
            # A placeholder endpoint and CA: the kubeconfig shape is real, the cluster is not.
            name = args.args.get("name", "cluster")
            return {"name": name, "endpoint": f"https://{name}.eks.offline.invalid",
                    "certificateAuthorities": [{"data": "T0ZGTElORQ=="}], "arn": f"arn:aws:eks:offline:000000000000:cluster/{name}"}
        return {}
