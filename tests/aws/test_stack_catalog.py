"""Components ask EC2 with the stack's own AWS settings, say which, and never fall back silently."""

import os
from pathlib import Path
from typing import Any, Iterator

import pulumi
import pytest

from support import moto_server
from gpu_fabric.aws.catalog.selection import _ACTIVE_CATALOG
from gpu_fabric.aws.catalog.ec2 import clear_ec2_cache
from gpu_fabric.resources.stack_catalog import (
    InstanceFactsError,
    StackInstanceCatalog,
    forget_shared_catalogs,
    stack_catalog,
)


class Mocks(pulumi.runtime.Mocks):
    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        return f"{args.name}-id", dict(args.inputs)

    def call(self, args: pulumi.runtime.MockCallArgs):
        if args.token == "aws:index/getRegion:getRegion":
            # The explicit provider's configured region, as the AWS provider answers the invoke.
            return {"name": "eu-west-1", "region": "eu-west-1", "id": "eu-west-1"}
        return {}


@pytest.fixture
def logs(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    captured: list[tuple[str, str]] = []
    monkeypatch.setattr(pulumi.log, "info", lambda message, *a, **k: captured.append(("info", message)))
    monkeypatch.setattr(pulumi.log, "warn", lambda message, *a, **k: captured.append(("warn", message)))
    token = _ACTIVE_CATALOG.set(None)  # no render-time catalog: the stack's settings decide
    forget_shared_catalogs()  # each test is one program
    clear_ec2_cache()
    pulumi.runtime.set_mocks(Mocks(), preview=False)
    yield captured
    _ACTIVE_CATALOG.reset(token)
    forget_shared_catalogs()
    clear_ec2_cache()


@pytest.fixture
def aws_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    def apply(credentials: bool, endpoint_url: str | None = None) -> None:
        for key in [k for k in os.environ if k.startswith("AWS_")]:
            monkeypatch.delenv(key)
        for key, value in moto_server.isolated_aws_environment(tmp_path, credentials=credentials,
                                                               endpoint_url=endpoint_url).items():
            if key.startswith("AWS_"):
                monkeypatch.setenv(key, value)
        monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)

    yield apply


def with_stack_config(values: dict[str, str]) -> None:
    pulumi.runtime.set_all_config(values)


def test_the_stacks_region_is_asked_and_logged(logs, aws_env) -> None:
    with moto_server.start_moto_server() as endpoint:
        aws_env(credentials=True, endpoint_url=endpoint)
        with_stack_config({"aws:region": "us-west-2"})
        catalog = stack_catalog()
        assert isinstance(catalog, StackInstanceCatalog) and catalog.region == "us-west-2"
        items = catalog.describe(["p5.48xlarge"])
    assert items["p5.48xlarge"]["NetworkInfo"]["EfaSupported"] is True
    assert logs == [("info", "instance facts for p5.48xlarge: EC2 DescribeInstanceTypes in us-west-2 (the stack's aws:region)")]


def test_an_explicit_providers_region_wins(logs) -> None:
    import pulumi_aws as aws

    with_stack_config({"aws:region": "us-west-2"})
    holder: dict[str, Any] = {}

    @pulumi.runtime.test
    def program():
        provider = aws.Provider("ireland", region="eu-west-1")
        holder["catalog"] = stack_catalog(pulumi.ResourceOptions(providers={"aws": provider}))

    program()
    catalog = holder["catalog"]
    assert catalog.region == "eu-west-1" and catalog.source == "the region of AWS provider ireland"


def test_without_credentials_the_bundled_table_answers_with_a_warning(logs, aws_env) -> None:
    aws_env(credentials=False)
    with_stack_config({"aws:region": "us-west-2"})
    items = stack_catalog().describe(["p5.48xlarge"])
    assert items["p5.48xlarge"]["InstanceType"] == "p5.48xlarge"
    assert logs and logs[0][0] == "warn" and "no AWS credentials found" in logs[0][1] and "bundled table" in logs[0][1]


