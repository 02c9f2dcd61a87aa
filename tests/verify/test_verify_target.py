"""Which cluster verify reads: the stack's EKS cluster (through EKS's API, moto on 127.0.0.1), its
context, or the ambient kubeconfig; failures are one-line reasons."""

from __future__ import annotations

import importlib.util
import json
import urllib.request
from pathlib import Path

import pytest
from support.stack_configs import seed_values, stack_values

from gpu_fabric.validation.configuration import load_config
from gpu_fabric.verify.api import ClusterUnavailable
from gpu_fabric.verify.target import ambient_kubeconfig, connect

PROJECT_DIR = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def moto_helper():
    spec = importlib.util.spec_from_file_location("_gpu_fabric_tests_moto_server", Path(__file__).resolve().parents[1] / "support" / "moto_server.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def aws_env(monkeypatch, tmp_path, moto_helper, *, credentials, endpoint=None):
    for key in [k for k in __import__("os").environ if k.startswith("AWS_")]:
        monkeypatch.delenv(key)
    for key, value in moto_helper.isolated_aws_environment(tmp_path, credentials=credentials, endpoint_url=endpoint).items():
        if key.startswith("AWS_"):
            monkeypatch.setenv(key, value)


def test_an_eks_stack_is_read_through_the_clusters_endpoint(tmp_path, monkeypatch, moto_helper):
    import boto3

    with moto_helper.start_moto_server() as endpoint:
        aws_env(monkeypatch, tmp_path, moto_helper, credentials=True, endpoint=endpoint)
        eks = boto3.client("eks", region_name="us-east-1")
        created = eks.create_cluster(name="llm-serving", roleArn="arn:aws:iam::123456789012:role/eks",
                                     resourcesVpcConfig={"subnetIds": ["subnet-0a1b2c3d4e5f60718"]})["cluster"]
        config = load_config(stack_values("aws-efa"))
        transport, target = connect(config, {"aws:region": "us-east-1"})
    assert transport.host == created["endpoint"].rstrip("/")
    assert target.endswith("(EKS cluster llm-serving)")


def test_an_eks_stack_without_credentials_or_cluster_is_a_reason(tmp_path, monkeypatch, moto_helper):
    config = load_config(stack_values("aws-efa"))
    with moto_helper.start_moto_server() as endpoint:
        # moto's state outlives a server; forget clusters other tests created.
        urllib.request.urlopen(urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST")).close()
        aws_env(monkeypatch, tmp_path, moto_helper, credentials=True, endpoint=endpoint)
        with pytest.raises(ClusterUnavailable, match=r"^EKS cluster llm-serving: .*(ResourceNotFound|No cluster found)"):
            connect(config, {"aws:region": "us-east-1"})
        aws_env(monkeypatch, tmp_path, moto_helper, credentials=False, endpoint=endpoint)
        with pytest.raises(ClusterUnavailable, match=r"^EKS cluster llm-serving: Unable to locate credentials"):
            connect(config, {"aws:region": "us-east-1"})


def test_an_explicit_kubeconfig_wins_over_the_eks_target(tmp_path):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "lab",
        "clusters": [{"name": "lab", "cluster": {"server": "https://127.0.0.1:6443"}}],
        "users": [{"name": "lab", "user": {"token": "t"}}],
        "contexts": [{"name": "lab", "context": {"cluster": "lab", "user": "lab"}}]}))
    transport, target = connect(load_config(stack_values("aws-efa")), {}, kubeconfig=str(kubeconfig))
    assert transport.host == "https://127.0.0.1:6443"
    assert target == f"https://127.0.0.1:6443 (kubeconfig {kubeconfig})"


def test_the_ambient_kubeconfig_is_found_like_kubectl(tmp_path, monkeypatch):
    first, second = tmp_path / "a", tmp_path / "b"
    second.write_text("{}")
    monkeypatch.setenv("KUBECONFIG", f"{first}:{second}")
    assert ambient_kubeconfig() == str(second)  # missing files in the list are skipped, as kubectl does
    monkeypatch.setenv("KUBECONFIG", str(first))
    assert ambient_kubeconfig() is None
    monkeypatch.delenv("KUBECONFIG")
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".kube").mkdir()
    (tmp_path / ".kube" / "config").write_text("{}")
    assert ambient_kubeconfig() == str(tmp_path / ".kube" / "config")


def test_no_kubeconfig_at_all_is_a_reason(tmp_path, monkeypatch):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(ClusterUnavailable, match="no kubeconfig"):
        connect(load_config(seed_values()), {})


def test_a_broken_kubeconfig_is_a_reason(tmp_path):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\ncontexts: []\nclusters: []\nusers: []\n")
    with pytest.raises(ClusterUnavailable, match=f"kubeconfig {kubeconfig}: "):
        connect(load_config(seed_values()), {}, kubeconfig=str(kubeconfig))
