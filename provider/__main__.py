"""The gpu-fabric component provider: every component, for TypeScript, Go, .NET, Java and YAML programs.

Pulumi starts this program (``PulumiPlugin.yaml``: ``runtime: python``) and talks gRPC to it;
``pulumi package add <git URL>/provider@v<version>`` generates an SDK from the schema it serves. The
schema comes from the components' own annotations (``pulumi.provider.experimental``'s analyzer):
snake_case ``Args`` keys appear camelCase, ``pulumi.Input`` values are not plain, ``Required`` keys
are required. The provider is ``gpu_fabric.program.provider.component_provider()``: the same
``ComponentProvider`` ``component_provider_host`` would build, whose ``Construct`` answers every
refusal as an ``InputPropertiesError`` naming the camelCase property.
"""

import sys

from pulumi.provider import main

from gpu_fabric.program.provider import component_provider

if __name__ == "__main__":
    main(component_provider(), sys.argv[1:])
