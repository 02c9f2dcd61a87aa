"""Which AWS node arguments may be ``Output``s, apart from the components that register AWS resources.

``GpuFabric`` and ``KueuePool`` name these paths whether or not a stack has an AWS pool; keeping them
here lets a stack without one render without importing the AWS components (and ``pulumi_aws.ec2``).
"""

from typing import Any

from gpu_fabric.resources.inputs import ANY

AWS_NODES_DEFERRABLE: tuple[tuple[Any, ...], ...] = (
    ("cluster_name",), ("vpc_id",), ("availability_zone",), ("subnet_id",), ("node_role_arn",),
    ("capacity_reservation_id",), ("cluster_security_group_id",), ("security_group_ids", ANY), ("root_volume", "kms_key_id"),
    ("placement_group", "name"), ("release_version",), ("kubernetes_version",), ("efa_security_group_id",),
)
"""Argument paths of an EFA node group (or Karpenter pool) that may be ``Output``s (values other resources produce)."""
