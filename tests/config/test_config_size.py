"""The stack configuration must fit the one environment variable Pulumi hands it to the program in.

The encoding is pinned to Pulumi's own: the reference text below is what ``config.Map.Decrypt`` of
github.com/pulumi/pulumi/sdk/v3@v3.274.1 (go/common/resource/config) and ``json.Marshal`` made of the same
stack file (read with gopkg.in/yaml.v3, a decrypter returning each ciphertext as its plaintext). The limit is
pinned to the kernel's: an exec with the encoded configuration just under it starts, just over it does not.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gpu_fabric.config.config_size import (
    CONFIG_VARIABLE,
    MAX_ARG_STRLEN,
    SECRET_KEYS_VARIABLE,
    STACK_CONFIG_SIZE,
    config_environment,
    config_size_findings,
    go_json,
)
from gpu_fabric.config.stack_file import StackFileError, read_stack_file
from gpu_fabric.validation.rule_registry import registered
from support.stack_configs import fleet_config

STACK_FILE = r"""config:
  aws:region: us-east-1
  gpu-fabric:a: 1.0
  gpu-fabric:b:
    x: [1.5, 2.0, 1.0e-07, 1.0e+21, 3.0e-10, 123456789.125, -0.5]
    y: "<a&b> é ✓ \L \"q\" \\ \t"
  gpu-fabric:i: 7
  gpu-fabric:n:
    deep:
    - secure: v1:zz
    - true
    - null
    - 42
  gpu-fabric:t: true
  gpu-fabric:tok:
    secure: v1:abcd==:efgh/ij+kl==
  kubernetes:kubeconfig: "apiVersion: v1\nkind: Config\n"
"""
PULUMIS_ENCODING = (
    r'{"aws:region":"us-east-1","gpu-fabric:a":"1","gpu-fabric:b":"{\"x\":[1.5,2,1e-7,1e+21,3e-10,123456789.125,-0.5],'
    r'\"y\":\"\\u003ca\\u0026b\\u003e é ✓ \\u2028 \\\"q\\\" \\\\ \\t\"}","gpu-fabric:i":"7",'
    r'"gpu-fabric:n":"{\"deep\":[\"v1:zz\",true,null,42]}","gpu-fabric:t":"true","gpu-fabric:tok":"v1:abcd==:efgh/ij+kl==",'
    r'"kubernetes:kubeconfig":"apiVersion: v1\nkind: Config\n"}')
"""Pulumi's PULUMI_CONFIG of :data:`STACK_FILE` (sizes 390 and 60 bytes with ``NAME=`` and the NUL)."""

FLEET_SIZES = {1: 44_418, 2: 86_050, 3: 127_698, 4: 169_330}
"""PULUMI_CONFIG of benchmarks/render_fleet.py's fleet, in bytes; Pulumi's own config package gives the same."""


def stack_file(tmp_path: Path, config: dict, name: str = "x") -> Path:
    path = tmp_path / f"Pulumi.{name}.yaml"
    path.write_text(yaml.safe_dump({"config": config}, allow_unicode=True))
    return path


def padded(total: int) -> dict:
    """A configuration whose PULUMI_CONFIG is exactly ``total`` bytes as the kernel counts it."""
    config = {"gpu-fabric:queueOwner": "standalone", "kubernetes:padding": ""}
    short = total - config_environment(config).sizes[CONFIG_VARIABLE]
    config["kubernetes:padding"] = "p" * short
    assert config_environment(config).sizes[CONFIG_VARIABLE] == total
    return config


def test_the_encoding_is_pulumis_byte_for_byte(tmp_path):
    path = tmp_path / "Pulumi.x.yaml"
    path.write_text(STACK_FILE, encoding="utf-8")
    environment = config_environment(read_stack_file(path, "gpu-fabric"))
    assert environment.config == PULUMIS_ENCODING
    assert environment.secret_keys == '["gpu-fabric:n","gpu-fabric:tok"]'  # a nested secret makes its key secret
    assert environment.sizes == {CONFIG_VARIABLE: 390, SECRET_KEYS_VARIABLE: 60}


