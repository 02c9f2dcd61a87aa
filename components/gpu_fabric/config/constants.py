"""The fabric's names, written once: device resource keys, node labels, fabrics and resource type tokens.

Builders, planners, components, policies and the CLI import these; a rule that compares a name
compares against the same constant the builder wrote.
"""

from typing import Final

# -- extended resources the device plugins advertise -------------------------------------------------

EFA_RESOURCE: Final = "vpc.amazonaws.com/efa"
"""AWS EFA device plugin: one EFA interface."""
RDMA_RESOURCE: Final = "device.gpustack.ai/rdma"
"""GPUStack Device Manager: one exclusive RDMA NIC."""
RDMA_SHARED_RESOURCE: Final = "device.gpustack.ai/rdma.shared"
"""GPUStack Device Manager: a share of an RDMA NIC."""
RDMA_PARTITIONED_RESOURCE: Final = "device.gpustack.ai/rdma.partitioned"
"""GPUStack Device Manager: one SR-IOV virtual function."""

# -- node and object labels --------------------------------------------------------------------------

EFA_PRESENT_LABEL: Final = "vpc.amazonaws.com/efa.present"
"""Set to ``"true"`` on EFA nodes (our node groups set it; the EFA device plugin selects on it)."""
INSTANCE_TYPE_LABEL: Final = "node.kubernetes.io/instance-type"
OS_LABEL: Final = "kubernetes.io/os"
ARCH_LABEL: Final = "kubernetes.io/arch"
MANUFACTURER_LABEL: Final = "gpustack.ai/manufacturer"
"""Label of a Device Manager DaemonSet naming the accelerator manufacturer it serves."""
QUEUE_NAME_LABEL: Final = "kueue.x-k8s.io/queue-name"
"""The LocalQueue a workload enters."""
EFA_SECURITY_GROUP_TAG: Final = "gpu-fabric.io/efa-security-group"
"""AWS tag of an EFA domain's security group (``EfaDomain`` writes it; the policy pack knows the group by it)."""
DEVICE_ALLOCATION_LABEL: Final = "gpu-fabric.io/device-allocation"
"""Set to ``"dra"`` on the nodes of a ``deviceAllocation: dra`` pool the stack provisions: the stack's own EFA
device plugin stays off them by this label (a device plugin beside a DRA driver oversubscribes the devices)."""
CLUSTER_TAG_PREFIX: Final = "kubernetes.io/cluster/"
"""AWS tag prefix that marks a cluster's own security group (refused on the EFA security group)."""

# -- fabrics ---------------------------------------------------------------------------------------

FABRIC_EFA: Final = "efa"
FABRIC_RDMA: Final = "rdma"
FABRIC_NONE: Final = "none"
FABRICS: Final = (FABRIC_EFA, FABRIC_RDMA, FABRIC_NONE)

# -- device allocation -----------------------------------------------------------------------------

DEVICE_ALLOCATION_PLUGIN: Final = "plugin"
"""Devices advertised by device plugins as extended resources (``nvidia.com/gpu``, ``vpc.amazonaws.com/efa``)."""
DEVICE_ALLOCATION_DRA: Final = "dra"
"""Devices allocated through Dynamic Resource Allocation (``resource.k8s.io/v1``) ResourceClaims."""
NVIDIA_GPU_RESOURCE: Final = "nvidia.com/gpu"
"""NVIDIA's GPU device plugin: one whole GPU."""

# -- AWS resource type tokens (pulumi-aws) ---------------------------------------------------------

SECURITY_GROUP_TYPE: Final = "aws:ec2/securityGroup:SecurityGroup"
INGRESS_RULE_TYPE: Final = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
EGRESS_RULE_TYPE: Final = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"
LEGACY_RULE_TYPE: Final = "aws:ec2/securityGroupRule:SecurityGroupRule"
PLACEMENT_GROUP_TYPE: Final = "aws:ec2/placementGroup:PlacementGroup"
LAUNCH_TEMPLATE_TYPE: Final = "aws:ec2/launchTemplate:LaunchTemplate"
NODE_GROUP_TYPE: Final = "aws:eks/nodeGroup:NodeGroup"


# -- the GPUStack operator's API versions (see gpu_fabric.gpustack.operator_pin for the commits) --

SERVED_CRD_VERSION: Final = "v1alpha1"
"""The only version the CRDs serve (also the storage version); the admission webhooks match it."""
AGGREGATED_VERSION = "v1"
"""The operator worker's aggregated API (APIService ``v1.worker.gpustack.ai``); which kinds it serves
depends on the operator build, and it is Available only while the worker runs."""
API_VERSIONS = (SERVED_CRD_VERSION, AGGREGATED_VERSION)
DEFAULT_API_VERSION: Final = SERVED_CRD_VERSION
"""What gpu-fabric writes unless a stack chooses otherwise (docs/gpustack-api-version.md says why)."""
DEFAULT_GPUSTACK_OPERATOR = "0.10.0"
"""The operator release a stack assumes unless it says otherwise: the 0.10 line, the newest release whose
API the seed walkthrough's YAML matches (``engine.image``, ``roles[].instanceType``). Which versions
are known, and what each means, is :mod:`gpu_fabric.gpustack.profiles`; docs/gpustack-api-version.md.
It lives here, not beside the configuration model, so that the CLI's help and the profiles need no pydantic."""
