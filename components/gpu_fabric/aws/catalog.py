"""EC2 instance facts: ``DescribeInstanceTypes`` items from boto3, or from the bundled table.

Every item this module returns is a ``DescribeInstanceTypes`` item exactly as boto3 returns it
(PascalCase dicts), so the planner, the policies and the CLI read one shape whatever the source:

* :class:`Ec2InstanceCatalog` asks EC2 (or any endpoint speaking its API, such as moto's server);
* :class:`BundledInstanceCatalog` reads ``data/ec2_instance_types.json.gz``, a trimmed copy of the
  same API's answer written by ``scripts/generate_instance_catalog.py``;
* :func:`describe_with_fallback` asks EC2 and falls back to the bundled table when no credentials
  (or no region / no reachable endpoint) are available, and says which source answered.

The one place where data absent from the API is *derived* is :func:`card_interface_types`.

boto3 and botocore are imported lazily so that the pure planner (``gpu_fabric.aws.efa``), which uses
:func:`card_interface_types`, stays free of AWS SDK imports.
"""

from __future__ import annotations

import contextvars

import copy
import gzip
import json
import os
import threading
from dataclasses import dataclass
from importlib import resources
from typing import Any, Iterable, Mapping, Protocol, Sequence

BUNDLED_TABLE_RESOURCE = "data/ec2_instance_types.json.gz"

# EC2 accepts at most 100 names in DescribeInstanceTypes' InstanceTypes parameter.
MAX_TYPES_PER_REQUEST = 100

EFA_INTERFACE_TYPES = frozenset({"efa", "efa-only"})


class UnknownInstanceTypeError(ValueError):
    """Raised when instance types do not exist; ``unknown`` lists every one of them, sorted.

    ``known`` (the names the source does have) adds a "did you mean" per unknown name; without it
    the bundled table's names are used, which cover every type EC2 knew when it was generated.
    """

    def __init__(self, unknown: Iterable[str], source: str = "", known: Iterable[str] | None = None) -> None:
        from gpu_fabric.config.suggestions import closest

        self.unknown: tuple[str, ...] = tuple(sorted(set(unknown)))
        where = f" ({source})" if source else ""
        choices = list(known) if known is not None else list(_load_bundled_items())
        self.suggestions: dict[str, str] = {
            name: match for name in self.unknown if (match := closest(name, choices)) is not None}
        named = [f"{name} (did you mean {self.suggestions[name]!r}?)" if name in self.suggestions else name
                 for name in self.unknown]
        super().__init__(f"unknown instance type(s){where}: {', '.join(named)}")


class InstanceCatalog(Protocol):
    """Anything that answers ``DescribeInstanceTypes`` for a list of instance type names."""

    def describe(self, instance_types: Sequence[str]) -> dict[str, dict]:
        """Return ``{name: DescribeInstanceTypes item}`` for every requested name.

        Raises :class:`UnknownInstanceTypeError` naming every name that does not exist.
        """
        ...


# ---------------------------------------------------------------------------------------------
# Derived data: per-card interface types
# ---------------------------------------------------------------------------------------------


def card_interface_types(item: Mapping[str, Any]) -> dict[int, tuple[str, ...]]:
    """Return ``{network card index: supported interface types}`` for one instance type item.

    EC2 reports ``NetworkInfo.NetworkCards[].InterfaceTypes`` (e.g. ``["interface", "efa",
    "efa-only"]``); when a card has that list it is used verbatim. Older API answers and other
    sources (e.g. Pulumi's ``get_instance_type``) lack it, so for those cards it is derived here,
    and only here:

    * a type without EFA support: every card carries ``interface`` only;
    * ``MaximumEfaInterfaces < MaximumNetworkCards``: card 0 carries no EFA and cards
      ``1..MaximumEfaInterfaces`` do (p6-b300.48xlarge: 17 cards, 16 EFA, none on card 0 --
      aws-parallelcluster#7143);
    * otherwise the first ``MaximumEfaInterfaces`` cards carry EFA.
    """
    network = item.get("NetworkInfo") or {}
    cards = sorted(network.get("NetworkCards") or [], key=lambda card: card.get("NetworkCardIndex", 0))
    efa_supported = bool(network.get("EfaSupported"))
    max_efa = int((network.get("EfaInfo") or {}).get("MaximumEfaInterfaces", 0)) if efa_supported else 0
    max_cards = int(network.get("MaximumNetworkCards") or len(cards) or 1)
    first_efa_card = 1 if max_efa < max_cards else 0
    derived_efa_cards = set(range(first_efa_card, first_efa_card + max_efa))

    result: dict[int, tuple[str, ...]] = {}
    for card in cards:
        index = int(card.get("NetworkCardIndex", 0))
        if "InterfaceTypes" in card:
            result[index] = tuple(card["InterfaceTypes"])
        elif index in derived_efa_cards:
            result[index] = ("interface", "efa", "efa-only")
        else:
            result[index] = ("interface",)
    return result


