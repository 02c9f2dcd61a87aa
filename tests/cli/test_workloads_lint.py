"""``gpu-fabric lint --stack NAME [--project DIR] FILE...`` over tests/fixtures/workloads.

The cases that matter most: an EFA vLLM Deployment without hugepages and with ``UCX_TLS=tcp,cuda_copy``,
a GPUStack RDMA key on an EFA pool and NVIDIA's device plugin v0.19.1 with MOFED on are refused (exit 1,
naming file, object and field); the same Deployment done right is accepted.
"""

import pytest

from gpu_fabric.cli import main
from support.stack_configs import PROJECT_DIR

FIXTURES = PROJECT_DIR / "tests" / "fixtures" / "workloads"


def lint(capsys, *files: str, stack: str | None = "aws-efa"):
    argv = ["lint", *(["--stack", stack, "--project", str(PROJECT_DIR)] if stack else []), *(str(FIXTURES / f) for f in files)]
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_the_wrong_vllm_deployment_is_refused_naming_file_object_and_field(capsys):
    code, out, _ = lint(capsys, "vllm-efa-wrong.yaml")
    assert code == 1
    source = str(FIXTURES / "vllm-efa-wrong.yaml")
    assert (f"ERROR {source}: Deployment team-a/vllm-prefill "
            'spec.template.spec.containers[0].resources.limits["vpc.amazonaws.com/efa"] '
            "(pool gpustack--nvidia-h100-linux-amd64): requests vpc.amazonaws.com/efa without hugepages-2Mi") in out
    assert (f"ERROR {source}: Deployment team-a/vllm-prefill spec.template.spec.containers[0].env[0] "
            "(pool gpustack--nvidia-h100-linux-amd64): UCX_TLS=tcp,cuda_copy has no srd") in out
    assert "2 errors" in out


def test_the_same_deployment_done_right_is_accepted(capsys):
    code, out, _ = lint(capsys, "vllm-efa-right.yaml")
    assert code == 0, out
    assert "1 pod templates judged, 0 not judged" in out and "0 errors, 0 warnings" in out


def test_a_gpustack_rdma_key_on_an_efa_pool_is_refused(capsys):
    code, out, _ = lint(capsys, "rdma-key-on-efa.yaml")
    assert code == 1
    assert ("Job team-a/nccl-tests spec.template.spec.containers[0].resources.limits[\"device.gpustack.ai/rdma\"] "
            "(pool gpustack--nvidia-h100-linux-amd64): requests device.gpustack.ai/rdma, which nothing advertises") in out


def test_nvidia_device_plugin_v0_19_1_with_mofed_on_is_refused_and_off_accepted(capsys):
    code, out, _ = lint(capsys, "nvidia-device-plugin-mofed.yaml")
    assert code == 1
    assert ("DaemonSet kube-system/nvidia-device-plugin-daemonset spec.template.spec.containers[0] "
            "(pool gpustack--nvidia-h100-linux-amd64): MOFED support is on (v0.19.1 enables MOFED support by default") in out
    code, out, _ = lint(capsys, "nvidia-device-plugin-mofed-off.yaml")
    assert code == 0, out
    assert "1 device-plugin DaemonSets checked as advertisers" in out


def test_other_kinds_are_counted_and_unresolvable_scheduling_is_not_judged(capsys):
    code, out, _ = lint(capsys, "other-kinds.yaml")
    assert code == 0
    assert "NOT JUDGED" in out and "Pod team-a/system-tool spec: lands on no pool of the stack" in out
    assert "nodeSelector requires role=system but the nodes have no label role" in out
    assert "1 objects of other kinds passed over" in out


def test_malformed_workloads_are_refused_naming_file_and_path(capsys):
    code, _, err = lint(capsys, "malformed.yaml")
    assert code == 2
    assert f"{FIXTURES / 'malformed.yaml'}: Deployment team-a/broken spec.template.spec.containers: must be a list" in err


def test_an_unknown_stack_is_a_usage_error(capsys):
    code, _, err = lint(capsys, "vllm-efa-right.yaml", stack="no-such-stack")
    assert code == 2 and "no stack 'no-such-stack'" in err


@pytest.mark.parametrize("fixture", ["vllm-efa-wrong.yaml", "rdma-key-on-efa.yaml"])
def test_without_stack_lint_works_as_before(capsys, fixture):
    code, out, _ = lint(capsys, fixture, stack=None)
    assert code == 0
    assert "\nread 0 GPUStack objects (1 other objects passed over)\n" in out
    assert "pod templates judged" not in out


def _write_yaml(path, *objects):
    import yaml

    path.write_text(yaml.safe_dump_all(list(objects), sort_keys=False))
    return str(path)


def _own_plugin():
    from gpu_fabric.validation.configuration import load_config
    from gpu_fabric.plan.fabric_plan import stack_device_plugin_daemonsets
    from support.stack_configs import stack_values

    return stack_device_plugin_daemonsets(load_config(stack_values("aws-efa")))[0]


def test_the_stacks_own_plugin_in_the_files_counts_once(capsys, tmp_path):
    # Linting a render's k8s/ output: the EFA plugin is both the stack's and the file's, one advertiser.
    plugin = _write_yaml(tmp_path / "plugin.yaml", _own_plugin())
    code = main(["lint", "--stack", "aws-efa", "--project", str(PROJECT_DIR), plugin])
    out = capsys.readouterr().out
    assert code == 0, out


def test_a_second_advertiser_beside_the_stacks_plugin_is_refused(capsys, tmp_path):
    dranet = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "aws-dranet", "namespace": "kube-system"},
              "spec": {"template": {"spec": {
                  "nodeSelector": {"vpc.amazonaws.com/efa.present": "true"}, "tolerations": [{"operator": "Exists"}],
                  "containers": [{"name": "dranet", "image": "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/aws-dranet:v1.0.0"}]}}}}
    code = main(["lint", "--stack", "aws-efa", "--project", str(PROJECT_DIR), _write_yaml(tmp_path / "dranet.yaml", dranet)])
    out = capsys.readouterr().out
    assert code == 1
    assert "AWS EFA DRA driver (DRANET): DaemonSet kube-system/aws-dranet" in out
    assert "AWS EFA device plugin: DaemonSet kube-system/aws-efa-k8s-device-plugin" in out


def test_lint_with_a_stack_assumes_that_stack_s_operator_unless_told(capsys, tmp_path):
    import shutil

    shutil.copytree(PROJECT_DIR / "stacks", tmp_path / "stacks")
    stack_file = tmp_path / "stacks" / "Pulumi.seed-rdma.yaml"
    text = stack_file.read_text()
    written = next(line for line in text.splitlines() if line.strip().startswith("gpu-fabric:gpustackOperator:"))
    stack_file.write_text(text.replace(written, '  gpu-fabric:gpustackOperator: "0.9.2"'))
    manifest = str(FIXTURES / "vllm-efa-right.yaml")
    main(["lint", "--stack", "seed-rdma", "--project", str(tmp_path), manifest])
    assert capsys.readouterr().out.startswith("GPUStack operator 0.9.2 assumed (0.9 line")
    main(["lint", "--stack", "seed-rdma", "--project", str(tmp_path), "--operator", "0.10.0", manifest])
    assert capsys.readouterr().out.startswith("GPUStack operator 0.10.0 assumed")
