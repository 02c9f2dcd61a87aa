"""boto3 sessions, each with its own configuration, that parse AWS's service models once per process.

A boto3 ``Session`` resolves its own configuration (region, profile, credentials, endpoint variables)
from its arguments and the environment, and caches credentials, which is why gpu-fabric makes a fresh one
for each catalog and each EKS lookup instead of sharing one. Each session also
brings its own botocore data loader, and a loader parses a service's model file the first time a client
of that service is made: ``ec2``'s is several megabytes of JSON, about 0.2 s of CPU every time. The model
files are the installed botocore's own and never change while the process runs, so every session here
shares one loader (botocore's component ``data_loader``; the loader caches what it parsed). Configuration
stays per session; only the parsed models are shared.

The shared loader is made on first use, with the search path of that moment (``AWS_DATA_PATH``): a
process that changes ``AWS_DATA_PATH`` afterwards keeps the first one.
"""

from __future__ import annotations

import threading
from typing import Any, Optional

_loader: Any = None
_loader_lock = threading.Lock()


def _shared_loader(botocore_session: Any) -> Any:
    global _loader
    with _loader_lock:
        if _loader is None:
            _loader = botocore_session.get_component("data_loader")
        return _loader


def fresh_session(region_name: Optional[str] = None, profile_name: Optional[str] = None) -> Any:
    """A new ``boto3.Session`` (its own configuration and credentials) over the process's one service-model loader."""
    import boto3
    import botocore.session

    core = botocore.session.Session()
    core.register_component("data_loader", _shared_loader(core))
    return boto3.Session(botocore_session=core, region_name=region_name, profile_name=profile_name)