def with_interface_types(item: Mapping[str, Any]) -> dict:
    """Return a deep copy of ``item`` whose ``NetworkCards[]`` all carry ``InterfaceTypes``.

    Cards that already report ``InterfaceTypes`` are untouched; missing lists are filled from
    :func:`card_interface_types`. Both catalogs return items completed this way.
    """
    completed = copy.deepcopy(dict(item))
    types_by_card = card_interface_types(completed)
    for card in (completed.get("NetworkInfo") or {}).get("NetworkCards") or []:
        card.setdefault("InterfaceTypes", list(types_by_card[int(card.get("NetworkCardIndex", 0))]))
    return completed


# ---------------------------------------------------------------------------------------------
# Typed accessors
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NetworkCardFacts:
    """One network card: its index, how many interfaces it takes, which interface types."""

    index: int
    max_interfaces: int
    interface_types: tuple[str, ...]

    @property
    def supports_efa(self) -> bool:
        return bool(EFA_INTERFACE_TYPES.intersection(self.interface_types))


@dataclass(frozen=True)
class GpuFacts:
    """One ``GpuInfo.Gpus[]`` entry."""

    count: int
    manufacturer: str
    name: str
    memory_mib: int


@dataclass(frozen=True)
class InstanceFacts:
    """The facts tables and policies need, read from one ``DescribeInstanceTypes`` item."""

    name: str
    efa_supported: bool
    max_efa_interfaces: int
    max_network_cards: int
    network_cards: tuple[NetworkCardFacts, ...]
    gpus: tuple[GpuFacts, ...]
    vcpus: int
    memory_mib: int
    architectures: tuple[str, ...]

    @classmethod
    def from_item(cls, item: Mapping[str, Any]) -> "InstanceFacts":
        """Build the facts of one item; per-card interface types come from :func:`card_interface_types`."""
        network = item.get("NetworkInfo") or {}
        efa_supported = bool(network.get("EfaSupported"))
        max_interfaces_by_card = {
            int(card.get("NetworkCardIndex", 0)): int(card.get("MaximumNetworkInterfaces", 0))
            for card in network.get("NetworkCards") or []
        }
        cards = tuple(
            NetworkCardFacts(index, max_interfaces_by_card[index], types)
            for index, types in sorted(card_interface_types(item).items())
        )
        gpus = tuple(
            GpuFacts(
                count=int(gpu.get("Count", 0)),
                manufacturer=str(gpu.get("Manufacturer", "")),
                name=str(gpu.get("Name", "")),
                memory_mib=int((gpu.get("MemoryInfo") or {}).get("SizeInMiB", 0)),
            )
            for gpu in (item.get("GpuInfo") or {}).get("Gpus") or []
        )
        return cls(
            name=str(item["InstanceType"]),
            efa_supported=efa_supported,
            max_efa_interfaces=int((network.get("EfaInfo") or {}).get("MaximumEfaInterfaces", 0))
            if efa_supported
            else 0,
            max_network_cards=int(network.get("MaximumNetworkCards") or len(cards)),
            network_cards=cards,
            gpus=gpus,
            vcpus=int((item.get("VCpuInfo") or {}).get("DefaultVCpus", 0)),
            memory_mib=int((item.get("MemoryInfo") or {}).get("SizeInMiB", 0)),
            architectures=tuple((item.get("ProcessorInfo") or {}).get("SupportedArchitectures") or ()),
        )

    @property
    def gpu_count(self) -> int:
        return sum(gpu.count for gpu in self.gpus)


# ---------------------------------------------------------------------------------------------
# The bundled table
# ---------------------------------------------------------------------------------------------

_bundled_lock = threading.Lock()
_bundled_items: dict[str, dict] | None = None
_bundled_generated: "TableOrigin | None" = None


@dataclass(frozen=True)
class TableOrigin:
    """When and from where the bundled table was generated (its ``Generated`` block).

    Written by ``scripts/generate_instance_catalog.py``; a table without the block (written by an
    older script) reads as unknown, never as a guessed date.
    """

    at: str
    """The UTC date the answer was read (``YYYY-MM-DD``), or "unknown"."""
    region: str
    """The region ``DescribeInstanceTypes`` was asked in, or "unknown"."""
    source: str
    """What answered: EC2 itself, or the endpoint that stood in for it (e.g. moto's server)."""

    def describe(self) -> str:
        """One line for humans: ``generated 2026-12-01 in region us-east-1 by EC2 DescribeInstanceTypes``."""
        return f"generated {self.at} in region {self.region} by {self.source}"


def _load_bundled_items() -> dict[str, dict]:
    """Read the bundled table once per process."""
    global _bundled_items, _bundled_generated
    with _bundled_lock:
        if _bundled_items is None:
            raw = resources.files("gpu_fabric").joinpath(BUNDLED_TABLE_RESOURCE).read_bytes()
            table = json.loads(gzip.decompress(raw))
            generated = table.get("Generated") or {}
            _bundled_generated = TableOrigin(str(generated.get("At", "unknown")), str(generated.get("Region", "unknown")),
                                             str(generated.get("Source", "unknown source")))
            _bundled_items = {item["InstanceType"]: item for item in table["InstanceTypes"]}
        return _bundled_items


