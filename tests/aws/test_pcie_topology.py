"""The PCIe layout table agrees with EC2's own counts, and a node group gets one layout or none."""

import pytest

from gpu_fabric.aws.catalog.table import load_bundled_items
from gpu_fabric.aws.pcie_topology import PCIE_TOPOLOGY, pcie_topology, shared_topology


@pytest.mark.parametrize("instance_type", sorted(PCIE_TOPOLOGY))
def test_each_layout_has_the_gpus_and_efa_interfaces_ec2_reports(instance_type: str) -> None:
    item = load_bundled_items()[instance_type]
    layout = PCIE_TOPOLOGY[instance_type]
    assert layout.gpus == sum(gpu["Count"] for gpu in item["GpuInfo"]["Gpus"])
    assert layout.efa_interfaces == item["NetworkInfo"]["EfaInfo"]["MaximumEfaInterfaces"]
    assert layout.source


def test_the_issue_examples_pair_per_root() -> None:
    assert (pcie_topology("p5en.48xlarge").gpus_per_root, pcie_topology("p5en.48xlarge").efa_per_root) == (1, 2)
    assert (pcie_topology("p4d.24xlarge").gpus_per_root, pcie_topology("p4d.24xlarge").efa_per_root) == (2, 1)
    assert (pcie_topology("p5.48xlarge").gpus_per_root, pcie_topology("p5.48xlarge").efa_per_root) == (1, 4)


def test_a_node_group_of_types_with_different_or_unknown_layouts_has_none() -> None:
    assert shared_topology(["p5.48xlarge", "p5e.48xlarge"])[0] == pcie_topology("p5.48xlarge")
    assert shared_topology(["p5.48xlarge", "p5en.48xlarge"]) == (None, [])
    assert shared_topology(["p5en.48xlarge", "p6-b200.48xlarge"]) == (None, ["p6-b200.48xlarge"])
