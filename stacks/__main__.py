"""The one gpu-fabric stack: ``gpu-fabric:*`` configuration -> ``GpuFabric``.

``pulumi up`` runs this with the selected stack's ``Pulumi.<stack>.yaml``; ``gpu-fabric render``
runs it under Pulumi's mock runtime with the same file. The whole configuration is validated
before any resource is registered.
"""

from gpu_fabric.program.stack import build_stack

build_stack()