def test_a_failing_call_with_credentials_present_is_an_error(logs, aws_env) -> None:
    aws_env(credentials=True, endpoint_url="http://127.0.0.1:9")  # nothing listens on the discard port
    with_stack_config({"aws:region": "us-west-2"})
    with pytest.raises(InstanceFactsError, match="EC2 DescribeInstanceTypes failed in region us-west-2 .* although AWS credentials are present"):
        stack_catalog().describe(["p5.48xlarge"])
    assert logs == []


def test_a_render_catalog_is_used_as_set(logs) -> None:
    from gpu_fabric.aws.catalog.bundled import BundledInstanceCatalog
    from gpu_fabric.aws.catalog.selection import use_catalog

    bundled = BundledInstanceCatalog()
    use_catalog(bundled)
    assert stack_catalog() is bundled


@pytest.fixture
def ec2_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every AWS API operation any boto3 client sends, in order (botocore's one choke point)."""
    from botocore.client import BaseClient

    calls: list[str] = []
    original = BaseClient._make_api_call

    def counting(self: Any, operation_name: str, api_params: Any) -> Any:
        calls.append(operation_name)
        return original(self, operation_name, api_params)

    monkeypatch.setattr(BaseClient, "_make_api_call", counting)
    return calls


def test_each_type_is_asked_once_per_program_however_often_components_ask(logs, aws_env, ec2_calls) -> None:
    # Components and every Output resolution re-plan, so the catalog caches per program: EC2 answers each type once.
    import contextvars
    from concurrent.futures import ThreadPoolExecutor

    with moto_server.start_moto_server() as endpoint:
        aws_env(credentials=True, endpoint_url=endpoint)
        with_stack_config({"aws:region": "us-west-2"})
        first = stack_catalog().describe(["p5.48xlarge", "c6in.32xlarge"])
        program = contextvars.copy_context()  # the stack's configuration, as each Output callback sees it
        with ThreadPoolExecutor(max_workers=4) as pool:  # concurrent re-plans wait for the one answer
            answers = list(pool.map(lambda _: program.copy().run(lambda: stack_catalog().describe(["p5.48xlarge"])),
                                    range(8)))
        again = stack_catalog().describe(["c6in.32xlarge", "p5.48xlarge"])
    assert ec2_calls == ["DescribeInstanceTypes"]
    assert all(answer["p5.48xlarge"] == first["p5.48xlarge"] for answer in answers)
    assert again == first
    assert [level for level, _ in logs] == ["info"]
    first["p5.48xlarge"]["InstanceType"] = "changed by a caller"
    assert stack_catalog().describe(["p5.48xlarge"])["p5.48xlarge"]["InstanceType"] == "p5.48xlarge"


def test_another_region_is_asked_on_its_own(logs, aws_env, ec2_calls) -> None:
    with moto_server.start_moto_server() as endpoint:
        aws_env(credentials=True, endpoint_url=endpoint)
        with_stack_config({"aws:region": "us-west-2"})
        stack_catalog().describe(["p5.48xlarge"])
        with_stack_config({"aws:region": "eu-west-1"})
        stack_catalog().describe(["p5.48xlarge"])
        stack_catalog().describe(["p5.48xlarge"])
    assert ec2_calls == ["DescribeInstanceTypes", "DescribeInstanceTypes"]


def test_the_no_credentials_warning_is_logged_once_and_says_how_old_the_table_is(logs, aws_env) -> None:
    from gpu_fabric.aws.catalog.table import bundled_table_origin

    aws_env(credentials=False)
    with_stack_config({"aws:region": "us-west-2"})
    for names in (["p5.48xlarge"], ["c6in.32xlarge"], ["p5.48xlarge", "c6in.32xlarge"]):
        stack_catalog().describe(names)
    warnings = [message for level, message in logs if level == "warn"]
    assert len(warnings) == 1 and bundled_table_origin().describe() in warnings[0]