@pytest.mark.parametrize("value, expected", [
    (1e-6, "0.000001"), (1e20, "100000000000000000000"), (1e21, "1e+21"), (1.5e-12, "1.5e-12"), (-0.0, "-0"),
    (0.1, "0.1"), (2**53 + 0.0, "9007199254740992"), ("\u2029&", '"\\u2029\\u0026"'), ("\x01\x7f", '"\\u0001\x7f"'),
    ({"b": 1, "a": [True, None]}, '{"a":[true,null],"b":1}'),
])
def test_values_are_written_as_gos_json_marshal_writes_them(value, expected):
    assert go_json(value) == expected


def test_the_fleet_sizes():
    assert {scale: config_environment(fleet_config(scale)).sizes[CONFIG_VARIABLE] for scale in FLEET_SIZES} == FLEET_SIZES


def test_the_fleet_at_3x_fits_and_at_4x_is_refused_naming_file_size_limit_keys_issue_and_fix(tmp_path):
    assert read_stack_file(stack_file(tmp_path, fleet_config(3), "fleet-x3"), "gpu-fabric")
    path = stack_file(tmp_path, fleet_config(4), "fleet-x4")
    with pytest.raises(StackFileError) as refused:
        read_stack_file(path, "gpu-fabric")
    text = str(refused.value)
    assert "\n" not in text and text.startswith(f"{path}: config: PULUMI_CONFIG would be 169,330 bytes")
    for part in ("131,072", "MAX_ARG_STRLEN", "argument list too long", "pulumi/pulumi#8680", "pulumi/pulumi#20402",
                 "largest keys: gpu-fabric:modelDeployments 158,882 bytes, gpu-fabric:namespaces 7,708 bytes",
                 "split the tenants", "[stack-config-size]"):
        assert part in text, part
    assert SECRET_KEYS_VARIABLE not in text  # the other variable fits: only the one over is named


def test_just_under_the_limit_passes_and_just_over_is_refused(tmp_path):
    assert not config_size_findings(padded(MAX_ARG_STRLEN))
    assert read_stack_file(stack_file(tmp_path, padded(MAX_ARG_STRLEN)), "gpu-fabric")
    over = config_size_findings(padded(MAX_ARG_STRLEN + 1))
    assert [(f.rule, str(f.path)) for f in over] == [(STACK_CONFIG_SIZE, "config")]
    assert "131,073 bytes" in over[0].message and "kubernetes:padding" in over[0].message  # other namespaces count
    with pytest.raises(StackFileError):
        read_stack_file(stack_file(tmp_path, padded(MAX_ARG_STRLEN + 1)), "gpu-fabric")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="MAX_ARG_STRLEN is Linux's")
def test_the_kernel_draws_the_line_where_the_rule_does(tmp_path):
    for total, starts in ((MAX_ARG_STRLEN, True), (MAX_ARG_STRLEN + 1, False)):
        environment = {CONFIG_VARIABLE: config_environment(padded(total)).config}
        try:
            subprocess.run([sys.executable, "-c", "pass"], env=environment, check=True)
            started = True
        except OSError as error:  # E2BIG: "Argument list too long", as pulumi preview's fork/exec says
            assert error.errno == 7, error
            started = False
        assert started is starts, total


def test_a_secure_value_counts_as_its_ciphertext_and_its_key_in_the_secret_keys():
    ciphertext = "v1:" + "A" * 1_000
    plain = config_environment({"gpu-fabric:hfToken": ciphertext})
    secure = config_environment({"gpu-fabric:hfToken": {"secure": ciphertext}})
    assert secure.config == plain.config
    assert (plain.secret_keys, secure.secret_keys) == ("[]", '["gpu-fabric:hfToken"]')


def test_each_variable_is_limited_on_its_own_and_named():
    many = {f"gpu-fabric:{'k' * 120}{i:05d}": {"secure": "v1:x"} for i in range(1_200)}
    sizes = config_environment(many).sizes
    assert sizes[SECRET_KEYS_VARIABLE] > MAX_ARG_STRLEN  # past the limit only together with PULUMI_CONFIG
    messages = [finding.message for finding in config_size_findings(many)]
    assert [message.split(" ", 1)[0] for message in messages] == [CONFIG_VARIABLE, SECRET_KEYS_VARIABLE]


def test_the_rule_is_registered_as_unusable_input():
    entry = registered("stack-config-size")
    assert entry.rule is STACK_CONFIG_SIZE and entry.policy is None and entry.exit_code == 2
