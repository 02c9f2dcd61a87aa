"""``provider/kubernetes/``: gpu-fabric's Kubernetes components, the package ``pulumi package add`` can add
without the AWS provider plugin (docs/components.md#pulumi-package-add-without-the-aws-provider-plugin).

What keeps it so, offline: it never imports pulumi_aws, its schema refers to no ``aws`` type, each of its
components is served exactly as ``provider/`` serves it (a program moves between the two without edits),
and its requirements are pyproject.toml's, minus AWS. Under the real engine: tests/e2e/test_package_add.py.
"""

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from gpu_fabric.program.provider import KUBERNETES_COMPONENTS, PACKAGE_NAME, schema

PROJECT_DIR = Path(__file__).resolve().parents[2]
FOLDER = PROJECT_DIR / "provider" / "kubernetes"
GOLDEN = PROJECT_DIR / "tests" / "golden" / "provider-schema.json"

# Importing the provider's __main__ as `pulumi package add` runs it, with pulumi_aws (and boto3, which only the
# AWS catalog uses) made unimportable: its schema is printed instead of serving gRPC.
_PROBE = r"""
import importlib.abc, json, runpy, sys
class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("pulumi_aws", "boto3", "botocore"):
            raise ImportError(f"{name} imported by the Kubernetes provider")
sys.meta_path.insert(0, Refuse())
main = runpy.run_path(sys.argv[1], run_name="not_main")
provider = main["component_provider"](main["KUBERNETES_COMPONENTS"])
print(json.dumps({"schema": json.loads(provider.schema), "file": sys.modules["gpu_fabric"].__file__}))
"""


def test_the_plugin_runs_without_pulumi_aws_and_serves_its_own_revisions_components() -> None:
    done = subprocess.run([sys.executable, "-c", _PROBE, str(FOLDER / "__main__.py")], capture_output=True,
                          text=True, cwd=FOLDER, timeout=300)
    assert done.returncode == 0, done.stderr
    served = json.loads(done.stdout.splitlines()[-1])
    assert Path(served["file"]) == PROJECT_DIR / "components" / "gpu_fabric" / "__init__.py"
    assert served["schema"] == schema(KUBERNETES_COMPONENTS)


def test_the_schema_names_no_aws_package_or_type() -> None:
    served = schema(KUBERNETES_COMPONENTS)
    assert [d["name"] for d in served["dependencies"]] == ["kubernetes"]
    assert not re.search(r'"/aws/|"aws:', json.dumps(served))


def test_each_component_is_served_as_the_full_provider_serves_it() -> None:
    full = json.loads(GOLDEN.read_text())
    served = schema(KUBERNETES_COMPONENTS)
    assert sorted(served["resources"]) == sorted(f"{PACKAGE_NAME}:index:{c.__name__}" for c in KUBERNETES_COMPONENTS)
    assert {token: full["resources"][token] for token in served["resources"]} == served["resources"]
    assert {token: full["types"][token] for token in served["types"]} == served["types"]
    assert (served["name"], served["version"]) == (full["name"], full["version"])


def test_the_plugin_declares_the_package_name_and_python() -> None:
    import yaml

    plugin = yaml.safe_load((FOLDER / "PulumiPlugin.yaml").read_text())
    assert plugin == {"name": PACKAGE_NAME, "runtime": "python"}


def test_requirements_are_pyprojects_pins_without_aws() -> None:
    project = tomllib.loads((PROJECT_DIR / "pyproject.toml").read_text())["project"]["dependencies"]
    pins = {re.split(r"[<>=!~ ]", line, maxsplit=1)[0].lower(): line for line in project}
    lines = [line.strip() for line in (FOLDER / "requirements.txt").read_text().splitlines()
             if line.strip() and not line.lstrip().startswith("#")]
    assert lines, "provider/kubernetes/requirements.txt lists nothing"
    for line in lines:
        name = re.split(r"[<>=!~ ]", line, maxsplit=1)[0].lower()
        assert pins.get(name) == line, f"{line!r}: pyproject.toml pins {pins.get(name)!r}"
    assert not [line for line in lines if "aws" in line or "gpu-fabric" in line or line.startswith(".")], lines
