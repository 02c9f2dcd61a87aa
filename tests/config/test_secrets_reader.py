"""Credentials in plain text and Pulumi's ``secure:`` values, read by one reader (``config.secrets``)."""

import pytest

from gpu_fabric.config.secrets import (
    SECRET_PLACEHOLDER,
    credential_reason,
    hide_secure,
    namespace_values,
    plaintext_credentials,
)
from gpu_fabric.config.stack_file import StackFileError, read_stack_file

HF_TOKEN = "hf_" + "Ab1" * 11 + "x"  # the shape of a Hugging Face user access token, not a real one
GITHUB_TOKEN = "ghp_" + "Zy9" * 12
AWS_KEY_ID = "AKIA" + "ABCDEFGH23456789"
CIPHERTEXT = "v1:AAAAAAAAAAAAAAAA:ciphertextnobodymayquote"


@pytest.mark.parametrize("name, value", [
    ("HF_TOKEN", "a-plain-token-value"),
    ("HUGGING_FACE_HUB_TOKEN", "whatever-it-is"),
    ("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMIK7MDENGbPxRfiCY"),
    ("OPENAI_API_KEY", "not-a-known-shape"),
    ("DB_PASSWORD", "correct horse"),
    ("anything", HF_TOKEN),
    ("GH", GITHUB_TOKEN),
    ("AWS_ACCESS_KEY_ID", AWS_KEY_ID),  # an identifier by name, a credential by its shape
    ("SCRIPT", f"--token={HF_TOKEN}"),
])
def test_credentials_are_recognised_without_quoting_them(name, value):
    reason = credential_reason(name, value)
    assert reason is not None and value not in reason


@pytest.mark.parametrize("name, value", [
    ("HF_TOKEN_PATH", "/var/run/secrets/hf/token"),
    ("SECRET_NAME", "hf-token-secret"),
    ("SSL_KEY_FILE", "certificates/server.pem"),
    ("MAX_NUM_BATCHED_TOKENS", "81920000"),
    ("TOKENIZERS_PARALLELISM", "false-ish-value"),
    ("HF_TOKEN", SECRET_PLACEHOLDER),
    ("HF_TOKEN", "$(HF_TOKEN_FROM_SECRET)"),
    ("HF_TOKEN", "short"),
    ("HF_HUB_DISABLE_IMPLICIT_TOKEN", "1"),
    ("HF_HUB_ENABLE_HF_TRANSFER", "hf_transfer"),
    ("SERVED_MODEL", "sk-production-pool"),
])
def test_names_and_values_that_only_resemble_credentials_pass(name, value):
    assert credential_reason(name, value) is None


def test_secure_leaves_are_hidden_everywhere():
    value = {"roles": [{"env": [{"name": "HF_TOKEN", "value": {"secure": CIPHERTEXT}}]}]}
    hidden, found = hide_secure(value)
    assert found and hidden["roles"][0]["env"][0]["value"] == SECRET_PLACEHOLDER
    values = namespace_values({"gpu-fabric:modelDeployments": [value], "gpu-fabric:queueOwner": {"secure": CIPHERTEXT},
                               "aws:region": "us-east-1"}, "gpu-fabric")
    assert values == {"modelDeployments": [hidden], "queueOwner": SECRET_PLACEHOLDER}
    assert not plaintext_credentials(value, "x")


def test_plaintext_credentials_name_each_field_in_order():
    deployment = {"roles": [{"env": [{"name": "A", "value": "1"}, {"name": "HF_TOKEN", "value": "plain-token-1"}],
                             "command": ["sh", "-c", "AWS_SECRET_ACCESS_KEY=abcdefghijkl vllm serve m"],
                             "extraArgs": ["--hf-token", HF_TOKEN]}],
                  "kvCacheBackend": {"extraEnv": [{"name": "REDIS_PASSWORD", "value": "hunter2hunter2"}]}}
    paths = [path for path, _ in plaintext_credentials(deployment, "gpu-fabric:modelDeployments[0]")]
    assert paths == ["gpu-fabric:modelDeployments[0].roles[0].env[1].value",
                     "gpu-fabric:modelDeployments[0].roles[0].command[2]",
                     "gpu-fabric:modelDeployments[0].roles[0].extraArgs[1]",
                     "gpu-fabric:modelDeployments[0].kvCacheBackend.extraEnv[0].value"]


def test_a_deeply_nested_value_is_read_without_recursion():
    value: dict = {"env": [{"name": "HF_TOKEN", "value": "plain-token-1"}]}
    for _ in range(5000):
        value = {"x": [value]}
    assert len(plaintext_credentials(value, "k")) == 1


STACK = """config:
  gpu-fabric:modelDeployments:
    - name: m
      roles:
        - name: r
          env:
            - name: HF_TOKEN
              value: {value}
"""


def test_the_stack_file_refuses_a_plaintext_token_at_its_path(tmp_path):
    path = tmp_path / "Pulumi.x.yaml"
    path.write_text(STACK.format(value=HF_TOKEN))
    with pytest.raises(StackFileError) as raised:
        read_stack_file(path, "gpu-fabric")
    message = str(raised.value)
    assert "gpu-fabric:modelDeployments[0].roles[0].env[0].value: HF_TOKEN holds a Hugging Face token in plain text" in message
    assert "pulumi config set --secret --path 'gpu-fabric:modelDeployments[0].roles[0].env[0].value'" in message
    assert HF_TOKEN not in message


def test_the_stack_file_takes_the_same_token_as_a_secret(tmp_path):
    path = tmp_path / "Pulumi.x.yaml"
    path.write_text(STACK.format(value="{secure: " + CIPHERTEXT + "}"))
    assert read_stack_file(path, "gpu-fabric")["gpu-fabric:modelDeployments"][0]["roles"][0]["env"][0]["value"] == {"secure": CIPHERTEXT}


def test_other_namespaces_are_not_judged(tmp_path):
    path = tmp_path / "Pulumi.x.yaml"
    path.write_text(STACK.format(value=HF_TOKEN).replace("gpu-fabric:", "other:"))
    assert read_stack_file(path, "gpu-fabric")
