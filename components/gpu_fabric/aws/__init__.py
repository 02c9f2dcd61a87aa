"""AWS resource inputs as plain dicts keyed with the Pulumi engine's camelCase input names.

A CrossGuard policy sees exactly these shapes in ``args.props``; the components turn them into
pulumi-aws keyword arguments with ``to_pulumi_kwargs``, so both read one shape. Nothing here
imports Pulumi.

* ``gpu_fabric.aws.node_group`` -- launch template, EFA security group and rules, placement group,
  EKS node group inputs, and the checks that run before any of them is registered.
* ``gpu_fabric.aws.user_data``  -- nodeadm MIME multipart and Bottlerocket TOML user data.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

# Values under these keys are user maps (tag and label keys such as "kubernetes.io/role"), not
# input names, so their keys must reach AWS unchanged.
FREE_FORM_MAP_KEYS = frozenset({"tags", "tagsAll", "labels"})

_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def snake_case(name: str) -> str:
    """``networkCardIndex`` -> ``network_card_index``; ``ipv4AddressCount`` -> ``ipv4_address_count``."""
    return _CAMEL_BOUNDARY.sub("_", name).lower()


def to_pulumi_kwargs(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """Convert engine-named (camelCase) inputs into pulumi-aws keyword arguments (snake_case).

    Nested objects and lists are converted too; the contents of tag and label maps are not.
    Values (including ``pulumi.Output``s) pass through untouched.
    """
    return {snake_case(key): _convert(key, value) for key, value in inputs.items()}


def _convert(key: str, value: Any) -> Any:
    if key in FREE_FORM_MAP_KEYS:
        return value
    if isinstance(value, Mapping):
        return to_pulumi_kwargs(value)
    if isinstance(value, list):
        return [to_pulumi_kwargs(item) if isinstance(item, Mapping) else item for item in value]
    return value
