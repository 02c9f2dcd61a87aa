"""``gpu-fabric lint --stack`` on a dra pool: device plugins and device-plugin keys are refused there."""

from __future__ import annotations

from pathlib import Path

import yaml

from gpu_fabric.cli import main
from support.stack_configs import PROJECT_DIR


def _write(path: Path, *documents: dict) -> str:
    path.write_text(yaml.safe_dump_all(documents))
    return str(path)


EFA_PLUGIN = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "efa", "namespace": "kube-system"},
              "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}}, "spec": {
                  "nodeSelector": {"vpc.amazonaws.com/efa.present": "true"}, "tolerations": [{"operator": "Exists"}],
                  "containers": [{"name": "p", "image": "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/aws-efa-k8s-device-plugin:v0.5.20"}]}}}}
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "nccl", "namespace": "team-a",
                                                        "labels": {"kueue.x-k8s.io/queue-name": "q"}},
       "spec": {"nodeSelector": {"gpu-fabric.io/pool": "p5en-h200"}, "tolerations": [{"operator": "Exists"}],
                "containers": [{"name": "c", "image": "i:1", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}}


def test_a_plugin_and_a_plugin_key_on_the_dra_pool_are_errors(tmp_path: Path, capsys) -> None:
    code = main(["lint", "--stack", "dra-efa", "--project", str(PROJECT_DIR), _write(tmp_path / "m.yaml", EFA_PLUGIN, POD)])
    out = capsys.readouterr().out
    assert code == 1, out
    assert "[dra-pool-device-plugin]" in out and "[dra-pool-plugin-keys]" in out
    assert "requests nvidia.com/gpu on pool p5en-h200" in out


def test_a_pod_without_plugin_keys_passes(tmp_path: Path, capsys) -> None:
    code = main(["lint", "--stack", "dra-efa", "--project", str(PROJECT_DIR), _write(tmp_path / "ok.yaml", {
        **POD, "spec": {**POD["spec"], "containers": [{"name": "c", "image": "i:1"}]}})])
    out = capsys.readouterr().out
    assert "dra-pool" not in out, out
