"""What an instance catalog answers: ``DescribeInstanceTypes`` items, the facts read from them, the interface.

Every item a catalog returns is a ``DescribeInstanceTypes`` item exactly as boto3 returns it
(PascalCase dicts), so the planner, the policies and the CLI read one shape whatever the source.
The one place where data absent from the API is *derived* is :func:`card_interface_types`.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Protocol, Sequence

from gpu_fabric.aws.catalog.table import load_bundled_items

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
        choices = list(known) if known is not None else list(load_bundled_items())
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
