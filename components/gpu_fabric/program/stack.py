"""The stack program's body: read ``gpu-fabric:*`` configuration, build the ``GpuFabric``.

Kept in the package (``stacks/__main__.py`` only calls :func:`build_stack`) so that the program
that ``pulumi up`` runs and the one ``gpu-fabric render`` runs under mocks are the same code.
"""

from __future__ import annotations

import json
from typing import Any, Optional

import pulumi

from gpu_fabric.resources.fabric import GpuFabric, fabric_args
from gpu_fabric.config.base import ConfigError
from gpu_fabric.config.cluster import KubernetesTarget
from gpu_fabric.config.fabric import CONFIG_NAMESPACE, SECRET_CAPABLE_KEYS, config_keys
from gpu_fabric.config.secrets import configuration_credentials
from gpu_fabric.config.stack_file import StackFileError, near_miss
from gpu_fabric.config.suggestions import did_you_mean
from gpu_fabric.program.project import ProjectError
from gpu_fabric.kube.kueue import device_class_mappings
from gpu_fabric.validation.configuration import load_config


def _all_config_keys() -> set[str]:
    from pulumi.runtime import config as runtime_config

    return set(runtime_config.CONFIG.get()) | set(runtime_config.get_config_env())


def read_configuration() -> dict[str, Any]:
    """Return the ``gpu-fabric:*`` values of the selected stack, decoded, with unknown keys refused."""
    known = config_keys()
    prefix = f"{CONFIG_NAMESPACE}:"
    keys = _all_config_keys()
    unknown = sorted(key[len(prefix):] for key in keys if key.startswith(prefix) and key[len(prefix):] not in known)
    if unknown:
        raise ConfigError((key, f"unknown configuration key; known keys: {', '.join(known)}{did_you_mean(key, known)}")
                          for key in unknown)
    # The engine hands the program every namespace's values: a misspelt namespace (gpufabric:, gpu_fabric:) is
    # refused here as `render` refuses it in the stack file (config/stack_file.py), not silently left unread.
    misspelt = sorted(key for key in keys if ":" in key and near_miss(key.split(":", 1)[0], CONFIG_NAMESPACE))
    if misspelt:
        raise ConfigError((key, f"namespace {key.split(':', 1)[0]!r} is not {prefix!r}, so gpu-fabric would never read "
                                f"it (write {prefix}{key.split(':', 1)[1]})") for key in misspelt)
    config = pulumi.Config(CONFIG_NAMESPACE)
    values: dict[str, Any] = {}
    for key in known:
        raw = config.get(key)
        if raw is None:
            continue
        try:
            # Structured values arrive JSON-encoded; plain strings (``queueOwner: gpustack``) do not.
            values[key] = json.loads(raw)
        except ValueError:
            values[key] = raw
    return values


def read_own_stack_file() -> None:
    """Under the engine, read the stack's own ``Pulumi.<stack>.yaml`` as ``render`` reads it; :class:`StackFileError`
    for what ``render`` refuses there (``!!binary``, dates, sets, repeated keys: config/stack_file.py).

    The engine decodes such a value before the program sees it -- a ``!!binary`` model name arrives as its text --
    so the values cannot show it; the file can. The file is found as ``render`` finds it: ``stackConfigDir`` of the
    ``Pulumi.yaml`` in the project's root (``pulumi.get_root_directory()``, which the language host passes). Under
    mocks (``render``, ``check``, tests) there is no root directory: the caller read the file already. A stack
    without a file of its own (configuration from the Automation API or an environment) has nothing to read.
    """
    from gpu_fabric.config.stack_file import read_stack_document
    from gpu_fabric.program.project import read_project

    root = pulumi.get_root_directory()
    if not root:
        return
    path = read_project(root).stacks_folder / f"Pulumi.{pulumi.get_stack()}.yaml"
    if path.is_file():
        read_stack_document(path)


def secret_configuration_keys() -> list[str]:
    """The ``gpu-fabric:*`` keys the stack holds as Pulumi secrets; others than :data:`SECRET_CAPABLE_KEYS` are refused."""
    from pulumi.runtime.config import is_config_secret

    secret = [key for key in config_keys() if is_config_secret(f"{CONFIG_NAMESPACE}:{key}")]
    refused = [key for key in secret if key not in SECRET_CAPABLE_KEYS]
    if refused:
        raise ConfigError((key, "is a secret, but it makes names, labels or node groups that cannot be kept secret; "
                                f"only {', '.join(SECRET_CAPABLE_KEYS)} may be secrets") for key in refused)
    return secret


def _secret_specs(kinds: set[str]):
    """A transformation that registers the ``spec`` of objects of ``kinds`` as a secret Output."""

    def transform(args: pulumi.ResourceTransformationArgs) -> Optional[pulumi.ResourceTransformationResult]:
        props = args.props
        if isinstance(props, dict) and props.get("kind") in kinds and props.get("spec") is not None:
            return pulumi.ResourceTransformationResult({**props, "spec": pulumi.Output.secret(props["spec"])}, args.opts)
        return None

    return transform


