"""DRA claim shapes judged twice: by kube-apiserver's server-side dry run and by ``gpu-fabric lint --stack``.

The API server's validation is the floor of gpu-fabric's DRA judgement (issue 40): a ResourceClaimTemplate,
ResourceClaim or pod ``resourceClaims`` the server refuses must be refused by ``lint`` as a malformed shape
(``[dra-claim-shape]``, exit 2) -- or ``pulumi up`` fails after the preview said yes -- and a shape the server
accepts must not be refused as malformed (a false alarm). The shapes (tests/e2e/claim_shapes.py) are the cases
the issue lists, the dra-efa stack's own, the edges of k8s.io/kubernetes pkg/apis/resource/validation and
pkg/apis/core/validation, and a seeded generator's combinations; each goes to one fresh control plane as a
dry-run create (nothing is stored) and through the very function ``gpu-fabric lint --stack dra-efa FILE`` runs
(:func:`gpu_fabric.cli.lint_workloads.lint_against_stack`); three of them through the console script as well.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import yaml

from e2e.claim_shapes import NAMESPACE, Shape, generated_shapes, listed_shapes
from e2e.engine import ROOT, gpu_fabric, output_of

STACK = "dra-efa"
LINT_SHAPE_EXIT = 2
"""``lint``'s exit for unusable input: a claim it cannot read as the API's shape (cli/lint_workloads.py)."""


def server_verdict(dynamic, resources: dict, shape: Shape) -> tuple[str, str]:
    """``("accepted" | "refused" | "not served", why)`` for a server-side dry-run create of ``shape``."""
    from kubernetes.client.exceptions import ApiException
    from kubernetes.dynamic.exceptions import ResourceNotFoundError

    manifest = shape.manifest
    key = (manifest["apiVersion"], manifest["kind"])
    if key not in resources:
        try:
            resources[key] = dynamic.resources.get(api_version=key[0], kind=key[1])
        except ResourceNotFoundError:
            resources[key] = None
    if resources[key] is None:
        return "not served", f"{key[0]} {key[1]} is not served"
    try:
        resources[key].create(body=manifest, namespace=NAMESPACE, query_params=[("dryRun", "All")])
    except ApiException as refused:
        if refused.status not in (400, 422):
            raise
        try:
            message = json.loads(refused.body)["message"]
        except (TypeError, ValueError, KeyError):
            message = str(refused.body)
        return "refused", message[:600]
    return "accepted", ""


def lint_verdict(shape: Shape) -> tuple[int, str]:
    """The exit code and output of ``gpu-fabric lint --stack dra-efa`` over ``shape`` (in process)."""
    from gpu_fabric.cli.lint_workloads import lint_against_stack

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = lint_against_stack(STACK, ROOT, [(shape.manifest, shape.label)])
    return code, out.getvalue() + err.getvalue()


def refuses_shape(code: int, output: str) -> bool:
    """lint refused the shape as malformed: ``[dra-claim-shape]``, with the exit of unusable input."""
    return code == LINT_SHAPE_EXIT and "[dra-claim-shape]" in output


def _shape_lines(output: str) -> str:
    return " | ".join(line for line in output.splitlines() if "gpu-fabric lint:" in line)


def test_lint_refuses_every_claim_shape_the_api_server_refuses_and_no_other(cluster, tmp_path: Path):
    cluster.ensure_namespace(NAMESPACE)
    dynamic, resources = cluster.dynamic, {}
    shapes = listed_shapes() + generated_shapes()
    assert len({shape.manifest["metadata"]["name"] for shape in shapes}) == len(shapes)

    verdicts = []
    for shape in shapes:
        server, why = server_verdict(dynamic, resources, shape)
        code, output = lint_verdict(shape)
        verdicts.append((shape, server, why, code, output))

    compared = [v for v in verdicts if v[1] != "not served"]
    # lint's shape verdict is its dra-claim-shape refusal (exit 2): other rules of unusable input exit 2 as well on
    # shapes the server stores (allocationMode All is well-formed, and Kueue cannot meter it: dra-kueue-request-mode).
    floor = [v for v in compared if v[1] == "refused" and not refuses_shape(v[3], v[4])]
    false_alarms = [v for v in compared if v[1] == "accepted" and refuses_shape(v[3], v[4])]
    refused = sum(1 for v in compared if v[1] == "refused")
    print(f"\n{len(shapes)} shapes ({len(compared)} compared, {len(shapes) - len(compared)} not served): "
          f"{refused} refused and {len(compared) - refused} accepted by the API server; "
          f"{len(compared) - len(floor) - len(false_alarms)} agreements, {len(floor)} refused by the server only, "
          f"{len(false_alarms)} refused by lint only")
    assert not floor, "the API server refuses, lint does not:\n" + "\n".join(
        f"- {shape.label}: lint exit {code}; server: {why}" for shape, _, why, code, _ in floor)
    assert not false_alarms, "the API server accepts, lint refuses the shape:\n" + "\n".join(
        f"- {shape.label}: {_shape_lines(output)}" for shape, _, _, _, output in false_alarms)
    # The dra-efa stack's own shapes, and shapes of both kinds, are among those compared: the test can fail.
    by_label = {v[0].label: v for v in verdicts}
    assert by_label["stack 8gpu template"][1] == "accepted" and by_label["count -1"][1] == "refused" and by_label["count 0"][1] == "accepted"
    assert refused >= 30 and len(compared) - refused >= 15

    # The v1beta1 template aligning an NVIDIA GPU on numaNode: served as well-formed, refused by the NUMA rule.
    _, server, why, code, output = by_label["v1beta1 aligning an NVIDIA GPU on numaNode"]
    if server != "not served":
        assert server == "accepted", why
        assert code == 1 and "[dra-numa-constraint-nvidia]" in output, output


def test_the_console_script_gives_the_in_process_verdict(tmp_path: Path):
    """Three shapes through ``gpu-fabric lint --stack dra-efa FILE`` as a user runs it: same exit, same rule."""
    shapes = {shape.label: shape for shape in listed_shapes()}
    for label, code in (("stack 1gpu template", 0), ("count -1", 2), ("container claim naming no pod claim", 2)):
        path = tmp_path / f"{shapes[label].manifest['metadata']['name']}.yaml"
        path.write_text(yaml.safe_dump(shapes[label].manifest))
        done = gpu_fabric("lint", "--stack", STACK, str(path))
        assert done.returncode == code, output_of(done)
        assert (code != 2) == ("[dra-claim-shape]" not in done.stderr), output_of(done)
        assert lint_verdict(shapes[label])[0] == code
