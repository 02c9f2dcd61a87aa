"""``gpu-fabric lint --stack``: the DRA rules that need no pool's facts over the files' claims and pods."""

from __future__ import annotations

import yaml
from support.dra_objects import aligned_spec, claim_template, job

from gpu_fabric.cli import main
from support.stack_configs import PROJECT_DIR


def lint(capsys, tmp_path, *documents):
    path = tmp_path / "dra.yaml"
    path.write_text(yaml.safe_dump_all(documents))
    code = main(["lint", "--stack", "aws-efa", "--project", str(PROJECT_DIR), str(path)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err, str(path)


def test_a_host_network_job_with_a_dranet_claim_is_refused_naming_file_object_and_field(capsys, tmp_path):
    code, out, _, source = lint(capsys, tmp_path, claim_template("gpu-efa", aligned_spec()), job(host_network=True))
    assert code == 1
    assert (f"ERROR {source}: Job team-a/train: spec.template.spec.hostNetwork: hostNetwork: true with claim 'claim-0'"
            in out) and "[dra-dranet-host-network]" in out


def test_a_numa_constraint_over_an_nvidia_gpu_is_refused_and_the_aligned_template_passes(capsys, tmp_path):
    code, out, _, source = lint(capsys, tmp_path, claim_template("gpu-efa", aligned_spec(attribute="dra.net/numaNode")))
    assert code == 1
    assert f"ERROR {source}: ResourceClaimTemplate team-a/gpu-efa: spec.spec.devices.constraints[0].matchAttribute" in out
    queued = job()
    # It claims EFA: the queue rule covers claimed devices too (issue 36), so it names the pool's LocalQueue.
    queued["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "gpustack-fnv64-65ee45385e671d10"}
    code, out, _, _ = lint(capsys, tmp_path, claim_template("gpu-efa", aligned_spec()), queued)
    assert code == 0, out


def test_a_malformed_template_is_unusable_input(capsys, tmp_path):
    template = claim_template("gpu-efa", aligned_spec())
    template["spec"]["spec"]["devices"]["requests"] = {"gpu": 1}
    code, _, err, source = lint(capsys, tmp_path, template)
    assert code == 2
    assert (f"{source}: ResourceClaimTemplate team-a/gpu-efa: spec.spec.devices.requests: must be a list, not a mapping"
            in err)
