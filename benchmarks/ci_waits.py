"""Issue 39 in one command: every figure where CI waits on gpu-fabric, each beside its floor and its target.

In turn, in one run:

1. the offline render (``startup_and_render.py``): gpu-fabric's render of seed-rdma and aws-efa against the SDK
   floor exiting as the console script does, at most 1.2x (and start-up, lint);
2. ``pulumi preview`` with the pack against plain preview under the real engine (``engine_preview.py``), at most
   1.10x, beside the floor any Python pack costs; ``--fleet`` adds the Kubernetes-only fleet (its previews, the bare
   program, ``pulumi up`` and ``gpu-fabric verify``: about 25 minutes more);
3. the test suite as the README runs it, from this (warm) virtualenv: wall and CPU, at most 120 s wall.

    python benchmarks/ci_waits.py                 # about 6 minutes on the 2-core machine
    python benchmarks/ci_waits.py --fleet --runs 5
    python benchmarks/ci_waits.py --no-engine     # where scripts/engine-tools has not been run

Each part is its own process printing its own figures (the scripts' docstrings say how they measure); this one
adds the suite's and ends with the load the machine had, which decides how far the wall figures can be read.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parent.parent
BENCHMARKS = Path(__file__).resolve().parent
SUITE_TARGET_SECONDS = 120.0


def part(title: str, command: list[str]) -> int:
    """Run one benchmark script, its output passed through; its exit code."""
    print(f"\n== {title}: {' '.join(command[1:])}", flush=True)
    return subprocess.run(command, cwd=PROJECT_DIR).returncode


def suite() -> bool:
    """The README's test command from this virtualenv (no venv creation, no install: a warm venv)."""
    print("\n== the test suite: python -m pytest (README's second command, warm venv)", flush=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider"], cwd=PROJECT_DIR,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    summary = next((line for line in reversed(done.stdout.splitlines()) if " passed" in line or " failed" in line),
                   done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "(no output)")
    verdict = "met" if wall <= SUITE_TARGET_SECONDS else "NOT met"
    print(f"suite: {summary.strip()}")
    print(f"suite wall {wall:6.1f} s   cpu {cpu:6.1f} s ({cpu / wall:.2f} cores)   "
          f"target <= {SUITE_TARGET_SECONDS:.0f} s wall: {verdict}", flush=True)
    return done.returncode == 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per figure of the render and preview parts")
    parser.add_argument("--fleet", action="store_true", help="also the fleet under the engine (engine_preview --fleet)")
    parser.add_argument("--no-engine", action="store_true", help="leave out the real-engine previews")
    parser.add_argument("--no-suite", action="store_true", help="leave out the test suite")
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}; {os.cpu_count()} cores; load {os.getloadavg()[0]:.2f}", flush=True)
    failed = part("offline render", [sys.executable, str(BENCHMARKS / "startup_and_render.py"), "--runs", str(args.runs)])
    if not args.no_engine:
        engine = [sys.executable, str(BENCHMARKS / "engine_preview.py"), "--runs", str(args.runs)]
        failed |= part("pulumi preview under the real engine", engine + (["--fleet"] if args.fleet else []))
    if not args.no_suite and not suite():
        failed = 1
    print(f"\nload at the end {' '.join(f'{x:.2f}' for x in os.getloadavg())} (1, 5, 15 min)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
