"""GPUStack InstanceType names and the accelerator manufacturers they carry.

GPUStack names an InstanceType after the hardware it discovers: ``gpustack--<manufacturer>-<model>-
<os>-<arch>`` (``gpustack--nvidia-a10g-linux-amd64``), or with CPU-aware naming
``gpustack--<cpu>--<accelerator>-<os>-<arch>``. A pool's name is such a name, so the configuration
models read it here; the operator's transfer analysis reads the same function.
"""

from __future__ import annotations

MANUFACTURERS = ("amd", "ascend", "cambricon", "hygon", "iluvatar", "metax", "mthreads", "nvidia", "thead")
"""The accelerator manufacturers GPUStack names (its device-plugin and Device Manager vendors)."""


def manufacturer_of(instance_type: str) -> str | None:
    """Return the accelerator manufacturer named by a GPUStack InstanceType, or ``None``.

    ``gpustack--nvidia-a10g-linux-amd64`` -> ``nvidia``; with CPU-aware naming
    (``gpustack--<cpu>--<accelerator>-<os>-<arch>``) the accelerator part is the last one.
    CPU pools (``gpustack--generic-...``) have no manufacturer.
    """
    if not instance_type.startswith("gpustack--"):
        return None
    accelerator_part = instance_type[len("gpustack--"):].split("--")[-1]
    candidate = accelerator_part.split("-", 1)[0]
    return candidate if candidate in MANUFACTURERS else None
