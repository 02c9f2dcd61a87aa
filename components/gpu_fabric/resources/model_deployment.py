"""``ModelDeployment``: one GPUStack ModelDeployment, admitted offline before it is registered."""

from typing import Any, Mapping, Optional, Sequence, TypedDict

import pulumi
from pydantic import ValidationError

from gpu_fabric.gpustack.objects import model_deployment
from gpu_fabric.config.constants import DEFAULT_API_VERSION
from gpu_fabric.findings import FieldPath
from gpu_fabric.resources.args import Required
from gpu_fabric.resources.deployment_args import DeploymentArgs
from gpu_fabric.resources.inputs import ANY, DeferredInputs, InvalidInputError
from gpu_fabric.resources.kubernetes_objects import child_options, metadata_name, namespace_dependency, register_manifest
from gpu_fabric.resources.outputs import register_declared_outputs
from gpu_fabric.config.base import ConfigError
from gpu_fabric.config.serving import ModelDeploymentSpec
from gpu_fabric.gpustack.profiles import DEFAULT_GPUSTACK_OPERATOR, Profile, UnknownOperatorVersion, profile_for
from gpu_fabric.gpustack.admission_pipeline import TransferReport, analyze

DEFERRABLE = (
    ("deployment", "engine", "image"),
    ("deployment", "router", "image"),
    ("deployment", "roles", ANY, "image"),
)
"""Argument paths that may be ``Output``s: the images."""

PLAIN_REASONS = {
    "deployment": "its roles and resources are admitted offline before registration; only images may be Outputs",
    "api_version": "it decides the object's apiVersion",
    "gpustack_operator": "it decides the schema and admission rules the deployment is held to",
    "cache_objects": "the transfer analysis reads them before registration",
    "manufacturers": "the transfer analysis reads them before registration",
}


class ModelDeploymentArgs(TypedDict, total=False):
    """Inputs of :class:`ModelDeployment`."""

    deployment: Required[DeploymentArgs]
    """The deployment: ``name``, ``namespace`` and the spec fields."""
    api_version: str
    """``v1alpha1`` (default: the version the operator's CRDs serve) or ``v1`` (its aggregated API)."""
    gpustack_operator: str
    """The GPUStack operator release the cluster runs (``0.10.0`` by default, ``0.9.2``, ``0.11.2``, any patch
    of those lines, or ``main@5cfac77b``): it decides the schema and admission rules (docs/gpustack-api-version.md)."""
    cache_objects: Sequence[Mapping[str, Any]]
    """Manifests of the KVCachePoolBinding, KVCachePool and KVCacheBackend that ``kv_cache.pool_ref``
    resolves to; required when the deployment requests interfaces through a cache leg."""
    manufacturers: Mapping[str, str]
    """InstanceType name -> accelerator manufacturer, when the name does not tell it."""


def operator_profile(args: Mapping[str, Any], component: str) -> Profile:
    """The profile of a component's ``gpustack_operator`` argument (default 0.10.0); refused naming the property."""
    try:
        return profile_for(args.get("gpustack_operator") or DEFAULT_GPUSTACK_OPERATOR)
    except UnknownOperatorVersion as error:
        raise InvalidInputError([("gpustack_operator", str(error))], component) from None


def admit_model_deployment(args: Mapping[str, Any]) -> tuple[ModelDeploymentSpec, dict[str, Any], TransferReport]:
    """Validate the deployment and run the operator's transfer-path admission over it; raise naming the property."""
    try:
        deployment = ModelDeploymentSpec.model_validate(args.get("deployment") or {})
    except ValidationError as error:
        raise InvalidInputError(ConfigError.from_validation_error(error, ("deployment",)).problems, "ModelDeployment") from None
    manifest = model_deployment(deployment, args.get("api_version") or DEFAULT_API_VERSION)
    cache_objects = args.get("cache_objects") or []
    report = analyze([manifest, *cache_objects], manufacturers=args.get("manufacturers") or {},
                     operator=operator_profile(args, "ModelDeployment"))
    if report.errors:
        # The manifest's spec is the deployment argument: spec.x is refused at deployment.x.
        raise InvalidInputError((f.moved(FieldPath.of("deployment") / (f.path.tail if f.path.head == "spec" and f.path.tail else f.path))
                                 .about(None) for f in report.errors), "ModelDeployment")
    return deployment, manifest, report


class ModelDeployment(pulumi.ComponentResource):
    """A ModelDeployment whose interface requests the operator is known to accept."""

    deployment_name: pulumi.Output[str]
    """Name of the ModelDeployment object, from the registered object."""
    namespace: pulumi.Output[str]
    """Its namespace."""
    resource_grants: pulumi.Output[dict[str, dict[str, int]]]
    """Device resources each role's engine container receives, by role name."""

    def __init__(self, name: str, args: ModelDeploymentArgs, opts: Optional[pulumi.ResourceOptions] = None, *,
                 namespace_resources: Optional[Mapping[str, pulumi.Resource]] = None) -> None:
        """Admit the deployment offline, then register it.

        Args:
        namespace_resources: Namespace name -> the resource registering it (``GpuFabric`` passes its tenant
            namespaces): each namespaced child depends on its own, so it is created after its namespace.
        """
        inputs = DeferredInputs("ModelDeployment", args, ModelDeploymentArgs, DEFERRABLE, PLAIN_REASONS)
        deployment, manifest, report = inputs.validate(admit_model_deployment, default_path="deployment")
        inputs.check_on_resolve(admit_model_deployment)
        # The operator version rides on the component's inputs: the policy pack reads it at preview.
        registered_inputs = {"gpustackOperator": operator_profile(inputs.values, "ModelDeployment").as_written}
        super().__init__("gpu-fabric:index:ModelDeployment", name, registered_inputs, opts)

        resource = register_manifest(f"{name}-deployment", inputs.restore(manifest),
                                     child_options(self, namespace_dependency(manifest, namespace_resources)))
        self.deployment = resource
        """The registered ModelDeployment object."""
        grants = {
            grant.role: dict(grant.resources)
            for grant in report.role_grants
            if grant.deployment == deployment.name and grant.namespace == deployment.namespace
        }
        self.deployment_name = metadata_name(resource)
        self.namespace = pulumi.Output.from_input(deployment.namespace)
        self.resource_grants = pulumi.Output.from_input(grants)
        register_declared_outputs(self, registered_inputs)
