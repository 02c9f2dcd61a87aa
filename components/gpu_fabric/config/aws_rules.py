"""EFA node-group rules that configuration validators, builders and policies all apply: written once.

* One subnet: EFA traffic does not cross subnets or availability zones (EC2 User Guide, "Elastic
  Fabric Adapter": all instances of an EFA group in one subnet; eksctl's nodegroup validation,
  pulumi/pulumi-eks#1593).
* No ``kubernetes.io/cluster/*`` tag on the EFA security group: the AWS Load Balancer Controller
  requires exactly one cluster-tagged group per interface (eksctl#8475).
"""

from typing import Mapping, Optional

from gpu_fabric.config.constants import CLUSTER_TAG_PREFIX

ONE_SUBNET_REASON = "EFA traffic does not cross subnets or availability zones"


def subnet_count_problem(count: int) -> Optional[str]:
    """Why ``count`` subnets cannot carry an EFA node group, or ``None`` for exactly one."""
    if count == 1:
        return None
    return f"an EFA node group needs exactly one subnet, got {count} ({ONE_SUBNET_REASON})"


def cluster_tag_keys(tags: Mapping[str, str]) -> list[str]:
    """The ``kubernetes.io/cluster/*`` keys among ``tags``, sorted."""
    return sorted(key for key in tags if key.startswith(CLUSTER_TAG_PREFIX))


def cluster_tag_problem(tags: Mapping[str, str]) -> Optional[str]:
    """Why ``tags`` cannot go on the EFA security group, or ``None``."""
    keys = cluster_tag_keys(tags)
    if not keys:
        return None
    return (f"tags {keys} would mark the EFA security group as a cluster security group; the AWS Load Balancer "
            "Controller requires exactly one kubernetes.io/cluster-tagged group per interface")
