"""The policy pack in ``policy/`` served over the analyzer gRPC protocol, as the engine starts it: a module fixture."""

from __future__ import annotations

import os
import subprocess
import sys

import grpc
import pytest
from google.protobuf import struct_pb2
from pulumi.runtime.proto import analyzer_pb2_grpc

from support.policy_helpers import PROJECT_DIR

PACK_DIR = PROJECT_DIR / "policy"


@pytest.fixture(scope="module")
def analyzer():
    """The pack's analyzer, started as the engine starts it; always stopped afterwards."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, "__main__.py"], cwd=PACK_DIR, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    try:
        line = process.stdout.readline().decode().strip()
        if not line.isdigit():
            process.kill()
            _, err = process.communicate(timeout=10)
            pytest.fail(f"the pack did not print a port (got {line!r}); stderr:\n{err.decode()}")
        channel = grpc.insecure_channel(f"127.0.0.1:{line}")
        grpc.channel_ready_future(channel).result(timeout=30)
        yield analyzer_pb2_grpc.AnalyzerStub(channel)
        channel.close()
    finally:
        process.kill()
        process.communicate(timeout=10)


def struct(props: dict) -> struct_pb2.Struct:
    message = struct_pb2.Struct()
    message.update(props)
    return message
