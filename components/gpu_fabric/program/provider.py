"""The components the multi-language provider (``provider/__main__.py``) hosts, its schema, and its errors.

Another language's program reaches a component through ``Construct``. Every refusal it can get
is a ``pulumi.InputPropertiesError`` (gRPC ``INVALID_ARGUMENT`` with one property error per
problem) naming the property as the schema spells it (camelCase), never a Python stack:

* an unknown type token: the known tokens are listed;
* a value the engine does not know yet (``pulumi.output.Unknown``, another resource's output) or
  an ``Output`` where the schema says ``plain``: "must be plain";
* a value of the wrong type (a string where the schema wants an integer, a list item that is not
  an object ...);
* the component's own validation (``ConfigError``/``InvalidInputError``), its paths turned camelCase.

Checked against the served schema itself (one source of truth), before any component is built.
"""

import re
from typing import Any, Mapping, Optional

import pulumi
from pulumi.output import Unknown as OutputUnknown

from gpu_fabric import __version__
from gpu_fabric.config.base import ConfigError
from gpu_fabric.resources.device_plugins import EfaDevicePlugin, GpuStackDeviceManager
from gpu_fabric.resources.kubelet_topology_agent import KubeletTopologyAgent
from gpu_fabric.resources.kueue_pool import KueuePool
from gpu_fabric.resources.kv_cache import KVCache
from gpu_fabric.resources.model_deployment import ModelDeployment

PACKAGE_NAME = "gpu-fabric"
"""The package name: type tokens are ``gpu-fabric:index:<Component>``."""

KUBERNETES_COMPONENTS: list[type[pulumi.ComponentResource]] = [
    KueuePool, KVCache, ModelDeployment, EfaDevicePlugin, GpuStackDeviceManager, KubeletTopologyAgent,
]
"""The components that register Kubernetes objects only, served by ``provider/kubernetes/``.

None of them imports ``pulumi_aws``, and the schema they make refers to no ``aws`` type, so that plugin
runs in an environment without pulumi-aws, and ``pulumi package add`` of it never asks for the AWS
provider plugin (docs/components.md#pulumi-package-add-without-the-aws-provider-plugin)."""


def all_components() -> list[type[pulumi.ComponentResource]]:
    """Every component other languages can construct (``provider/``), in the schema's order.

    The AWS components are imported here, not at module level, so that ``provider/kubernetes/`` can use
    this module where ``pulumi_aws`` is not installed."""
    from gpu_fabric.resources.efa_domain import EfaDomain
    from gpu_fabric.resources.efa_node_group import EfaNodeGroup
    from gpu_fabric.resources.fabric import GpuFabric
    from gpu_fabric.resources.karpenter_pool import KarpenterEfaPool

    return [GpuFabric, EfaNodeGroup, KueuePool, KVCache, ModelDeployment, EfaDevicePlugin, GpuStackDeviceManager,
            KubeletTopologyAgent, EfaDomain, KarpenterEfaPool]


def __getattr__(name: str) -> Any:
    # ``COMPONENTS`` stays importable as before (PEP 562 module __getattr__), built on first use.
    if name == "COMPONENTS":
        return all_components()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

_ENGINE_UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"  # pulumi/runtime/rpc.py UNKNOWN, should one arrive undecoded


def known_tokens(components: Optional[list[type[pulumi.ComponentResource]]] = None) -> list[str]:
    """The type tokens ``Construct`` accepts (of every component, or of ``components``)."""
    return sorted(f"{PACKAGE_NAME}:index:{component.__name__}"
                  for component in (all_components() if components is None else components))


def _is_unknown(value: Any) -> bool:
    return isinstance(value, OutputUnknown) or (isinstance(value, str) and value == _ENGINE_UNKNOWN)


def _path(parent: str, key: Any) -> str:
    if isinstance(key, int):
        return f"{parent}[{key}]"
    return f"{parent}.{key}" if parent else str(key)


_TYPE_NAMES = {"string": "a string", "integer": "an integer", "number": "a number", "boolean": "a boolean",
               "array": "a list", "object": "an object"}


def _has_type(value: Any, type_: str) -> bool:
    if type_ == "string":
        return isinstance(value, str)
    if type_ == "boolean":
        return isinstance(value, bool)
    if type_ == "integer":
        return not isinstance(value, bool) and (isinstance(value, int) or (isinstance(value, float) and value.is_integer()))
    if type_ == "number":
        return not isinstance(value, bool) and isinstance(value, (int, float))
    if type_ == "array":
        return isinstance(value, list)
    if type_ == "object":
        return isinstance(value, dict)
    return True


