"""How an EFA instance type's GPUs and EFA devices share PCIe roots: the facts a DRA claim pairs them by (pure).

``DescribeInstanceTypes`` counts GPUs and EFA interfaces but says nothing of which sit on one PCIe root
(the ``resource.kubernetes.io/pcieRoot`` attribute NVIDIA's DRA driver and DRANET both publish). The table
below holds that layout for the types whose layout a public source states, or which follows from the counts
of a type whose GPUs each sit on their own PCIe switch; each row cites its basis. A ``deviceAllocation: dra``
pool of a type not listed is refused: a claim planned on a guessed layout either never schedules (a
``matchAttribute`` constraint no root can satisfy) or pairs devices across roots, GPUDirect RDMA off.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence


@dataclass(frozen=True)
class PcieTopology:
    """The devices one PCIe root of the instance type holds, and how many such roots it has."""

    roots: int
    """PCIe roots that hold GPUs (each the same)."""
    gpus_per_root: int
    efa_per_root: int
    source: str
    """Where the layout comes from."""

    @property
    def gpus(self) -> int:
        """GPUs per instance."""
        return self.roots * self.gpus_per_root

    @property
    def efa_interfaces(self) -> int:
        """EFA devices per instance."""
        return self.roots * self.efa_per_root

    def describe(self) -> str:
        """``4 PCIe roots of 2 GPUs + 1 EFA``."""
        return f"{self.roots} PCIe roots of {self.gpus_per_root} GPU{'s' if self.gpus_per_root > 1 else ''} + {self.efa_per_root} EFA"


_P4D = PcieTopology(4, 2, 1, "kubernetes-sigs/dranet examples/aws_eks_examples/gpu-efa (p4d.24xlarge: 4 PCIe roots, "
                    "2 GPUs + 1 EFA + 1 ENA per root)")
_P5 = PcieTopology(8, 1, 4, "EKS user guide 'Manage EFA devices' (p5: 4 EFA per GPU PCIe root); Perplexity, 'High-Performance "
                   "GPU Memory Transfer on AWS' (each PCIe switch connects one H100 and four 100 Gbps EFA)")

PCIE_TOPOLOGY: dict[str, PcieTopology] = {
    "p4d.24xlarge": _P4D,
    # p4de is p4d with 80 GB A100s: the same server and network (EC2 accelerated computing instance specifications).
    "p4de.24xlarge": PcieTopology(4, 2, 1, "as p4d.24xlarge (EC2 instance specifications: the same server with 80 GB A100s); "
                                  + _P4D.source),
    "p5.48xlarge": _P5,
    # p5e is p5 with H200s, the same 32 x 100 Gbps EFA layout (EC2 instance specifications).
    "p5e.48xlarge": PcieTopology(8, 1, 4, "as p5.48xlarge (EC2 instance specifications: H200s, the same 32 EFA network "
                                 "cards); " + _P5.source),
    # p5en: 8 H200 and 16 x 200 Gbps EFAv3 network cards (DescribeInstanceTypes: 8 GPUs, MaximumEfaInterfaces 16),
    # one GPU per PCIe switch as on p5, so two EFA per GPU root.
    "p5en.48xlarge": PcieTopology(8, 1, 2, "EC2 instance specifications (p5en.48xlarge: 8 H200, 16 EFAv3 network cards) with "
                                  "p5's one GPU per PCIe switch: 2 EFA per GPU root"),
}
"""Instance type -> the PCIe layout of its GPUs and EFA devices."""


def pcie_topology(instance_type: str) -> Optional[PcieTopology]:
    """The PCIe layout of ``instance_type``, or ``None`` when no source states it."""
    return PCIE_TOPOLOGY.get(instance_type)


def shared_topology(instance_types: Sequence[str]) -> tuple[Optional[PcieTopology], list[str]]:
    """The one layout of a node group's instance types, and the types whose layout is unknown.

    A node group of several types gets one set of claims, so every type must have the same layout; ``None``
    when one is unknown or two differ.
    """
    unknown = [t for t in instance_types if pcie_topology(t) is None]
    layouts = {(layout.roots, layout.gpus_per_root, layout.efa_per_root)
               for t in instance_types if (layout := pcie_topology(t)) is not None}
    if unknown or len(layouts) != 1:
        return None, unknown
    return pcie_topology(instance_types[0]), []
