"""``ModelDeployment``: one GPUStack ModelDeployment, admitted offline before it is registered."""

from __future__ import annotations

from typing import Any, Optional, TypedDict

import pulumi
from pydantic import ValidationError

from gpu_fabric.builders.gpustack import model_deployment
from gpu_fabric.operator_pin import DEFAULT_API_VERSION
from gpu_fabric.resources.kubernetes_objects import child_options, register_manifest
from gpu_fabric.spec.base import ConfigError
from gpu_fabric.spec.gpustack import ModelDeploymentSpec
from gpu_fabric.transfer import analyze


class ModelDeploymentArgs(TypedDict, total=False):
    """Inputs of :class:`ModelDeployment`."""

    deployment: dict[str, Any]
    """The deployment, as in ``modelDeployments[]`` (``name``, ``namespace`` and the spec fields)."""
    apiVersion: str
    """``v1alpha1`` (default: the version the operator's CRDs serve) or ``v1`` (its aggregated API)."""
    cacheObjects: list[dict[str, Any]]
    """Manifests of the KVCachePoolBinding, KVCachePool and KVCacheBackend that ``kvCache.poolRef``
    resolves to; required when the deployment requests interfaces through a cache leg."""
    manufacturers: dict[str, str]
    """InstanceType name -> accelerator manufacturer, when the name does not tell it."""


class ModelDeployment(pulumi.ComponentResource):
    """A ModelDeployment whose interface requests the operator is known to accept."""

    resource_grants: pulumi.Output[dict[str, dict[str, int]]]
    """Device resources each role's engine container receives, by role name."""

    def __init__(self, name: str, args: ModelDeploymentArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        try:
            deployment = ModelDeploymentSpec.model_validate(args.get("deployment") or {})
        except ValidationError as error:
            raise ConfigError.from_validation_error(error, ("deployment",)) from None
        manifest = model_deployment(deployment, args.get("apiVersion") or DEFAULT_API_VERSION)
        report = analyze([manifest, *(args.get("cacheObjects") or [])], manufacturers=args.get("manufacturers") or {})
        if report.errors:
            raise ConfigError((f"deployment.{f.path.removeprefix('spec.')}", f.message) for f in report.errors)
        super().__init__("gpu-fabric:index:ModelDeployment", name, {}, opts)

        register_manifest(f"{name}-deployment", manifest, child_options(self))
        grants = {
            grant.role: dict(grant.resources)
            for grant in report.role_grants
            if grant.deployment == deployment.name and grant.namespace == deployment.namespace
        }
        self.resource_grants = pulumi.Output.from_input(grants)
        self.register_outputs({"resourceGrants": self.resource_grants})
