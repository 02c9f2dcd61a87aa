"""The EC2 instance catalog: ``DescribeInstanceTypes`` through boto3, with a per-process cache of answers.

Works against EC2 or any endpoint speaking its API (such as moto's server). boto3 and botocore are
imported on first use, so that importing the catalog package never loads the AWS SDK.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Sequence

from gpu_fabric.aws.catalog.types import UnknownInstanceTypeError, with_interface_types

# EC2 accepts at most 100 names in DescribeInstanceTypes' InstanceTypes parameter.
MAX_TYPES_PER_REQUEST = 100

# Per-process cache of EC2 answers keyed by (region, profile, endpoint, instance type): instance
# type facts do not change during a run, and a stack program asks for the same types many times.
_ec2_cache: dict[tuple[str | None, str | None, str | None, str], dict] = {}
_ec2_cache_lock = threading.Lock()


def clear_ec2_cache() -> None:
    """Forget every cached EC2 answer (tests, long-lived processes)."""
    with _ec2_cache_lock:
        _ec2_cache.clear()


def _endpoint_from_environment() -> str | None:
    # boto3 reads these itself; they are read here only so that the cache key tells endpoints apart.
    return os.environ.get("AWS_ENDPOINT_URL_EC2") or os.environ.get("AWS_ENDPOINT_URL") or None


def _unknown_names_from_message(message: str, requested: Sequence[str]) -> list[str]:
    """Pick the names EC2 lists in an InvalidInstanceType message, e.g.
    ``The following supplied instance types do not exist: [x1, x2]``."""
    listed = message.rsplit("[", 1)[-1].rstrip("]. ") if "[" in message else message
    tokens = {token.strip(" '\"") for token in listed.replace(",", " ").split()}
    return [name for name in requested if name in tokens]


class Ec2InstanceCatalog:
    """``DescribeInstanceTypes`` through boto3, cached per process.

    ``region``/``profile`` default to boto3's own resolution (``AWS_DEFAULT_REGION``,
    ``AWS_PROFILE``, config files); ``endpoint_url`` defaults to boto3's, which honours
    ``AWS_ENDPOINT_URL`` / ``AWS_ENDPOINT_URL_EC2``. Retries use botocore's "standard" mode.
    """

    source_name = "ec2"

    def __init__(self, region: str | None = None, profile: str | None = None, endpoint_url: str | None = None) -> None:
        self._requested_region = region
        self.profile = profile
        self._explicit_endpoint = endpoint_url
        self._session: Any = None
        self._client: Any = None

    @property
    def session(self) -> Any:
        """The boto3 session (created on first use, so constructing a catalog never fails)."""
        if self._session is None:
            from gpu_fabric.aws.sessions import fresh_session

            self._session = fresh_session(region_name=self._requested_region, profile_name=self.profile)
        return self._session

    @property
    def region(self) -> str | None:
        """The region boto3 resolves (None when nothing configures one)."""
        return self.session.region_name

    @property
    def endpoint_url(self) -> str | None:
        return self._explicit_endpoint or _endpoint_from_environment()

    @property
    def client(self) -> Any:
        """The EC2 client; raises botocore's ``NoRegionError`` when no region is configured."""
        if self._client is None:
            from botocore.config import Config

            self._client = self.session.client(
                "ec2",
                endpoint_url=self._explicit_endpoint,
                config=Config(retries={"mode": "standard"}, connect_timeout=5, read_timeout=30),
            )
        return self._client

    def _cache_key(self, name: str) -> tuple[str | None, str | None, str | None, str]:
        return (self.region, self.profile, self.endpoint_url, name)

    def describe(self, instance_types: Sequence[str]) -> dict[str, dict]:
        wanted = list(dict.fromkeys(instance_types))
        with _ec2_cache_lock:
            cached = {name: _ec2_cache[self._cache_key(name)] for name in wanted if self._cache_key(name) in _ec2_cache}
        missing = [name for name in wanted if name not in cached]
        fetched: dict[str, dict] = {}
        unknown: list[str] = []
        for start in range(0, len(missing), MAX_TYPES_PER_REQUEST):
            chunk_items, chunk_unknown = self._fetch(missing[start : start + MAX_TYPES_PER_REQUEST])
            fetched.update(chunk_items)
            unknown.extend(chunk_unknown)
        with _ec2_cache_lock:
            for name, item in fetched.items():
                _ec2_cache[self._cache_key(name)] = item
        if unknown:
            raise UnknownInstanceTypeError(unknown, f"EC2 {self.region}")
        answers = {**cached, **fetched}
        return {name: with_interface_types(answers[name]) for name in wanted}

    def _fetch(self, names: list[str]) -> tuple[dict[str, dict], list[str]]:
        """Describe ≤100 names; return (items, unknown names).

        EC2 rejects the whole request with ``InvalidInstanceType`` when any name is unknown, so the
        unknown names are read from the message and the rest asked again; if the message cannot
        be read, the request is bisected until the unknown names are isolated.
        """
        from botocore.exceptions import ClientError

        if not names:
            return {}, []
        try:
            items: dict[str, dict] = {}
            for page in self.client.get_paginator("describe_instance_types").paginate(InstanceTypes=names):
                for item in page.get("InstanceTypes", []):
                    items[item["InstanceType"]] = item
            return items, [name for name in names if name not in items]
        except ClientError as error:
            if not error.response.get("Error", {}).get("Code", "").startswith("InvalidInstanceType"):
                raise
            message = error.response.get("Error", {}).get("Message", "")
            named = _unknown_names_from_message(message, names)
            if named:
                rest = [name for name in names if name not in named]
                items, more_unknown = self._fetch(rest)
                return items, named + more_unknown
            if len(names) == 1:
                return {}, names
            middle = len(names) // 2
            left_items, left_unknown = self._fetch(names[:middle])
            right_items, right_unknown = self._fetch(names[middle:])
            return {**left_items, **right_items}, left_unknown + right_unknown
