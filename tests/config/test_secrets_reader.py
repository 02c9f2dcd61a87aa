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


# Issue 40, round 5: what passed, and what was refused although valid.
JWT = "eyJhbGciOiJIUzI1NiJ9" + "." + "eyJzdWIiOiIxMjM0NTY3ODkwIn0" + ".c2lnbmF0dXJlLW5vdC1yZWFs"  # a JWT's shape, not a real one


@pytest.mark.parametrize("name, value", [
    ("PGPASSWORD", "correct-horse-battery"),
    ("MYSQL_PWD", "correct-horse-battery"),
    ("hfToken", "a-plain-token-value"),
    ("clientSecret", "a-plain-secret-value"),
    ("X-Api-Key", "a-plain-api-key-value"),
    ("Authorization", f"Bearer {JWT}"),
    ("Authorization", "Basic dXNlcjpodW50ZXIy"),
    ("DATABASE_URL", "postgres://app:hunter2hunter2@db:5432/app"),
    ("anything", JWT),
])
def test_round_5_credentials_are_recognised(name, value):
    reason = credential_reason(name, value)
    assert reason is not None and value not in reason


@pytest.mark.parametrize("name, value", [
    ("SSH_PUBLIC_KEY", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIH0x user@host"),
    ("AUTHORIZED_KEY", "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ user@host"),
    ("SIGNING_KEY", "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----"),
    ("EOS_TOKEN", "<|im_end|>"),
    ("PAD_TOKEN", "<|endoftext|>"),
    ("SEP_TOKEN", "[SEP]"),
    ("KMS_KEY_ALIAS", "alias/aws/ebs-default"),
    ("KMS_KEY", "arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"),
    ("KMS_KEY", "1234abcd-12ab-34cd-56ef-1234567890ab"),
    ("MODEL_URL", "https://huggingface.co/org/model"),
    ("DATABASE_URL", "postgres://app:$(DB_PASSWORD)@db:5432/app"),
    ("PWD", "/workspace"),
])
def test_round_5_valid_settings_are_no_credentials(name, value):
    assert credential_reason(name, value) is None


@pytest.mark.parametrize("args, flagged", [
    (["vllm", "serve", "m", "--api-key", "a-plain-api-key-value"], [4]),
    (["vllm", "serve", "m", "--api-key=a-plain-api-key-value"], [3]),
    (["--hf-token", "a-plain-token-value", "--max-num-batched-tokens", "81920"], [1]),
    (["--api-key", "$(VLLM_API_KEY)", "--hf-token-path", "/var/run/hf/token"], []),
    (["sh", "-c", "vllm serve m --api-key a-plain-api-key-value"], [2]),
    (["--tokenizer", "meta-llama/Llama-3.1-8B", "--kv-transfer-config", '{"kv_connector":"NixlConnector"}'], []),
    (["--header", f"Authorization: Bearer {JWT}"], [1]),
])
def test_credential_flags_are_recognised_by_the_flags_name(args, flagged):
    found = plaintext_credentials({"args": args}, "c")
    assert [path for path, _ in found] == [f"c.args[{index}]" for index in flagged]
    assert not any(word in reason for _, reason in found for word in args if len(word) > 12 and "-" not in word[:2])


def test_annotations_tags_and_probe_headers_are_read_by_name():
    value = {"metadata": {"annotations": {"ci/token": "ghp_" + "Zy9" * 12, "note": "plain"}},
             "tags": {"HF_TOKEN": "a-plain-token-value", "team": "ml"},
             "tagList": [{"key": "DB_PASSWORD", "value": "hunter2hunter2"}],
             "containers": [{"readinessProbe": {"httpGet": {"path": "/health", "httpHeaders": [
                 {"name": "Authorization", "value": f"Bearer {JWT}"}]}}}]}
    assert [path for path, _ in plaintext_credentials(value, "")] == [
        "metadata.annotations.ci/token", "tags.HF_TOKEN", "containers[0].readinessProbe.httpGet.httpHeaders[0].value"]
    aws_tags = {"tags": [{"Key": "DB_PASSWORD", "Value": "hunter2hunter2"}]}
    assert [path for path, _ in plaintext_credentials(aws_tags, "")] == ["tags[0].Value"]


def test_a_config_maps_data_and_a_last_applied_annotation_are_read():
    config_map = {"kind": "ConfigMap", "metadata": {"name": "env"},
                  "data": {"HF_TOKEN": "a-plain-token-value", "EOS_TOKEN": "<|im_end|>"}}
    assert [path for path, _ in plaintext_credentials(config_map, "")] == ["data.HF_TOKEN"]
    applied = {"metadata": {"annotations": {
        "kubectl.kubernetes.io/last-applied-configuration": __import__("json").dumps(config_map)}}}
    found = plaintext_credentials(applied, "")
    assert [path for path, _ in found] == ["metadata.annotations.kubectl.kubernetes.io/last-applied-configuration"]
    secret = {"kind": "Secret", "stringData": {"HF_TOKEN": HF_TOKEN}}
    assert not plaintext_credentials(secret, "")  # where a credential belongs


def test_the_stack_file_refuses_a_token_in_a_node_groups_tags_and_vllm_api_key(tmp_path):
    path = tmp_path / "Pulumi.x.yaml"
    path.write_text("config:\n  gpu-fabric:pools:\n    - name: p\n      aws:\n        tags:\n"
                    "          HF_TOKEN: a-plain-token-value\n"
                    "  gpu-fabric:modelDeployments:\n    - roles:\n        - extraArgs: [--api-key, a-plain-api-key-value]\n")
    with pytest.raises(StackFileError) as raised:
        read_stack_file(path, "gpu-fabric")
    message = str(raised.value)
    assert "gpu-fabric:pools[0].aws.tags.HF_TOKEN" in message and "a-plain-token-value" not in message
    assert "gpu-fabric:modelDeployments[0].roles[0].extraArgs[1]" in message
    assert "a-plain-api-key-value" not in message


@pytest.mark.parametrize("name, value", [
    ("MOONCAKE_KEY_PREFIX", "mooncake-kv-cache"),
    ("AUTH_CONFIG_MAP", "oidc-settings"),
    ("TOKEN_TIMEOUT", "30minutes"),
])
def test_settings_about_a_credential_are_no_credential(name, value):
    assert credential_reason(name, value) is None


def test_auth_as_the_last_word_names_a_credential():
    assert credential_reason("REDISCLI_AUTH", "correct-horse-battery") is not None
