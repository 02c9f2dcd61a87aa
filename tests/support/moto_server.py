"""moto's server on 127.0.0.1 for tests that need a real HTTP round trip to an EC2 API.

A plain helper module (not a conftest): tests import it as ``from support import moto_server``, or load
it by file path with importlib (``tests/support/moto_server.py``), which works whatever ``sys.path`` is.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Iterator

DUMMY_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
}


@contextlib.contextmanager
def start_moto_server() -> Iterator[str]:
    """Run moto's threaded server on a free loopback port; yield its endpoint URL; always stop it."""
    from moto.server import ThreadedMotoServer

    # Port 0 lets the OS pick a free port, so parallel test runs never collide.
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        yield f"http://{host}:{port}"
    finally:
        server.stop()


def isolated_aws_environment(tmp_dir: Path, *, credentials: bool, endpoint_url: str | None = None) -> dict[str, str]:
    """An environment for boto3 that reads nothing from the host: no AWS_* variables, empty config
    files, IMDS disabled; with dummy credentials and region us-east-1 when ``credentials``."""
    import os

    env = {key: value for key, value in os.environ.items() if not key.startswith("AWS_")}
    credentials_file = tmp_dir / "aws-credentials"
    config_file = tmp_dir / "aws-config"
    credentials_file.write_text("")
    config_file.write_text("")
    env["AWS_SHARED_CREDENTIALS_FILE"] = str(credentials_file)
    env["AWS_CONFIG_FILE"] = str(config_file)
    env["AWS_EC2_METADATA_DISABLED"] = "true"
    if credentials:
        env.update(DUMMY_CREDENTIALS)
        env["AWS_DEFAULT_REGION"] = "us-east-1"
    if endpoint_url:
        env["AWS_ENDPOINT_URL"] = endpoint_url
    return env

