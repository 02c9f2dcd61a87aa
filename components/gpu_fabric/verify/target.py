"""Which cluster ``verify`` reads, resolved as the stack's Kubernetes provider resolves it.

* ``--kubeconfig FILE`` / ``--context NAME`` given: that kubeconfig (or the ambient one) and context.
* The stack names ``kubernetes.context``: that context of the ambient kubeconfig, as the stack's
  ``kubernetes.Provider(context=...)`` does.
* The stack names ``kubernetes.eksCluster``: the cluster's endpoint and CA from EKS and a token
  from ``aws eks get-token``, the very kubeconfig ``gpu_fabric.program.stack.eks_kubeconfig`` gives the provider.
* Otherwise the ambient kubeconfig the way kubectl finds it: ``$KUBECONFIG`` (a list of files,
  merged) or ``~/.kube/config``, else the in-cluster service account.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping, Optional

from gpu_fabric.config.fabric import FabricConfig
from gpu_fabric.verify.api import ClusterUnavailable, Deadline, Limits, LiveTransport, mask_credentials


def ambient_kubeconfig() -> Optional[str]:
    """``$KUBECONFIG`` (colon-separated files) or ``~/.kube/config`` when any of them exists."""
    listed = os.environ.get("KUBECONFIG", "")
    paths = [p for p in listed.split(os.pathsep) if p] if listed else [str(Path.home() / ".kube" / "config")]
    existing = [p for p in paths if Path(p).expanduser().is_file()]
    return os.pathsep.join(existing) if existing else None


def _no_kubeconfig_reason() -> str:
    """Why no ambient kubeconfig was found, naming what was looked at: the files ``$KUBECONFIG`` names, or
    ``~/.kube/config`` when it is unset (kubectl reads no default file when ``$KUBECONFIG`` is set)."""
    listed = [p for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p]
    if not listed:
        return "no kubeconfig: $KUBECONFIG is unset and ~/.kube/config does not exist (pass --kubeconfig FILE)"
    if len(listed) == 1:
        return f"no kubeconfig: {listed[0]}, the file $KUBECONFIG names, does not exist (pass --kubeconfig FILE)"
    return (f"no kubeconfig: none of the files $KUBECONFIG names exists ({', '.join(listed)}) "
            "(pass --kubeconfig FILE)")


def _configuration(workers: int) -> Any:
    from kubernetes import client

    configuration = client.Configuration()
    # One pooled connection per concurrent configz reader; a request that cannot connect is retried once.
    configuration.connection_pool_maxsize = max(workers, 1)
    configuration.retries = 1
    return configuration


def _from_kubeconfig(path: Optional[str], context: Optional[str], workers: int) -> tuple[Any, str]:
    from kubernetes import config as kube_config
    from kubernetes.config.config_exception import ConfigException

    configuration = _configuration(workers)
    source = path or ambient_kubeconfig()
    try:
        if source is None:
            if context is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
                kube_config.load_incluster_config(client_configuration=configuration)
                return configuration, "in-cluster service account"
            raise ClusterUnavailable(_no_kubeconfig_reason())
        if path is not None and not Path(path).expanduser().is_file():
            raise ClusterUnavailable(f"--kubeconfig {path}: no such file")
        kube_config.load_kube_config(config_file=source, context=context, client_configuration=configuration,
                                     persist_config=False)
    except ConfigException as error:
        raise ClusterUnavailable(f"kubeconfig {source}: {_one_line(error)}") from None
    except ClusterUnavailable:
        raise
    except Exception as error:  # noqa: BLE001 - YAML errors, a failing exec plugin: a reason naming the file
        raise ClusterUnavailable(f"kubeconfig {source}: {type(error).__name__}: {_one_line(error)}") from None
    return configuration, f"context {context}" if context else f"kubeconfig {source}"


def _one_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return mask_credentials(lines[0]) if lines else type(error).__name__


def _from_eks(name: str, region: Optional[str], workers: int) -> tuple[Any, str]:
    import botocore.exceptions
    from kubernetes import config as kube_config
    from kubernetes.config.config_exception import ConfigException

    from gpu_fabric.aws.sessions import fresh_session
    from gpu_fabric.program.stack import eks_kubeconfig

    try:
        session = fresh_session(region_name=region)  # fresh: reads the environment as it is now
        cluster = session.client("eks").describe_cluster(name=name)["cluster"]
        used_region = session.region_name or ""
    except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as error:
        raise ClusterUnavailable(f"EKS cluster {name}: {_one_line(error)}") from None
    document = json.loads(eks_kubeconfig(name, used_region, cluster["endpoint"],
                                         (cluster.get("certificateAuthority") or {}).get("data") or ""))
    configuration = _configuration(workers)
    try:
        kube_config.load_kube_config_from_dict(document, client_configuration=configuration, persist_config=False)
    except ConfigException as error:
        raise ClusterUnavailable(f"EKS cluster {name}: {_one_line(error)}") from None
    return configuration, f"EKS cluster {name}"


def connect(config: FabricConfig, stack_values: Mapping[str, Any], *, kubeconfig: Optional[str] = None,
            context: Optional[str] = None, workers: int = 32, limits: Limits = Limits(),
            deadline: Optional[Deadline] = None) -> tuple[LiveTransport, str]:
    """A live transport to the stack's cluster and a description of how it was chosen."""
    from kubernetes import client

    target = config.kubernetes
    if kubeconfig is not None or context is not None:
        configuration, how = _from_kubeconfig(kubeconfig, context or (target.context if target else None), workers)
    elif target is not None and target.context:
        configuration, how = _from_kubeconfig(None, target.context, workers)
    elif target is not None and target.eks_cluster is not None:
        ref = target.eks_cluster
        region = ref.region or stack_values.get("aws:region")
        configuration, how = _from_eks(ref.name, str(region) if region else None, workers)
    else:
        configuration, how = _from_kubeconfig(None, None, workers)
    transport = LiveTransport(client.ApiClient(configuration=configuration), limits, deadline)
    return transport, f"{transport.host} ({how})"
