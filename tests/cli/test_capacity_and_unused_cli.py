"""``render`` and ``check`` on an overfilled pool (exit 1, the replicas' path and the numbers) and on KV-cache
objects nothing references (a warning naming each; exit 0)."""

from __future__ import annotations

from support.bad_input import dump, render_file, stack_document

ROLES = "gpu-fabric:modelDeployments"


def overfilled() -> str:
    document = stack_document("aws-efa")
    document["config"][ROLES][0]["roles"][0]["replicas"] = 5
    return dump(document)


def test_render_and_check_refuse_prefill_5_of_8_gpus_on_at_most_4_nodes(tmp_path):
    for command in ("render", "check"):
        outcome = render_file(tmp_path / command, overfilled(), command)
        assert outcome.code == 1, outcome.describe()
        assert "modelDeployments[0].roles[0].replicas: the roles on pool gpustack--nvidia-h100-linux-amd64 need 48 " \
               "accelerators" in outcome.err, outcome.describe()
        assert "holds at most 32 (4 nodes, its aws.scaling.maxSize, x 8 accelerators per node)" in outcome.err
        assert "pool-accelerator-capacity" in outcome.err


def unused_backend() -> str:
    """aws-efa with a second EFA backend that no KVCachePool lists, its members on the CPU pool."""
    document = stack_document("aws-efa")
    backends = document["config"]["gpu-fabric:kvCacheBackends"]
    spare = {**backends[0], "name": "mooncake-spare"}
    backends.append(spare)
    return dump(document)


def test_an_unused_backend_is_a_warning_naming_it_and_its_member_pool(tmp_path):
    outcome = render_file(tmp_path / "render", unused_backend(), "render")
    assert outcome.code == 0, outcome.describe()
    warning = next(line for line in outcome.out.splitlines() if "mooncake-spare" in line)
    assert warning.startswith("warning: KVCacheBackend mooncake-spare: metadata.name: no KVCachePool lists")
    assert "members[0] on pool gpustack--generic-linux-amd64 (EFA)" in warning
    assert not [line for line in outcome.out.splitlines() if line.startswith("warning: KVCacheBackend mooncake-efa:")]
    outcome = render_file(tmp_path / "check", unused_backend(), "check")
    assert outcome.code == 0, outcome.describe()
    assert "kv-cache-unreferenced [advisory" in outcome.out and "KVCacheBackend mooncake-spare" in outcome.out
