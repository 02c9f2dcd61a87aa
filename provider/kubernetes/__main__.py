"""gpu-fabric's Kubernetes components as a provider that needs no AWS provider plugin.

``pulumi package add`` of a source-based plugin asks the plugin's language host which packages its
environment holds (``GetRequiredPackages``) and fetches a provider plugin for every one that is not in the
plugin cache, whether or not automatic plugin acquisition is off (pulumi v3.274.1,
pkg/cmd/pulumi/packageinstallation/packageinstallation.go, ``gatherPackageDependenciesStep``). An
environment with gpu-fabric installed holds pulumi-aws (one of its dependencies), so ``../`` needs the AWS
provider plugin there. This folder serves the components that register Kubernetes objects only
(``gpu_fabric.program.provider.KUBERNETES_COMPONENTS``) from the package source of its own revision,
``../../components``, with the dependencies of ``requirements.txt``: the only provider plugin it needs is
Kubernetes, which ``scripts/engine-tools`` builds.
"""

import sys
from pathlib import Path

# The components of this very checkout or tag, ahead of any gpu-fabric installed in the interpreter: the
# package a program adds at v<version> is the code of v<version>.
SOURCE = Path(__file__).resolve().parents[2] / "components"
if not (SOURCE / "gpu_fabric" / "__init__.py").is_file():
    sys.exit(f"gpu-fabric's Kubernetes provider: {SOURCE}/gpu_fabric is missing; this folder runs only "
             "inside a checkout (or a git clone at a tag) of gpu-fabric")
sys.path.insert(0, str(SOURCE))

from pulumi.provider import main  # noqa: E402

from gpu_fabric.program.provider import KUBERNETES_COMPONENTS, component_provider  # noqa: E402

if __name__ == "__main__":
    main(component_provider(KUBERNETES_COMPONENTS), sys.argv[1:])
