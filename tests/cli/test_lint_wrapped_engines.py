"""``gpu-fabric lint --stack`` sees a TCP fallback behind ``tini``, ``dumb-init``, ``env`` and ``sh -c``."""

import pytest
import yaml

from gpu_fabric.cli import main
from support.stack_configs import PROJECT_DIR
from support.workloads import with_container, wrap

NIXL = "vllm serve m --kv-transfer-config '{\"kv_connector\":\"NixlConnector\"}'"


@pytest.mark.parametrize("command", [
    ["tini", "--", "sh", "-c", f"UCX_TLS=tcp,cuda_copy exec {NIXL}"],
    ["dumb-init", "--", "bash", "-lc", f"export UCX_TLS=tcp,cuda_copy && {NIXL}"],
    ["env", "-u", "LD_PRELOAD", "sh", "-c", f"exec env UCX_TLS=tcp,cuda_copy {NIXL}"],
])
def test_lint_stack_refuses_tcp_behind_a_wrapper(capsys, tmp_path, command):
    manifest = tmp_path / "deployment.yaml"
    manifest.write_text(yaml.safe_dump(wrap("Deployment", with_container(command=command))))
    code = main(["lint", "--stack", "aws-efa", "--project", str(PROJECT_DIR), str(manifest)])
    out = capsys.readouterr().out
    assert code == 1, out
    assert "spec.template.spec.containers[0].command[" in out and "UCX_TLS=tcp,cuda_copy has no srd" in out
