"""Engine flags read from real command lines, and the rules for any workload on a fabric pool.

The command lines are the ones the engines' own docs give: vllm-project/vllm
``docs/features/nixl_connector_usage.md`` (JSON and dotted ``--kv-transfer-config``), ai-dynamo/dynamo's
vLLM launch script (``--connector kvbm nixl``) and SGLang disaggregation scripts run by Dynamo
(``--disaggregation-transfer-backend nixl``), and AWS's EFA settings (awsome-distributed-ai).
"""

import pytest

from gpu_fabric.kube.engine_flags import NIXL_CONNECTOR, read_container
from gpu_fabric.kube.pod_templates import WORKLOAD_KINDS, WorkloadShapeError, pod_templates
from gpu_fabric.kube.workload_rules import ERROR, WARNING, FabricPool
from gpu_fabric.kube.workloads import fabric_pool_of, judge_workloads
from gpu_fabric.validation.configuration import load_config

from support.stack_configs import stack_values
from support.workloads import VLLM_LIBFABRIC_JSON, SIDE_CHANNEL_HOST, pod_spec, wrap, with_container


# vLLM NixlConnector guide, "Basic Usage": the prefiller, as a shell line.
VLLM_PREFILLER = ("CUDA_VISIBLE_DEVICES=0 UCX_NET_DEVICES=all VLLM_NIXL_SIDE_CHANNEL_PORT=5600 vllm serve Qwen/Qwen3-0.6B "
                  "--port 8100 --enforce-eager --kv-transfer-config "
                  "'{\"kv_connector\":\"NixlConnector\",\"kv_role\":\"kv_both\",\"kv_load_failure_policy\":\"fail\"}'")


# vLLM NixlConnector guide, "Example: using LIBFABRIC backend", dotted form (the JSON form: support.workloads).
VLLM_LIBFABRIC_DOTTED = ["vllm", "serve", "<MODEL>", "--kv-transfer-config.kv_connector", "NixlConnector",
                         "--kv-transfer-config.kv_role", "kv_both",
                         "--kv-transfer-config.kv_connector_extra_config.backends+", "LIBFABRIC"]


# ai-dynamo/dynamo, the disaggregated vLLM launch with KVBM: the prefill worker.
DYNAMO_PREFILL = ["python3", "-m", "dynamo.vllm", "--model", "qwen/qwen3-0.6b", "--is-prefill-worker",
                  "--connector", "kvbm", "nixl", "--enforce-eager"]


# Dynamo's SGLang worker in disaggregated mode.
DYNAMO_SGLANG = ["python3", "-m", "dynamo.sglang", "--model-path", "Qwen/Qwen3-8B", "--page-size", "16", "--tp", "1",
                 "--disaggregation-mode", "prefill", "--disaggregation-bootstrap-port", "12345", "--host", "0.0.0.0",
                 "--disaggregation-transfer-backend", "nixl"]


def test_vllm_json_form_inside_a_shell_line():
    settings = read_container({"command": ["/bin/sh", "-c"], "args": [VLLM_PREFILLER]}, "spec.containers[0]")
    assert settings.uses_nixl().value == NIXL_CONNECTOR
    assert settings.nixl_backends().value == ("UCX",)  # NixlConnector's default backend
    assert settings.env["UCX_NET_DEVICES"].value == "all"
    assert settings.env["VLLM_NIXL_SIDE_CHANNEL_PORT"].path == "spec.containers[0].args[0]"


@pytest.mark.parametrize("command", [VLLM_LIBFABRIC_JSON, VLLM_LIBFABRIC_DOTTED])
def test_vllm_libfabric_backend_in_json_and_dotted_forms(command):
    settings = read_container({"command": command}, "c")
    assert settings.nixl_backends().value == ("LIBFABRIC",)
    assert settings.nixl_backends().path == "c.command[3]"


