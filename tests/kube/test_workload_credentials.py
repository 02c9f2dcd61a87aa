"""A credential in plain text in a workload manifest is refused at its field, on whichever pool it lands."""

from gpu_fabric.kube.workload_rules import ERROR
from gpu_fabric.kube.workloads import fabric_pool_of, judge_workloads, pool_finding_line
from gpu_fabric.validation.configuration import load_config

from support.stack_configs import stack_values
from support.workloads import pod_spec, with_container, wrap

HF_TOKEN = "hf_" + "Ab1" * 11 + "x"  # the shape of a Hugging Face user access token, not a real one


def _pools():
    return [fabric_pool_of(pool) for pool in load_config(stack_values("aws-efa")).pools]


def _credentials(spec, pools):
    return [f for f in judge_workloads([wrap("Deployment", spec)], pools).findings if f.rule_id == "plaintext-credential"]


def test_a_plaintext_token_in_env_is_refused_naming_the_field():
    found = _credentials(with_container(env=[{"name": "HF_TOKEN", "value": HF_TOKEN}]), _pools())
    assert len(found) == 1 and found[0].severity is ERROR and found[0].pool is None
    assert str(found[0].path) == "spec.template.spec.containers[0].env[0].value"
    assert "valueFrom: {secretKeyRef:" in found[0].message and HF_TOKEN not in found[0].message
    line = pool_finding_line(found[0])
    assert line.startswith("Deployment team-a/w spec.template.spec.containers[0].env[0].value: HF_TOKEN holds a Hugging Face token")
    assert "(pool" not in line


def test_a_token_in_a_script_or_an_argument_is_refused():
    spec = with_container(command=["sh", "-c", f"export HF_TOKEN={HF_TOKEN}; exec vllm serve m"])
    assert [str(f.path) for f in _credentials(spec, _pools())] == ["spec.template.spec.containers[0].command[2]"]
    spec = pod_spec()
    spec["initContainers"] = [{"name": "fetch", "image": "x", "args": ["--token", HF_TOKEN]}]
    assert [str(f.path) for f in _credentials(spec, _pools())] == ["spec.template.spec.initContainers[0].args[1]"]


def test_a_template_that_lands_on_no_pool_is_still_refused():
    spec = {"containers": [{"name": "app", "image": "x", "env": [{"name": "DB_PASSWORD", "value": "hunter2hunter2"}]}]}
    assert len(_credentials(spec, _pools())) == 1
    assert len(_credentials(spec, [])) == 1


def test_a_secret_reference_passes():
    env = [{"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}},
           {"name": "HF_TOKEN_PATH", "value": "/var/run/secrets/hf/token"}]
    assert not _credentials(with_container(env=env), _pools())


JWT = "eyJhbGciOiJIUzI1NiJ9" + "." + "eyJzdWIiOiIxMjM0NTY3ODkwIn0" + ".c2lnbmF0dXJlLW5vdC1yZWFs"  # a JWT's shape


def test_a_config_map_that_env_from_loads_is_refused_at_its_entry():
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "env", "namespace": "team-a"},
                  "data": {"PGPASSWORD": "correct-horse-battery", "EOS_TOKEN": "<|im_end|>"}}
    spec = with_container(envFrom=[{"configMapRef": {"name": "env"}}])
    found = [f for f in judge_workloads([config_map, wrap("Deployment", spec)], _pools()).findings
             if f.rule_id == "plaintext-credential"]
    assert [str(f.path) for f in found] == ["data.PGPASSWORD"]


def test_a_probes_bearer_header_and_an_annotation_are_refused():
    spec = with_container(readinessProbe={"httpGet": {"path": "/health", "port": 8000, "httpHeaders": [
        {"name": "Authorization", "value": f"Bearer {JWT}"}]}})
    workload = wrap("Deployment", spec)
    workload["metadata"]["annotations"] = {"example.com/hf": "a-plain-token-value", "hfToken": "a-plain-token-value"}
    found = [f for f in judge_workloads([workload], _pools()).findings if f.rule_id == "plaintext-credential"]
    assert [str(f.path) for f in found] == ["metadata.annotations.hfToken",
                                            "spec.template.spec.containers[0].readinessProbe.httpGet.httpHeaders[0].value"]
    assert all(JWT not in f.message for f in found)
