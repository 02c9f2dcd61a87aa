"""Register plain manifests as pulumi-kubernetes resources.

Manifests stay exactly as the builders made them (camelCase keys), so the inputs the engine
receives, and that policies read, are the manifests themselves.
"""

from typing import Any, Mapping, Optional, Sequence

import pulumi
import pulumi_kubernetes as k8s

# A Kubernetes object is identified by its name and namespace: changing either makes a new object
# (pulumi-kubernetes provider/pkg/provider/diff.go, metadataForceNewProperties). Declared so the
# engine, `gpu-fabric diff` and a reader of the program all see it.
OBJECT_IDENTITY_REPLACE_ON_CHANGES: tuple[str, ...] = ("metadata.name", "metadata.namespace")


def register_manifest(
    resource_name: str,
    manifest: Mapping[str, Any],
    opts: Optional[pulumi.ResourceOptions] = None,
    *,
    patch: bool = False,
) -> pulumi.CustomResource:
    """Register ``manifest`` as a custom resource; ``patch`` uses server-side apply to adopt an existing object.

    A patch creates the object when it is missing and merges our fields into it when another
    writer (such as the GPUStack operator) created it first; destroying the stack only gives up
    our fields instead of deleting the other writer's object.
    """
    resource_type = k8s.apiextensions.CustomResourcePatch if patch else k8s.apiextensions.CustomResource
    return resource_type(
        resource_name,
        api_version=manifest["apiVersion"],
        kind=manifest["kind"],
        metadata=dict(manifest["metadata"]),
        spec=manifest.get("spec"),
        opts=pulumi.ResourceOptions.merge(
            opts or pulumi.ResourceOptions(), pulumi.ResourceOptions(replace_on_changes=list(OBJECT_IDENTITY_REPLACE_ON_CHANGES))),
    )


def register_namespace(resource_name: str, namespace: str, parent: pulumi.Resource) -> pulumi.CustomResource:
    """Register a tenant namespace the stack declares: created when absent, adopted when present, never deleted.

    A ``NamespacePatch`` is a server-side apply of ``{metadata: {name}}``: the API server creates the
    namespace when it is missing and merges nothing into one that exists (pulumi-kubernetes
    provider/pkg/await/await.go, ``Creation``/``Patch``; docs: "Managing Resources with Server-Side
    Apply", https://www.pulumi.com/registry/packages/kubernetes/how-to-guides/managing-resources-with-server-side-apply/).
    A plain ``Namespace`` would upsert the same way only up to provider v4.28: v4.29 creates client-side
    and fails with AlreadyExists on a namespace the platform made first, and its release notes point at
    Patch resources for that case. ``retain_on_delete`` keeps ``pulumi destroy`` (and a namespace dropped
    from ``namespaces``) from touching it at all: a tenant namespace holds the tenants' own workloads,
    secrets and volumes, and deleting a namespace deletes everything in it
    (https://www.pulumi.com/docs/iac/concepts/options/retainondelete/).
    """
    return k8s.core.v1.NamespacePatch(
        resource_name, metadata={"name": namespace},
        opts=pulumi.ResourceOptions(parent=parent, retain_on_delete=True,
                                    replace_on_changes=list(OBJECT_IDENTITY_REPLACE_ON_CHANGES)))


def namespace_dependency(
    manifest: Mapping[str, Any], namespaces: Optional[Mapping[str, pulumi.Resource]]
) -> list[pulumi.Resource]:
    """The namespace resource ``manifest``'s object lives in, when the stack registers it (else none).

    Every namespaced object waits for its namespace, so ``pulumi up`` on a control plane without the
    tenant namespaces creates them first instead of failing with ``namespaces "..." not found``.
    """
    namespace = (manifest.get("metadata") or {}).get("namespace")
    found = (namespaces or {}).get(namespace) if isinstance(namespace, str) else None
    return [found] if found is not None else []


def child_options(parent: pulumi.Resource, depends_on: Optional[Sequence[pulumi.Resource]] = None) -> pulumi.ResourceOptions:
    """Options for a child: parented (so names, providers and protection flow down) and ordered."""
    return pulumi.ResourceOptions(parent=parent, depends_on=list(depends_on) if depends_on else None)


def metadata_name(resource: pulumi.CustomResource) -> pulumi.Output[str]:
    """``metadata.name`` of a registered object, as the engine reports it (so readers wait for the object)."""
    metadata: pulumi.Output[Any] = resource.metadata  # type: ignore[attr-defined]
    return metadata.apply(lambda meta: str(meta["name"] if isinstance(meta, Mapping) else meta.name))


def qualified_name(namespace: str, resource: pulumi.CustomResource) -> pulumi.Output[str]:
    """``namespace/name`` of a registered namespaced object."""
    return metadata_name(resource).apply(lambda name: f"{namespace}/{name}")
