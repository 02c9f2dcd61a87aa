"""Wrappers in front of the engine's command line are seen through.

Container images start the engine behind an init (krallin/tini ``tini --``, Yelp/dumb-init), behind
coreutils ``env`` (``env -u X``, ``env NAME=value``), or in a ``sh -c`` / ``bash -lc`` script; the
engine still receives the same flags and environment, so the transfer rules must still see them.
"""

import time

import pytest

from gpu_fabric.kube.engine_flags import NIXL_CONNECTOR, read_container
from gpu_fabric.kube.workload_rules import ERROR
from gpu_fabric.kube.workloads import fabric_pool_of, judge_workloads
from gpu_fabric.validation.configuration import load_config

from support.stack_configs import stack_values
from support.workloads import with_container, wrap

NIXL_JSON = '{"kv_connector":"NixlConnector"}'
ENGINE = ["vllm", "serve", "m", "--kv-transfer-config", NIXL_JSON]
ENGINE_LINE = f"vllm serve m --kv-transfer-config '{NIXL_JSON}'"


WRAPPED = {
    "tini": {"command": ["tini", "--"], "args": ["env", "UCX_TLS=tcp,cuda_copy", *ENGINE]},
    "tini options": {"command": ["/usr/bin/tini", "-s", "-p", "SIGKILL", "-g", "--", "env", "UCX_TLS=tcp,cuda_copy", *ENGINE]},
    "dumb-init": {"command": ["dumb-init", "--"], "args": ["sh", "-c", f"UCX_TLS=tcp,cuda_copy exec {ENGINE_LINE}"]},
    "dumb-init no --": {"command": ["/usr/local/bin/dumb-init", "-r", "15:2", "bash", "-lc",
                                    f"export UCX_TLS=tcp,cuda_copy; exec {ENGINE_LINE}"]},
    "env -u": {"command": ["env", "-u", "HOME", "UCX_TLS=tcp,cuda_copy", *ENGINE]},
    "env --unset=": {"command": ["/usr/bin/env", "--unset=HOME", "-uPATH", "UCX_TLS=tcp,cuda_copy", *ENGINE]},
    "env then sh -c": {"command": ["env", "-u", "HOME", "sh", "-c", f"UCX_TLS=tcp,cuda_copy {ENGINE_LINE}"]},
    "tini then bash -o": {"command": ["tini", "--", "bash", "-o", "pipefail", "-ec",
                                      f"echo start && env UCX_TLS=tcp,cuda_copy {ENGINE_LINE}"]},
    "script passes $@": {"command": ["tini", "--", "sh", "-c", 'exec env UCX_TLS=tcp,cuda_copy "$@"', "sh", *ENGINE]},
    "env -S": {"command": ["env", "-S", "UCX_TLS=tcp,cuda_copy vllm serve m", "--kv-transfer-config", NIXL_JSON]},
}


@pytest.mark.parametrize("name", sorted(WRAPPED))
def test_the_engine_behind_a_wrapper_is_read(name):
    settings = read_container(WRAPPED[name], "c")
    assert settings.uses_nixl() is not None and settings.uses_nixl().value == NIXL_CONNECTOR
    assert settings.env["UCX_TLS"].value == "tcp,cuda_copy"
    assert "HOME" not in settings.env and "PATH" not in settings.env


def test_env_u_removes_a_variable_the_manifest_sets():
    container = {"command": ["env", "-u", "UCX_TLS", *ENGINE], "env": [{"name": "UCX_TLS", "value": "tcp"}]}
    assert "UCX_TLS" not in read_container(container, "c").env


def test_env_i_starts_the_engine_with_an_empty_environment():
    container = {"command": ["env", "-i", "FI_PROVIDER=efa", *ENGINE], "env": [{"name": "UCX_TLS", "value": "tcp"}]}
    assert set(read_container(container, "c").env) == {"FI_PROVIDER"}


def test_assignments_after_the_engine_are_arguments_not_environment():
    settings = read_container({"command": ["tini", "--", "vllm", "serve", "UCX_TLS=tcp"]}, "c")
    assert "UCX_TLS" not in settings.env


def test_wrapper_options_do_not_swallow_the_engine_flags():
    # tini -e 143 remaps an exit code; the value 143 is tini's, the flags after are the engine's.
    settings = read_container({"command": ["tini", "-e", "143", "--", *ENGINE]}, "c")
    assert settings.uses_nixl().path == "c.command[7]"


@pytest.mark.parametrize("name", ["tini", "dumb-init", "env -u", "env then sh -c"])
def test_the_workload_rule_refuses_tcp_behind_a_wrapper(name):
    pools = [fabric_pool_of(pool) for pool in load_config(stack_values("aws-efa")).pools]
    container = dict(WRAPPED[name])
    spec = with_container(command=container["command"], **({"args": container["args"]} if "args" in container else {}))
    refused = [f for f in judge_workloads([wrap("Deployment", spec)], pools).findings
               if f.severity == ERROR and f.rule_id == "nixl-backend-fabric"]
    assert refused and "UCX_TLS=tcp,cuda_copy has no srd" in refused[0].message


def test_a_long_wrapped_command_line_is_read_in_linear_time():
    args = ["tini", "--", "env", *(f"V{i}=x" for i in range(25_000)), "sh", "-c",
            " ".join(["exec", "env", "-u", "X"] + [f"--flag-{i}=x" for i in range(25_000)])]
    started = time.monotonic()
    settings = read_container({"command": args}, "c")
    assert time.monotonic() - started < 10
    assert len(settings.env) == 25_000
