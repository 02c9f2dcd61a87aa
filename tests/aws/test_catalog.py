"""gpu_fabric.aws.catalog's providers against moto's EC2 server over HTTP, the bundled table, and the generator."""

from __future__ import annotations

import gzip
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_fabric.aws.catalog import ec2
from gpu_fabric.aws.catalog.bundled import BundledInstanceCatalog
from gpu_fabric.aws.catalog.ec2 import Ec2InstanceCatalog
from gpu_fabric.aws.catalog.selection import describe_with_fallback
from gpu_fabric.aws.catalog.types import (
    InstanceFacts,
    UnknownInstanceTypeError,
    card_interface_types,
    with_interface_types,
)

REPO = Path(__file__).resolve().parents[2]
GENERATOR = REPO / "scripts" / "generate_instance_catalog.py"


def _load_moto_helper():
    spec = importlib.util.spec_from_file_location("_gpu_fabric_tests_moto_server", Path(__file__).resolve().parents[1] / "support" / "moto_server.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


moto_helper = _load_moto_helper()


@pytest.fixture(scope="module")
def moto_endpoint():
    with moto_helper.start_moto_server() as endpoint:
        yield endpoint


@pytest.fixture
def aws_env(monkeypatch, tmp_path):
    """Dummy credentials and us-east-1, nothing read from the host; the EC2 cache starts empty."""
    env = moto_helper.isolated_aws_environment(tmp_path, credentials=True)
    for key in list(os.environ):
        if key.startswith("AWS_"):
            monkeypatch.delenv(key)
    for key, value in env.items():
        if key.startswith("AWS_"):
            monkeypatch.setenv(key, value)
    ec2.clear_ec2_cache()
    yield
    ec2.clear_ec2_cache()


def _count_requests(ec2: Ec2InstanceCatalog) -> list[dict]:
    """Record every DescribeInstanceTypes request the catalog's client sends."""
    sent: list[dict] = []
    ec2.client.meta.events.register(
        "before-parameter-build.ec2.DescribeInstanceTypes", lambda params, **_: sent.append(dict(params))
    )
    return sent


# --- EC2 through moto's server -----------------------------------------------------------------


def test_ec2_catalog_returns_p5_with_32_efa(moto_endpoint, aws_env):
    items = Ec2InstanceCatalog(endpoint_url=moto_endpoint).describe(["p5.48xlarge"])
    network = items["p5.48xlarge"]["NetworkInfo"]
    assert network["EfaSupported"] is True
    assert network["EfaInfo"]["MaximumEfaInterfaces"] == 32
    assert network["MaximumNetworkCards"] == 32


def test_ec2_catalog_honours_aws_endpoint_url(moto_endpoint, aws_env, monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_endpoint)
    ec2 = Ec2InstanceCatalog()
    assert ec2.client.meta.endpoint_url == moto_endpoint
    assert ec2.describe(["g5.xlarge"])["g5.xlarge"]["NetworkInfo"]["EfaSupported"] is False


def test_unknown_type_error_names_every_unknown_type(moto_endpoint, aws_env):
    with pytest.raises(UnknownInstanceTypeError) as raised:
        Ec2InstanceCatalog(endpoint_url=moto_endpoint).describe(["p5.48xlarge", "p9.nonexistent", "zz.huge"])
    assert raised.value.unknown == ("p9.nonexistent", "zz.huge")
    assert "p9.nonexistent" in str(raised.value) and "zz.huge" in str(raised.value)
    assert isinstance(raised.value, ValueError)


def test_more_than_100_types_are_asked_in_chunks_of_100(moto_endpoint, aws_env):
    names = BundledInstanceCatalog().names()[:250]
    ec2 = Ec2InstanceCatalog(endpoint_url=moto_endpoint)
    sent = _count_requests(ec2)
    items = ec2.describe(names)
    assert list(items) == names
    assert [len(params["InstanceTypes"]) for params in sent] == [100, 100, 50]


def test_unknown_type_is_found_inside_a_large_request(moto_endpoint, aws_env):
    names = BundledInstanceCatalog().names()[:150] + ["nope.large"]
    with pytest.raises(UnknownInstanceTypeError) as raised:
        Ec2InstanceCatalog(endpoint_url=moto_endpoint).describe(names)
    assert raised.value.unknown == ("nope.large",)


def test_unknown_names_are_isolated_by_bisection_when_the_message_is_unreadable():
    assert ec2._unknown_names_from_message("something else", ["a.large"]) == []
    message = "The following supplied instance types do not exist: [x.large, y.large]"
    assert ec2._unknown_names_from_message(message, ["m5.large", "x.large", "y.large"]) == ["x.large", "y.large"]


def test_cache_avoids_a_second_http_call(moto_endpoint, aws_env):
    first = Ec2InstanceCatalog(endpoint_url=moto_endpoint)
    first_requests = _count_requests(first)
    first.describe(["p5.48xlarge", "trn1.32xlarge"])
    assert len(first_requests) == 1

    # A new catalog for the same region/profile/endpoint answers from the per-process cache.
    second = Ec2InstanceCatalog(endpoint_url=moto_endpoint)
    second_requests = _count_requests(second)
    items = second.describe(["trn1.32xlarge", "p5.48xlarge"])
    assert second_requests == []
    assert items["trn1.32xlarge"]["NetworkInfo"]["EfaInfo"]["MaximumEfaInterfaces"] == 8

    # Only the missing type is asked for.
    second.describe(["p5.48xlarge", "p4d.24xlarge"])
    assert [params["InstanceTypes"] for params in second_requests] == [["p4d.24xlarge"]]


def test_returned_items_are_copies_so_callers_cannot_corrupt_the_cache(moto_endpoint, aws_env):
    ec2 = Ec2InstanceCatalog(endpoint_url=moto_endpoint)
    ec2.describe(["p5.48xlarge"])["p5.48xlarge"]["NetworkInfo"]["EfaInfo"]["MaximumEfaInterfaces"] = 0
    assert ec2.describe(["p5.48xlarge"])["p5.48xlarge"]["NetworkInfo"]["EfaInfo"]["MaximumEfaInterfaces"] == 32


def test_ec2_and_bundled_answers_agree(moto_endpoint, aws_env):
    names = ["p5.48xlarge", "p6-b300.48xlarge", "hpc6id.32xlarge", "g5.xlarge", "trn2.48xlarge"]
    from_ec2 = Ec2InstanceCatalog(endpoint_url=moto_endpoint).describe(names)
    from_bundle = BundledInstanceCatalog().describe(names)
    for name in names:
        assert InstanceFacts.from_item(from_ec2[name]) == InstanceFacts.from_item(from_bundle[name])


# --- fallback ---------------------------------------------------------------------------------


def test_fallback_uses_ec2_when_it_answers(moto_endpoint, aws_env):
    items, source = describe_with_fallback(["p5.48xlarge"], endpoint_url=moto_endpoint)
    assert source.name == "ec2" and not source.is_fallback
    assert items["p5.48xlarge"]["InstanceType"] == "p5.48xlarge"


def test_fallback_to_bundled_table_without_credentials(moto_endpoint, aws_env, monkeypatch):
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(key)
    items, source = describe_with_fallback(["p6-b300.48xlarge"], endpoint_url=moto_endpoint)
    assert source.is_fallback
    assert source.detail == "no AWS credentials found [NoCredentialsError]"
    assert items["p6-b300.48xlarge"]["NetworkInfo"]["EfaInfo"]["MaximumEfaInterfaces"] == 16


def test_fallback_to_bundled_table_without_region(aws_env, monkeypatch):
    monkeypatch.delenv("AWS_DEFAULT_REGION")
    _, source = describe_with_fallback(["p5.48xlarge"])
    assert source.is_fallback
    assert source.detail == "no AWS region configured [NoRegionError]"


def test_fallback_to_bundled_table_when_the_endpoint_is_unreachable(aws_env):
    import socket

    # A port that was free a moment ago: connection refused, fast, on loopback only.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    _, source = describe_with_fallback(["p5.48xlarge"], endpoint_url=f"http://127.0.0.1:{closed_port}")
    assert source.is_fallback and "EndpointConnectionError" in source.detail


def test_offline_skips_ec2_and_unknown_types_still_fail():
    items, source = describe_with_fallback(["g5.xlarge"], offline=True)
    assert source.name == "bundled" and source.detail == "offline"
    assert items["g5.xlarge"]["NetworkInfo"]["EfaSupported"] is False
    with pytest.raises(UnknownInstanceTypeError, match="p9.nonexistent"):
        describe_with_fallback(["p9.nonexistent", "g5.xlarge"], offline=True)


# --- bundled table and derived interface types ------------------------------------------------


def test_bundled_table_holds_every_type_not_only_efa_ones():
    bundled = BundledInstanceCatalog()
    names = bundled.names()
    items = bundled.describe(names)
    efa_capable = [name for name, item in items.items() if item["NetworkInfo"]["EfaSupported"]]
    assert len(names) > 1000
    assert len(efa_capable) >= 300
    assert {"g5.xlarge", "m5.large", "p5.48xlarge", "p6-b300.48xlarge"} <= set(names)
    assert names == sorted(names)


def test_instance_facts_read_gpus_cards_and_sizes():
    facts = InstanceFacts.from_item(BundledInstanceCatalog().describe(["p6-b300.48xlarge"])["p6-b300.48xlarge"])
    assert facts.efa_supported and facts.max_efa_interfaces == 16 and facts.max_network_cards == 17
    assert [card.index for card in facts.network_cards if card.supports_efa] == list(range(1, 17))
    assert facts.network_cards[0].interface_types == ("interface",)
    assert facts.gpu_count == 8 and facts.gpus[0].manufacturer == "NVIDIA"
    assert facts.vcpus == 192 and facts.memory_mib == 4194304
    assert facts.architectures == ("x86_64",)


def _strip_interface_types(item: dict) -> dict:
    stripped = json.loads(json.dumps(item))
    for card in stripped["NetworkInfo"]["NetworkCards"]:
        card.pop("InterfaceTypes", None)
    return stripped


def test_derived_interface_types_leave_card_0_without_efa_when_efa_count_is_below_card_count():
    item = _strip_interface_types(BundledInstanceCatalog().describe(["p6-b300.48xlarge"])["p6-b300.48xlarge"])
    derived = card_interface_types(item)
    assert derived[0] == ("interface",)
    assert all("efa-only" in derived[index] for index in range(1, 17))
    assert with_interface_types(item)["NetworkInfo"]["NetworkCards"][0]["InterfaceTypes"] == ["interface"]


def test_derived_interface_types_put_efa_on_the_first_cards_otherwise():
    item = _strip_interface_types(BundledInstanceCatalog().describe(["p5.48xlarge"])["p5.48xlarge"])
    assert all("efa" in types for types in card_interface_types(item).values())
    g5 = _strip_interface_types(BundledInstanceCatalog().describe(["g5.xlarge"])["g5.xlarge"])
    assert card_interface_types(g5) == {0: ("interface",)}


def test_reported_interface_types_are_used_verbatim():
    item = BundledInstanceCatalog().describe(["i7ie.48xlarge"])["i7ie.48xlarge"]
    # 1 EFA on 2 cards, but EC2 says both cards offer EFA: the data wins over the derivation.
    assert all("efa" in types for types in card_interface_types(item).values())


# --- generator ----------------------------------------------------------------------------------


def test_generator_rerun_is_byte_identical(moto_endpoint, tmp_path):
    env = moto_helper.isolated_aws_environment(tmp_path, credentials=True)
    committed = GENERATOR.parent.parent / "components" / "gpu_fabric" / "data" / "ec2_instance_types.json.gz"
    # The committed table says when, where and from what it was made, so a reader can judge how current it is; the same
    # words and date given back reproduce it byte for byte. The committed file is the first run, this is the rerun:
    # equal bytes prove the generator deterministic, and a second rerun would add nothing.
    generated = json.loads(gzip.decompress(committed.read_bytes()))["Generated"]
    assert set(generated) == {"At", "Region", "Source"} and generated["Region"] == "us-east-1"
    out = tmp_path / "rerun.json.gz"
    subprocess.run(
        [sys.executable, str(GENERATOR), "--endpoint-url", moto_endpoint, "--out", str(out),
         "--generated-at", generated["At"], "--source", generated["Source"]],
        env=env, check=True, capture_output=True, text=True, timeout=120,
    )
    rerun = out.read_bytes()
    table = json.loads(gzip.decompress(rerun))
    names = [item["InstanceType"] for item in table["InstanceTypes"]]
    assert names == sorted(names) and "p5.48xlarge" in names and "g5.xlarge" in names
    p5 = next(item for item in table["InstanceTypes"] if item["InstanceType"] == "p5.48xlarge")
    assert set(p5) == {"InstanceType", "ProcessorInfo", "VCpuInfo", "MemoryInfo", "GpuInfo", "NetworkInfo", "PlacementGroupInfo"}
    assert rerun == committed.read_bytes()
