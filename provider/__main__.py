"""The gpu-fabric component provider: every component, for TypeScript, Go, .NET, Java and YAML programs.

Pulumi starts this program (``PulumiPlugin.yaml``: ``runtime: python``) and talks gRPC to it;
``pulumi package add <git URL>/provider@v<version>`` generates an SDK from the schema it serves. The
schema comes from the components' own annotations (``pulumi.provider.experimental``'s analyzer):
snake_case ``Args`` keys appear camelCase, ``pulumi.Input`` values are not plain, ``Required`` keys
are required.
"""

from pulumi.provider.experimental import component_provider_host

import gpu_fabric
from gpu_fabric.program.provider import COMPONENTS, PACKAGE_NAME

if __name__ == "__main__":
    component_provider_host(COMPONENTS, name=PACKAGE_NAME, version=gpu_fabric.__version__)
