"""``gpu-fabric diff`` of the benchmark fleet against one render of it; print both and the ratio.

The fleet is ``render_fleet.fleet(scale)`` (scale 1: over 2,000 resources) written as a stack file
in a throw-away git repository; the head adds a tenant namespace (one LocalQueue per pool) and
changes one pool's topology policy. Each measurement runs in its own process, as a user runs the
command:

* render: ``render_stack`` of the head, once;
* diff: what ``gpu-fabric diff --base main --stack fleet`` does -- the base extracted with
  ``git archive`` and rendered in a forked child while the working tree renders, the two
  compared -- then the Markdown.

    python benchmarks/diff_fleet.py             # both, and the ratio
    python benchmarks/diff_fleet.py --scale 2

Target (2-core machine): diff at most 2.5 x one render.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

PROJECT_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from render_fleet import fleet  # noqa: E402 - the benchmark fleet is defined once, in render_fleet

STACK = "fleet"
TARGET_RATIO = 2.5
GIT_ENV = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid", "GIT_COMMITTER_NAME": "bench",
           "GIT_COMMITTER_EMAIL": "bench@example.invalid", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}


def head_config(scale: int) -> dict:
    """The fleet with one more tenant namespace and one pool's topology policy changed."""
    config = fleet(scale)
    config["gpu-fabric:namespaces"] = [*config["gpu-fabric:namespaces"], "tenant-bench-new"]
    config["gpu-fabric:pools"][1]["topology"] = {"policy": "single-numa-node"}
    return config


def make_repo(folder: Path, scale: int) -> Path:
    """A repository whose main has the fleet and whose working tree has the head change."""
    shutil.copy(PROJECT_DIR / "Pulumi.yaml", folder / "Pulumi.yaml")
    (folder / "stacks").mkdir()
    shutil.copy(PROJECT_DIR / "stacks" / "__main__.py", folder / "stacks" / "__main__.py")
    stack_file = folder / "stacks" / f"Pulumi.{STACK}.yaml"
    stack_file.write_text(yaml.safe_dump({"config": fleet(scale)}, sort_keys=False))
    env = {**os.environ, **GIT_ENV}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "fleet"]):
        subprocess.run(["git", "-C", str(folder), *args], check=True, capture_output=True, env=env)
    stack_file.write_text(yaml.safe_dump({"config": head_config(scale)}, sort_keys=False))
    return folder


def measure(kind: str, repo: Path) -> dict:
    """One measurement in this process."""
    if kind == "render":
        from gpu_fabric.program.render import render_stack

        started = time.perf_counter()
        result = render_stack(STACK, repo)
        return {"kind": kind, "seconds": round(time.perf_counter() - started, 2), "resources": len(result.resources)}
    from gpu_fabric.diff.compare import compare
    from gpu_fabric.diff.markdown import render_markdown
    from gpu_fabric.diff.source import render_base_and_head

    started = time.perf_counter()
    base, base_label, head, head_label = render_base_and_head(repo, STACK, "main", None)
    rendered = time.perf_counter()
    digest = compare(base.resources, head.resources, stack=STACK, base_label=base_label, head_label=head_label)
    compared = time.perf_counter()
    markdown = render_markdown(digest)
    finished = time.perf_counter()
    return {"kind": kind, "seconds": round(finished - started, 2), "render_seconds": round(rendered - started, 2),
            "compare_seconds": round(compared - rendered, 3), "markdown_seconds": round(finished - compared, 3),
            "resources": len(head.resources), "summary": digest.change_summary,
            "rolls": sum(1 for step in digest.steps if step.rolls_nodes), "markdown_chars": len(markdown)}


def in_child(kind: str, repo: Path) -> dict:
    output = subprocess.run([sys.executable, __file__, "--measure", kind, "--repo", str(repo)],
                            check=True, capture_output=True, text=True).stdout
    return json.loads(output.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=int, default=1, help="fleet scale (render_fleet.fleet)")
    parser.add_argument("--measure", choices=("render", "diff"), help=argparse.SUPPRESS)
    parser.add_argument("--repo", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.repo)))
        return
    with tempfile.TemporaryDirectory(prefix="gpu-fabric-diff-bench-") as folder:
        repo = make_repo(Path(folder), args.scale)
        render = in_child("render", repo)
        diff = in_child("diff", repo)
    ratio = diff["seconds"] / render["seconds"]
    print(f"fleet x{args.scale}: {render['resources']} resources")
    print(f"one render:  {render['seconds']:6.2f} s")
    print(f"diff:        {diff['seconds']:6.2f} s  (both renders {diff['render_seconds']:.2f} s, "
          f"compare {diff['compare_seconds']:.3f} s, markdown {diff['markdown_seconds']:.3f} s)")
    print(f"  plan: {diff['summary']}; {diff['rolls']} node group(s) roll; comment {diff['markdown_chars']} characters")
    print(f"diff / render: {ratio:.2f} (target <= {TARGET_RATIO}): {'ok' if ratio <= TARGET_RATIO else 'OVER TARGET'}")


if __name__ == "__main__":
    main()