def bundled_table_origin() -> TableOrigin:
    """When and from which region the bundled table was generated."""
    _load_bundled_items()
    assert _bundled_generated is not None
    return _bundled_generated


class BundledInstanceCatalog:
    """The offline catalog: ``data/ec2_instance_types.json.gz`` (see scripts/generate_instance_catalog.py)."""

    source_name = "bundled"

    def names(self) -> list[str]:
        """Every instance type in the bundled table, sorted."""
        return sorted(_load_bundled_items())

    def describe(self, instance_types: Sequence[str]) -> dict[str, dict]:
        items = _load_bundled_items()
        unknown = [name for name in instance_types if name not in items]
        if unknown:
            raise UnknownInstanceTypeError(unknown, "bundled table", known=items)
        return {name: with_interface_types(items[name]) for name in dict.fromkeys(instance_types)}


# ---------------------------------------------------------------------------------------------
# EC2 through boto3
# ---------------------------------------------------------------------------------------------

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
            import boto3

            self._session = boto3.Session(profile_name=self.profile, region_name=self._requested_region)
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


# ---------------------------------------------------------------------------------------------
# EC2 first, bundled table second
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CatalogSource:
    """Which catalog answered, and why the bundled table was used when it was."""

    name: str  # "ec2" | "bundled"
    detail: str = ""

    @property
    def is_fallback(self) -> bool:
        return self.name == "bundled"

    def __str__(self) -> str:
        return f"{self.name} ({self.detail})" if self.detail else self.name


def _fallback_errors() -> tuple[type[BaseException], ...]:
    from botocore.exceptions import (
        ConnectTimeoutError,
        EndpointConnectionError,
        NoCredentialsError,
        NoRegionError,
        PartialCredentialsError,
    )

    return (NoCredentialsError, PartialCredentialsError, NoRegionError, EndpointConnectionError, ConnectTimeoutError)


def _fallback_reason(ec2: Ec2InstanceCatalog, error: BaseException) -> str:
    """Say in words why EC2 was not asked, keeping botocore's exception name for searching."""
    from botocore.exceptions import NoCredentialsError, NoRegionError, PartialCredentialsError

    if isinstance(error, NoCredentialsError):
        reason = "no AWS credentials found"
    elif isinstance(error, PartialCredentialsError):
        reason = f"incomplete AWS credentials ({error})"
    elif isinstance(error, NoRegionError):
        # The client is never created without a region, so credentials were not looked at yet.
        reason = "no AWS region configured"
        if ec2.session.get_credentials() is None:
            reason = "no AWS credentials found and no AWS region configured"
    else:
        reason = f"EC2 endpoint unreachable ({error})"
    return f"{reason} [{type(error).__name__}]"


def describe_with_fallback(
    instance_types: Sequence[str],
    *,
    region: str | None = None,
    profile: str | None = None,
    endpoint_url: str | None = None,
    offline: bool = False,
) -> tuple[dict[str, dict], CatalogSource]:
    """Describe ``instance_types`` through EC2, or the bundled table when EC2 cannot be asked.

    Falls back on missing/partial credentials, no configured region, or an unreachable endpoint;
    ``offline=True`` skips EC2. Unknown types raise :class:`UnknownInstanceTypeError` from
    whichever source answered; other AWS errors (e.g. AccessDenied) propagate.
    """
    bundled = BundledInstanceCatalog()
    if offline:
        return bundled.describe(instance_types), CatalogSource("bundled", "offline")
    ec2 = Ec2InstanceCatalog(region=region, profile=profile, endpoint_url=endpoint_url)
    try:
        return ec2.describe(instance_types), CatalogSource("ec2", ec2.region or "")
    except _fallback_errors() as error:
        return bundled.describe(instance_types), CatalogSource("bundled", _fallback_reason(ec2, error))


_ACTIVE_CATALOG: "contextvars.ContextVar[InstanceCatalog | None]" = contextvars.ContextVar("gpu_fabric_catalog", default=None)


def use_catalog(catalog: InstanceCatalog) -> None:
    """Make ``catalog`` the one components use in the current context (:func:`explicit_catalog`).

    ``gpu-fabric render`` sets the bundled table here so that an offline render never calls EC2,
    even on a machine that has AWS credentials; otherwise components ask EC2 with the stack's own
    settings (``gpu_fabric.resources.stack_catalog``).
    """
    _ACTIVE_CATALOG.set(catalog)


def explicit_catalog() -> InstanceCatalog | None:
    """The catalog set with :func:`use_catalog` in this context, if any."""
    return _ACTIVE_CATALOG.get()