class _SchemaCheck:
    """Problems of ``Construct`` inputs against the served schema, each as (camelCase path, reason)."""

    def __init__(self, schema: Mapping[str, Any]) -> None:
        self.types: Mapping[str, Any] = schema.get("types", {})
        self.problems: list[tuple[str, str]] = []

    def properties(self, value: Any, properties: Mapping[str, Any], path: str) -> None:
        if not isinstance(value, dict):
            return
        for key, item in value.items():
            if key in properties:
                self.value(item, properties[key], _path(path, key))

    def value(self, value: Any, spec: Mapping[str, Any], path: str) -> None:
        if value is None:
            return
        if _is_unknown(value) or isinstance(value, pulumi.Output):
            what = "unknown until another resource exists" if _is_unknown(value) else "an Output"
            if spec.get("plain"):
                self.problems.append((path, f"must be plain: the value is {what}, and it decides which resources exist"))
            elif _is_unknown(value) and _is_structured(spec):
                # ComponentProvider maps an object's fields one by one (map_input_properties): an
                # unknown object or list of objects cannot be mapped, only its fields can be unknown.
                self.problems.append((path, f"must be plain: the value is {what}; give its fields instead"))
            return
        reference = str(spec.get("$ref", ""))
        if reference.startswith("#/types/"):
            type_ = self.types.get(reference[len("#/types/"):], {})
            if type_.get("type") == "object":
                if not isinstance(value, dict):
                    self.problems.append((path, f"must be an object ({reference.rsplit(':', 1)[-1]}), got {type(value).__name__}"))
                    return
                self.properties(value, type_.get("properties", {}), path)
            return
        if reference:
            return  # resources, pulumi.json#/Any ...: no shape to check
        type_name = str(spec.get("type", ""))
        if not _has_type(value, type_name):
            self.problems.append((path, f"must be {_TYPE_NAMES.get(type_name, type_name)}, got {type(value).__name__}"))
            return
        if type_name == "array":
            for index, item in enumerate(value):
                self.value(item, spec.get("items", {}), _path(path, index))
        elif type_name == "object" and isinstance(spec.get("additionalProperties"), Mapping):
            for key, item in value.items():
                self.value(item, spec["additionalProperties"], _path(path, key))


def _is_structured(spec: Mapping[str, Any]) -> bool:
    items = spec.get("items") or spec.get("additionalProperties")
    return "$ref" in spec or (isinstance(items, Mapping) and "$ref" in items)


def defer_unknowns(value: Any) -> Any:
    """``value`` with each engine unknown as an unknown ``Output``: what components defer (``DeferredInputs``)."""
    if _is_unknown(value):
        # _OutputData marks a value that contains an unknown as not known (pulumi/output.py).
        return pulumi.Output.from_input(OutputUnknown())
    if isinstance(value, dict):
        return {key: defer_unknowns(item) for key, item in value.items()}
    if isinstance(value, list):
        return [defer_unknowns(item) for item in value]
    return value


def _camel(part: str) -> str:
    if "_" not in part or not re.fullmatch(r"[a-z][a-z0-9_]*", part):
        return part
    head, *rest = part.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


def camel_case_path(path: str) -> str:
    """A problem path with each Python field name as the schema spells it (``node_count`` -> ``nodeCount``)."""
    return re.sub(r"[A-Za-z_][A-Za-z0-9_]*", lambda match: _camel(match.group(0)), path)


def _refusal(component: str, problems: list[tuple[str, str]]) -> pulumi.InputPropertiesError:
    named = [(camel_case_path(path), reason) for path, reason in problems]
    message = f"invalid inputs of {component}:\n  " + "\n  ".join(f"{path}: {reason}" for path, reason in named)
    return pulumi.InputPropertiesError(message, [{"property_path": path, "reason": reason} for path, reason in named])


def component_provider(components: Optional[list[type[pulumi.ComponentResource]]] = None) -> Any:
    """The provider the host serves, for offline schema and construct calls (no engine needed): every
    component (``provider/``), or only ``components`` (``KUBERNETES_COMPONENTS``: ``provider/kubernetes/``)."""
    import json

    served_components = all_components() if components is None else list(components)
    tokens = known_tokens(served_components)

    from pulumi.provider.experimental.component import ComponentInitError, ComponentProvider

    class GpuFabricProvider(ComponentProvider):
        """``ComponentProvider`` whose ``Construct`` refusals name the property (see the module docstring)."""

        def construct(self, name: str, resource_type: str, inputs: Any, options: Optional[pulumi.ResourceOptions] = None) -> Any:
            if resource_type not in tokens:
                # errors=[] (not None): pulumi's server sets the status details only then (provider/server.py
                # create_grpc_invalid_properties_status), and aborts with UNKNOWN without them.
                raise pulumi.InputPropertiesError(
                    f"unknown resource type {resource_type!r}; this provider constructs: {', '.join(tokens)}", [])
            component = resource_type.rsplit(":", 1)[-1]
            served = json.loads(self.schema or "{}")
            check = _SchemaCheck(served)
            check.properties(inputs, served["resources"][resource_type].get("inputProperties", {}), "")
            if check.problems:
                raise _refusal(component, check.problems)
            try:
                return super().construct(name, resource_type, defer_unknowns(inputs), options)
            except ComponentInitError as error:
                inner = error.inner
                if isinstance(inner, ConfigError):
                    raise _refusal(component, inner.pairs) from None
                if isinstance(inner, (pulumi.InputPropertiesError, pulumi.InputPropertyError)):
                    raise inner from None
                raise

    return GpuFabricProvider(served_components, PACKAGE_NAME, version=__version__)


def schema(components: Optional[list[type[pulumi.ComponentResource]]] = None) -> dict[str, Any]:
    """The package schema exactly as ``GetSchema`` serves it (of ``provider/``, or of ``components``)."""
    import json

    result: dict[str, Any] = json.loads(component_provider(components).schema)
    return result
