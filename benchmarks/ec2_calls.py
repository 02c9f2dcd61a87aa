"""How often the example stacks ask for instance facts, and how often EC2 is actually called.

Each example stack runs as ``pulumi up`` would run it -- the stack program under Pulumi's mock
runtime, its components taking instance facts from the stack's own ``aws:`` settings
(``gpu_fabric.resources.stack_catalog``) rather than the bundled table -- against moto's EC2 server
on 127.0.0.1 with dummy credentials, once as a deployment and once as a preview. Every AWS API
operation any boto3 client sends is counted at botocore's one choke point
(``BaseClient._make_api_call``); "asks" counts the components' ``describe`` calls (each node
group plans at construction and again when an ``Output`` it depends on resolves).

    python benchmarks/ec2_calls.py            # every stack in stacks/
    python benchmarks/ec2_calls.py --stack aws-efa

Target: at most one DescribeInstanceTypes call per instance type and region per program,
and the no-credentials warning at most once (the second table: no credentials, bundled answers).
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

PROJECT_DIR = Path(__file__).resolve().parent.parent


def _moto_helper() -> Any:
    spec = importlib.util.spec_from_file_location("moto_server", PROJECT_DIR / "tests" / "moto_server.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def measure(stack: str, *, preview: bool, credentials: bool, endpoint: str, scratch: Path) -> dict[str, Any]:
    """Run ``stack`` once as one program; return the asks, the API calls and the warnings it logged."""
    import pulumi
    from botocore.client import BaseClient

    from gpu_fabric.aws.catalog.ec2 import clear_ec2_cache
    from gpu_fabric.program.render import load_stack_config, render_stack
    from gpu_fabric.resources import stack_catalog as module

    environment = _moto_helper().isolated_aws_environment(scratch, credentials=credentials, endpoint_url=endpoint)
    saved = dict(os.environ)
    calls: collections.Counter[str] = collections.Counter()
    asked: list[tuple[str, ...]] = []
    warnings: list[str] = []
    original_call = BaseClient._make_api_call
    original_describe = module.StackInstanceCatalog.describe
    original_warn = pulumi.log.warn

    def counting_call(self: Any, operation: str, params: Any) -> Any:
        calls[operation] += 1
        return original_call(self, operation, params)

    def counting_describe(self: Any, names: Any) -> Any:
        asked.append(tuple(names))
        return original_describe(self, names)

    os.environ.clear()
    os.environ.update(environment)
    BaseClient._make_api_call = counting_call  # type: ignore[method-assign]
    module.StackInstanceCatalog.describe = counting_describe  # type: ignore[method-assign]
    pulumi.log.warn = lambda message, *args, **kwargs: warnings.append(message)  # type: ignore[assignment]
    module.forget_shared_catalogs()  # one program: nothing carried over from the previous run
    clear_ec2_cache()
    try:
        config = load_stack_config(PROJECT_DIR, stack)
        render_stack(stack, PROJECT_DIR, config=config, preview=preview, ask_ec2=True)
    finally:
        BaseClient._make_api_call = original_call  # type: ignore[method-assign]
        module.StackInstanceCatalog.describe = original_describe  # type: ignore[method-assign]
        pulumi.log.warn = original_warn  # type: ignore[assignment]
        os.environ.clear()
        os.environ.update(saved)
    types = sorted({name for names in asked for name in names})
    return {"asks": len(asked), "types": types, "calls": dict(calls), "warnings": len(warnings)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stack", action="append", dest="stacks", help="stack name (default: every example stack)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(PROJECT_DIR / "components"))
    from gpu_fabric.program.render import example_stacks

    import tempfile

    import logging

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto's per-request access log
    stacks = args.stacks or example_stacks(PROJECT_DIR)
    helper = _moto_helper()
    print(f"{'stack':<12} {'run':<8} {'credentials':<11} {'asks':>4}  {'types':<28} {'EC2 calls':<28} warnings")
    worst = 0
    with helper.start_moto_server() as endpoint, tempfile.TemporaryDirectory() as scratch:
        for stack in stacks:
            for credentials in (True, False):
                for preview in (False, True):
                    result = measure(stack, preview=preview, credentials=credentials, endpoint=endpoint,
                                     scratch=Path(scratch))
                    calls = ", ".join(f"{name} {count}" for name, count in sorted(result["calls"].items())) or "none"
                    describe = result["calls"].get("DescribeInstanceTypes", 0)
                    worst = max(worst, describe - len(result["types"]), result["warnings"] - 1)
                    print(f"{stack:<12} {'preview' if preview else 'up':<8} {'yes' if credentials else 'no':<11} "
                          f"{result['asks']:>4}  {', '.join(result['types']) or '-':<28} {calls:<28} {result['warnings']}")
    print("target: DescribeInstanceTypes <= one per instance type, warnings <= 1: "
          + ("met" if worst <= 0 else "NOT met"))
    return 0 if worst <= 0 else 1


if __name__ == "__main__":
    sys.exit(main())