class StackFileRefused(pulumi.RunError):
    """A :class:`StackFileError` (or the :class:`~gpu_fabric.program.project.ProjectError` of a ``Pulumi.yaml``
    ``render`` cannot read) as the stack program ends with it under the engine: the file and the key path in
    ``render``'s words, and nothing registered (a ``RunError``: see :class:`ConfigurationRefused`)."""

    def __init__(self, error: ValueError):
        super().__init__(str(error))
        self.error = error


class ConfigurationRefused(pulumi.RunError):
    """A :class:`ConfigError` as the stack program ends with it: every problem at its configuration
    path and nothing registered.

    A ``RunError`` because the Python language host's program runner prints a ``RunError``'s message
    as the program's error and nothing else (pulumi/pulumi sdk/python/cmd/pulumi-language-python-exec),
    where any other exception is shown as "Program failed with an unhandled exception" and a
    traceback through this module. ``gpu-fabric render`` unwraps :attr:`error` again.
    """

    def __init__(self, error: ConfigError):
        super().__init__(str(error))
        self.error = error


def build_stack(name: str = "fabric") -> GpuFabric:
    """Validate the whole configuration, then register the fabric and export its entry points.

    Raises :class:`ConfigurationRefused` (nothing registered) for a configuration gpu-fabric refuses, and
    :class:`StackFileRefused` for a stack file ``render`` would refuse.
    """
    try:
        read_own_stack_file()
        return _build_stack(name)
    except ConfigError as error:
        raise ConfigurationRefused(error) from None
    except (StackFileError, ProjectError) as error:
        raise StackFileRefused(error) from None


def _build_stack(name: str) -> GpuFabric:
    values = read_configuration()
    secret_keys = secret_configuration_keys()
    # Under pulumi up the program sees the engine's values, not the stack file: the file's own credential check,
    # on the keys the stack does not hold as secrets (a secret key's decrypted value is not judged).
    credentials = configuration_credentials(values, CONFIG_NAMESPACE, secret_keys)
    if credentials:
        raise ConfigError(credentials)
    secret_kinds = {SECRET_CAPABLE_KEYS[key] for key in secret_keys}
    # Every problem, with its path, before the first resource exists. The region comes from the
    # stack's configuration only (aws:region), never the environment, so a render is hermetic.
    config = load_config(values, aws_region=pulumi.Config("aws").get("region"))
    provider = kubernetes_provider(config.kubernetes)
    opts = pulumi.ResourceOptions(providers={"kubernetes": provider}) if provider else None
    if secret_kinds:
        opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(transformations=[_secret_specs(secret_kinds)]))
    fabric = GpuFabric(name, fabric_args(config), opts, validated=config)
    pulumi.export("localQueues", fabric.local_queues)
    mappings = device_class_mappings(config)
    if mappings:
        # Kueue's Configuration is its controller's file, not an API object: the stack hands over the entries to add
        # under resources.deviceClassMappings (docs/dra.md).
        pulumi.export("kueueDeviceClassMappings", mappings)
    return fabric


def kubernetes_provider(target: Optional[KubernetesTarget]) -> Optional[pulumi.ProviderResource]:
    """An explicit Kubernetes provider for the configured target, or ``None`` for the ambient kubeconfig."""
    if target is None:
        return None
    import pulumi_kubernetes as k8s

    if target.context:
        return k8s.Provider("kubernetes", context=target.context)
    cluster_ref = target.eks_cluster
    if cluster_ref is None:  # the model refuses a target naming neither
        raise ConfigError([("kubernetes", "names neither eksCluster nor context")])
    import pulumi_aws as aws

    cluster = aws.eks.get_cluster_output(name=cluster_ref.name)
    region = cluster_ref.region or aws.config.region or ""
    kubeconfig = pulumi.Output.all(cluster.endpoint, cluster.certificate_authorities).apply(
        lambda values: eks_kubeconfig(cluster_ref.name, region, values[0], _ca_data(values[1])))
    return k8s.Provider("kubernetes", kubeconfig=kubeconfig)


def _ca_data(authorities: Any) -> str:
    first = (authorities or [None])[0]
    return (first.get("data") if isinstance(first, dict) else getattr(first, "data", None)) or ""


def eks_kubeconfig(cluster: str, region: str, endpoint: str, certificate_authority: str) -> str:
    """A kubeconfig that authenticates with ``aws eks get-token`` (no token is ever written down)."""
    token_args = ["eks", "get-token", "--cluster-name", cluster, "--output", "json"]
    if region:
        token_args += ["--region", region]
    return json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": cluster,
        "clusters": [{"name": cluster, "cluster": {"server": endpoint, "certificate-authority-data": certificate_authority}}],
        "contexts": [{"name": cluster, "context": {"cluster": cluster, "user": cluster}}],
        "users": [{"name": cluster, "user": {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1", "command": "aws", "args": token_args}}}],
    }, sort_keys=True)
