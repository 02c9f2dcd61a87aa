"""GPUStack InstanceType names and the accelerator manufacturers they carry.

GPUStack names an InstanceType after the hardware it discovers: ``gpustack--<manufacturer>-<model>-
<os>-<arch>`` (``gpustack--nvidia-a10g-linux-amd64``), or with CPU-aware naming
``gpustack--<cpu>--<accelerator>-<os>-<arch>``. A pool's name is such a name, so the configuration
models read it here; the operator's transfer analysis reads the same function.
"""

from __future__ import annotations

from dataclasses import dataclass

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


OPERATING_SYSTEMS = ("linux", "windows")
ARCHITECTURES = ("amd64", "arm64", "ppc64le", "s390x")
"""``kubernetes.io/os`` and ``kubernetes.io/arch`` values a GPUStack InstanceType name ends with."""

GENERIC_GROUP = "generic"
"""The group GPUStack names CPU pools with (``gpustack--generic-linux-amd64``)."""


@dataclass(frozen=True)
class InstanceTypeName:
    """The parts of a GPUStack InstanceType name: ``gpustack--[<cpu>--]<accelerator>-<os>-<arch>``.

    ``accelerator`` is GPUStack's ``aKey`` (``<manufacturer>-<id>``, e.g. ``nvidia-a10g``) or
    ``generic`` for a CPU pool (gpustack/gpustack-operator ``docs/modules/devices/scheduling.md``, "Naming and
    grouping"; ``api/worker/v1alpha1/instance_type.go``). ``cpu`` is the ``gKey`` of CPU-aware naming, if any.
    """

    accelerator: str
    os: str
    arch: str
    cpu: str | None = None

    @property
    def manufacturer(self) -> str | None:
        """The accelerator manufacturer, or ``None`` for a CPU pool (``generic``) or an unknown vendor."""
        candidate = self.accelerator.split("-", 1)[0]
        return candidate if candidate in MANUFACTURERS else None

    @property
    def model(self) -> str | None:
        """The accelerator id after the manufacturer (``a10g``), or ``None`` for a CPU pool."""
        if self.accelerator == GENERIC_GROUP or "-" not in self.accelerator:
            return None
        return self.accelerator.split("-", 1)[1]



def parse_instance_type_name(name: str) -> InstanceTypeName | None:
    """Split a GPUStack InstanceType name into its parts; ``None`` when ``name`` is not in that form."""
    if not name.startswith("gpustack--"):
        return None
    body = name[len("gpustack--"):]
    cpu: str | None = None
    if "--" in body:
        cpu, body = body.rsplit("--", 1)
    pieces = body.rsplit("-", 2)
    if len(pieces) != 3:
        return None
    accelerator, os_name, arch = pieces
    if os_name not in OPERATING_SYSTEMS or arch not in ARCHITECTURES or not accelerator:
        return None
    return InstanceTypeName(accelerator, os_name, arch, cpu)


def instance_type_name(manufacturer: str | None, model: str | None, os_name: str, arch: str) -> str:
    """The default-naming InstanceType name of hardware: ``gpustack--<manufacturer>-<model>-<os>-<arch>``.

    Without an accelerator the CPU pool's ``gpustack--generic-<os>-<arch>``. ``model`` is used as
    given (lowercase); how GPUStack slugs a device's product name into the id is not stated by the
    sources read (its documented example ``nvidia-a10g`` is EC2's ``A10G`` lowercased).
    """
    accelerator = f"{manufacturer}-{model}" if manufacturer and model else GENERIC_GROUP
    return f"gpustack--{accelerator}-{os_name}-{arch}"
