"""gpu-fabric: typed Pulumi components for RDMA/EFA GPU fabrics.

Layers (data flows down, nothing flows back up):

* ``gpu_fabric.spec``       -- pydantic models of the stack configuration, validated whole.
* pure planning             -- ``naming``, ``transfer``, ``efa``, ``catalog``, ``topology``, ``coverage``.
* ``gpu_fabric.builders``   -- plain dicts for every Kubernetes object (no Pulumi inside).
* ``gpu_fabric.aws``        -- plain dicts for every AWS resource input (no Pulumi inside).
* ``gpu_fabric.resources``  -- thin Pulumi ``ComponentResource`` classes that register those dicts.
* ``gpu_fabric.policies``   -- CrossGuard policies over the same pure analysis.
* ``gpu_fabric.cli``        -- ``gpu-fabric render | lint | check | efa-info``.

Importing the package stays cheap: nothing here imports Pulumi or boto3.
"""

__version__ = "0.1.0"
