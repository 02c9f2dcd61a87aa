"""``verify --record`` keeps no secret: Secrets in lists, and credentials in any recorded object."""

import json

from gpu_fabric.verify.recording import redact_secret

HF_TOKEN = "hf_" + "Ab1" * 11 + "x"  # the shape of a Hugging Face user access token, not a real one


def _redacted(document) -> dict:
    return json.loads(redact_secret(json.dumps(document).encode()))


def test_a_live_objects_token_is_not_recorded():
    deployment = {"apiVersion": "worker.gpustack.ai/v1", "kind": "ModelDeployment", "metadata": {"name": "m"},
                  "spec": {"roles": [{"name": "r", "env": [{"name": "HF_TOKEN", "value": HF_TOKEN},
                                                           {"name": "UCX_TLS", "value": "rc,cuda_copy"}],
                                      "extraArgs": ["--hf-token", HF_TOKEN]}]}}
    listing = {"kind": "ModelDeploymentList", "items": [deployment]}
    text = json.dumps(_redacted(listing))
    assert HF_TOKEN not in text
    roles = _redacted(listing)["items"][0]["spec"]["roles"][0]
    assert roles["env"] == [{"name": "HF_TOKEN", "value": "[redacted]"}, {"name": "UCX_TLS", "value": "rc,cuda_copy"}]
    assert roles["extraArgs"] == ["--hf-token", "[redacted]"]


def test_secrets_in_a_list_and_last_applied_annotations_are_redacted():
    secret = {"kind": "Secret", "metadata": {"name": "hf"}, "data": {"token": "aGYtc2VjcmV0"}}
    listing = {"kind": "SecretList", "items": [secret]}
    assert _redacted(listing)["items"][0]["data"] == {"token": "[redacted]"}
    applied = {"kind": "Deployment", "spec": {"template": {"spec": {"containers": [
        {"name": "c", "env": [{"name": "HF_TOKEN", "value": HF_TOKEN}]}]}}}}
    pod = {"kind": "Deployment", "metadata": {"name": "d", "annotations": {
        "kubectl.kubernetes.io/last-applied-configuration": json.dumps(applied)}}}
    assert HF_TOKEN not in json.dumps(_redacted(pod))


def test_a_body_without_secrets_is_kept_byte_for_byte():
    body = b'{"kind": "Node", "metadata": {"name": "n"}, "spec": {"env": [{"name": "A", "value": "b"}]}}'
    assert redact_secret(body) == body


def test_a_github_token_in_a_resource_claims_annotation_is_not_recorded():
    token = "ghp_" + "Zy9" * 12
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": "c", "annotations": {"ci.example.com/by": token}}, "spec": {"devices": {}}}
    redacted = _redacted({"kind": "ResourceClaimList", "items": [claim]})
    assert token not in json.dumps(redacted)
    assert redacted["items"][0]["metadata"]["annotations"]["ci.example.com/by"] == "[redacted]"


def test_a_token_in_a_config_maps_last_applied_annotation_is_not_recorded():
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "env"},
                  "data": {"NOTE": f"fetch with {HF_TOKEN}"}}
    live = {**config_map, "data": {"NOTE": "rotated"}, "metadata": {"name": "env", "annotations": {
        "kubectl.kubernetes.io/last-applied-configuration": json.dumps(config_map)}}}
    redacted = _redacted(live)
    assert HF_TOKEN not in json.dumps(redacted)
    assert redacted["data"] == {"NOTE": "rotated"}


def test_a_body_that_is_no_json_has_its_tokens_masked():
    body = f"NCCL INFO ok\nexport HF_TOKEN={HF_TOKEN}\n".encode()
    assert redact_secret(body) == b"NCCL INFO ok\nexport HF_TOKEN=[redacted]\n"