def test_dotted_assignment_and_equals_forms():
    settings = read_container({"args": ["--kv-transfer-config={\"kv_connector\":\"NixlConnector\"}",
                                        "--kv-transfer-config.kv_connector_extra_config.backends", '["UCX","LIBFABRIC"]']}, "c")
    assert settings.nixl_backends().value == ("UCX", "LIBFABRIC")


def test_dynamo_connector_list():
    settings = read_container({"command": DYNAMO_PREFILL}, "c")
    assert [s.value for s in settings.kv_connectors()] == ["kvbm", NIXL_CONNECTOR]
    assert settings.nixl_backends().value == ("UCX",)


def test_sglang_transfer_backend():
    settings = read_container({"command": DYNAMO_SGLANG}, "c")
    assert settings.uses_nixl() is not None
    mooncake = read_container({"command": [*DYNAMO_SGLANG[:-1], "mooncake"]}, "c")
    assert mooncake.uses_nixl() is None


def test_env_entries_and_script_exports():
    container = {"command": ["bash", "-lc", "export FI_PROVIDER=efa && exec vllm serve m"],
                 "env": [{"name": "UCX_TLS", "value": "srd,cuda_copy,tcp"},
                         {"name": "SECRET", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]}
    settings = read_container(container, "c")
    assert settings.env["UCX_TLS"].path == "c.env[0]"
    assert settings.env["FI_PROVIDER"].value == "efa"
    assert settings.unresolved_env == ["c.env[1]"]


def test_a_kv_transfer_config_that_is_not_json_is_a_problem():
    settings = read_container({"args": ["--kv-transfer-config", "{kv_connector: NixlConnector}"]}, "c")
    assert settings.problems and settings.problems[0][0] == "c.args[0]"


@pytest.mark.parametrize("kind", [k for k in WORKLOAD_KINDS if k != "ReplicaSet"])
def test_every_workload_kind_yields_its_pod_template(kind):
    templates = pod_templates(wrap(kind, pod_spec()))
    assert len(templates) == 1 and templates[0][1]["containers"][0]["name"] == "vllm"


def test_leader_worker_set_judges_both_templates():
    obj = wrap("LeaderWorkerSet", pod_spec())
    obj["spec"]["leaderWorkerTemplate"]["leaderTemplate"] = {"spec": pod_spec()}
    paths = [path for path, _ in pod_templates(obj)]
    assert paths == ["spec.leaderWorkerTemplate.leaderTemplate.spec", "spec.leaderWorkerTemplate.workerTemplate.spec"]


@pytest.mark.parametrize("change, path", [
    ({"containers": {"name": "x"}}, "spec.template.spec.containers"),
    ({"nodeSelector": {"gpu": True}}, "spec.template.spec.nodeSelector.gpu"),
    ({"tolerations": "all"}, "spec.template.spec.tolerations"),
])
def test_malformed_templates_name_the_path(change, path):
    with pytest.raises(WorkloadShapeError) as caught:
        judge_workloads([wrap("Deployment", pod_spec(**change))], [])
    assert caught.value.path == f"Deployment team-a/w {path}"


@pytest.fixture(scope="module")
def efa_pools() -> list[FabricPool]:
    return [fabric_pool_of(pool) for pool in load_config(stack_values("aws-efa")).pools]


@pytest.fixture(scope="module")
def rdma_pools() -> list[FabricPool]:
    return [fabric_pool_of(pool) for pool in load_config(stack_values("seed-rdma")).pools]


def _findings(pools, pod_spec, kind="Deployment"):
    report = judge_workloads([wrap(kind, pod_spec)], pools)
    return {(f.severity, f.rule_id): f for f in report.findings}, report


def test_the_right_deployment_passes(efa_pools):
    findings, report = _findings(efa_pools, pod_spec())
    assert not findings
    assert report.judged == [("Deployment team-a/w", "spec.template.spec", ("gpustack--nvidia-h100-linux-amd64",))]


def test_efa_without_hugepages_is_refused(efa_pools):
    spec = pod_spec()
    del spec["containers"][0]["resources"]["limits"]["hugepages-2Mi"]
    finding = _findings(efa_pools, spec)[0][(ERROR, "efa-hugepages")]
    assert str(finding.path) == 'spec.template.spec.containers[0].resources.limits["vpc.amazonaws.com/efa"]'


@pytest.mark.parametrize("tls, refused", [("tcp,cuda_copy", True), ("srd,cuda_copy,tcp", False), ("^tcp", False),
                                          ("all", False), ("rc_x,rc,cuda_copy", True)])
def test_ucx_transports_on_efa(efa_pools, tls, refused):
    spec = with_container(command=["vllm", "serve", "m", "--kv-transfer-config", '{"kv_connector":"NixlConnector"}'],
                           env=[{"name": "UCX_TLS", "value": tls}])
    findings = _findings(efa_pools, spec)[0]
    assert ((ERROR, "nixl-backend-fabric") in findings) is refused


def test_ucx_on_efa_without_a_transport_list_is_advisory(efa_pools):
    spec = with_container(command=["vllm", "serve", "m", "--kv-transfer-config", '{"kv_connector":"NixlConnector"}'])
    findings = _findings(efa_pools, spec)[0]
    assert set(findings) == {(WARNING, "nixl-backend-fabric")}


def test_ucx_tls_without_rdma_on_an_rdma_pool(rdma_pools):
    spec = {"tolerations": [{"operator": "Exists"}],
            "containers": [{"name": "vllm", "command": list(DYNAMO_PREFILL),
                            "env": [{"name": "UCX_TLS", "value": "tcp,cuda_copy"}, dict(SIDE_CHANNEL_HOST)],
                            "resources": {"limits": {"nvidia.com/gpu": "1", "device.gpustack.ai/rdma": "1"}}}]}
    findings = _findings(rdma_pools, spec)[0]
    assert (ERROR, "nixl-backend-fabric") in findings
    spec["containers"][0]["env"][0]["value"] = "rc_x,rc,dc_x,dc,cuda_copy,cuda_ipc"  # the Dynamo guide's IB/RoCE list
    assert not _findings(rdma_pools, spec)[0]


def test_fabric_key_the_pool_does_not_advertise(efa_pools, rdma_pools):
    spec = pod_spec()
    spec["containers"][0]["resources"]["limits"]["device.gpustack.ai/rdma"] = "4"
    assert _findings(efa_pools, spec)[0][(ERROR, "fabric-key-advertised")].message.startswith("requests device.gpustack.ai/rdma")
    partitioned = {"tolerations": [{"operator": "Exists"}],
                   "containers": [{"name": "c", "resources": {"limits": {"device.gpustack.ai/rdma.partitioned": "1"}}}]}
    assert (ERROR, "fabric-key-advertised") in _findings(rdma_pools, partitioned)[0]  # the seed pool has no VFs


def test_nixl_without_a_fabric_key_falls_back_to_tcp(efa_pools):
    spec = pod_spec()
    del spec["containers"][0]["resources"]["limits"]["vpc.amazonaws.com/efa"]
    assert (ERROR, "transfer-has-fabric-key") in _findings(efa_pools, spec)[0]


@pytest.mark.parametrize("name, value, rule", [("FI_PROVIDER", "tcp", "efa-fi-provider"),
                                               ("RDMAV_FORK_SAFE", "1", "efa-no-rdmav")])
def test_efa_environment_rules(efa_pools, name, value, rule):
    spec = with_container(env=[{"name": name, "value": value}])
    finding = _findings(efa_pools, spec)[0][(ERROR, rule)]
    assert str(finding.path) == "spec.template.spec.containers[0].env[0]"
    assert not _findings(efa_pools, with_container(env=[{"name": "FI_PROVIDER", "value": "efa"}]))[0]


def test_device_manager_owned_nccl_ib_hca(rdma_pools):
    spec = {"tolerations": [{"operator": "Exists"}],
            "containers": [{"name": "c", "env": [{"name": "NCCL_IB_HCA", "value": "mlx5_0"}],
                            "resources": {"limits": {"device.gpustack.ai/rdma": "1"}}}]}
    assert (ERROR, "advertiser-owned-settings") in _findings(rdma_pools, spec)[0]


def test_infiniband_host_path(efa_pools):
    spec = pod_spec(volumes=[{"name": "ib", "hostPath": {"path": "/dev/infiniband"}}])
    spec["containers"][0]["volumeMounts"] = [{"name": "ib", "mountPath": "/dev/infiniband"}]
    assert str(_findings(efa_pools, spec)[0][(ERROR, "advertiser-owned-devices")].path) == \
        "spec.template.spec.containers[0].volumeMounts[0]"


def test_nccl_variables_with_nixl_are_advisory(efa_pools):
    spec = with_container(env=[{"name": "NCCL_SOCKET_IFNAME", "value": "eth0"}])
    assert set(_findings(efa_pools, spec)[0]) == {(WARNING, "nixl-nccl-dead-config")}


def test_nixl_side_channel_host_left_at_localhost_is_advisory(efa_pools):
    spec = pod_spec()
    spec["containers"][0]["env"] = []
    finding = _findings(efa_pools, spec)[0][(WARNING, "nixl-side-channel-host")]
    assert str(finding.path) == "spec.template.spec.containers[0].command[3]" and "unset (localhost)" in finding.message
    spec["containers"][0]["env"] = [{"name": "VLLM_NIXL_SIDE_CHANNEL_HOST", "value": "localhost"}]
    assert (WARNING, "nixl-side-channel-host") in _findings(efa_pools, spec)[0]
    sglang = pod_spec()
    sglang["containers"][0].update(command=list(DYNAMO_SGLANG), env=[])
    assert (WARNING, "nixl-side-channel-host") not in _findings(efa_pools, sglang)[0]  # SGLang has bootstrap ports instead


def test_scheduling_decides_the_pools(efa_pools):
    untolerated = pod_spec(tolerations=[])
    _, report = _findings(efa_pools, untolerated)
    # It asks for EFA: landing on no pool is a finding (issue 36), at the field every pool refuses it by.
    # The two pools refuse it by different fields (taint, nodeSelector), so the pod spec is named.
    assert [(f.rule_id, str(f.path)) for f in report.errors] == [("workload-lands-on-no-pool", "spec.template.spec")]
    assert "taint nvidia.com/gpu:NoSchedule is not tolerated" in report.errors[0].message and not report.not_judged
    generic = pod_spec(nodeSelector={"node.kubernetes.io/instance-type": "c6in.32xlarge"})
    _, report = _findings(efa_pools, generic)
    assert report.judged[0][2] == ("gpustack--generic-linux-amd64",)
    affinity = pod_spec(nodeSelector=None, affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "node.kubernetes.io/instance-type", "operator": "In",
                                                     "values": ["p5.48xlarge"]}]}]}}})
    _, report = _findings(efa_pools, affinity)
    assert report.judged[0][2] == ("gpustack--nvidia-h100-linux-amd64",)


def test_other_kinds_and_device_plugins_are_counted_not_judged(efa_pools):
    from gpu_fabric.kube.device_plugins import efa_device_plugin_daemonset

    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    report = judge_workloads([config_map, efa_device_plugin_daemonset()], efa_pools)
    assert (report.passed_over, report.device_plugins, report.findings) == (1, 1, [])


def test_a_fabric_key_on_a_pool_without_fabric_is_refused():
    pool = FabricPool.of("gpustack--nvidia-a10g-linux-amd64", "none", {"kubernetes.io/arch": "amd64"})
    spec = {"containers": [{"name": "c", "resources": {"limits": {"vpc.amazonaws.com/efa": "1", "hugepages-2Mi": "1Gi"}}}]}
    report = judge_workloads([wrap("Pod", spec)], [pool])
    assert [(f.rule_id, f.pool) for f in report.findings] == [("fabric-key-advertised", pool.name)]
    assert "nothing advertises on pool gpustack--nvidia-a10g-linux-amd64 (fabric: none)" in report.findings[0].message
