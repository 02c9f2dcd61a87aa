"""EFA interface planner and plan validator (pure).

Input is one ``DescribeInstanceTypes`` item (see ``gpu_fabric.aws.catalog.types``); output is a sorted list
of :class:`PlannedInterface`. The rules, from EC2's multi-card guidance and the pain points of
eksctl / terraform-aws-eks / pulumi-eks (eksctl ``buildNetworkInterfaces``, eksctl#7520 and #8685,
pulumi-eks ``getEfaNetworkInterfaces`` in ``instances.ts``, aws-parallelcluster#7143, EC2 User Guide
"Maximize network bandwidth on instances with multiple network cards"):

* the EFA count is ``EfaInfo.MaximumEfaInterfaces`` -- never ``MaximumNetworkCards`` (p6-b300 has
  17 cards but 16 EFAs, none on card 0);
* EFAs go only on cards whose ``InterfaceTypes`` include EFA, at most one per card;
* every device index is below its card's ``MaximumNetworkInterfaces``;
* exactly one primary interface at card 0 / device 0, never ``efa-only``.

Layouts:

``recommended`` (EC2's current guidance)
    card 0 / device 0 is a plain ENA ``interface``; when card 0 carries an EFA it gets ``efa-only``
    at device 1 -- or, when card 0 takes a single interface, the primary itself becomes ``efa``;
    every other EFA card gets ``efa-only`` at device 0. A node therefore uses exactly one
    address-consuming interface, so EFA never exhausts the subnet's IPs.

``legacy`` (what eksctl and terraform-aws-eks generate, accepted since eksctl#7643)
    every EFA is ``efa``: card 0 / device 0 is the ``efa`` primary (a plain ``interface`` when card 0
    carries no EFA), each other EFA card gets ``efa`` at device 1, or device 0 when the card takes a
    single interface. Each ``efa`` consumes a VPC address.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from gpu_fabric.aws.catalog.types import EFA_INTERFACE_TYPES, card_interface_types

INTERFACE = "interface"
EFA = "efa"
EFA_ONLY = "efa-only"
INTERFACE_TYPES = (INTERFACE, EFA, EFA_ONLY)

LAYOUTS = ("recommended", "legacy")

# Launch-template keys that give an interface an address; none may be set on an efa-only interface.
ADDRESS_KEYS = (
    "privateIpAddress",
    "privateIpAddresses",
    "ipv4AddressCount",
    "ipv4Addresses",
    "ipv6AddressCount",
    "ipv6Addresses",
    "associatePublicIpAddress",
)


class EfaPlanError(ValueError):
    """An EFA interface plan cannot be made (names the instance type and card at fault)."""


@dataclass(frozen=True)
class PlannedInterface:
    """One network interface of a launch template."""

    network_card_index: int
    device_index: int
    interface_type: str  # "interface" | "efa" | "efa-only"

    @property
    def consumes_address(self) -> bool:
        """``efa-only`` interfaces have no IP address; the others take one from the subnet."""
        return self.interface_type != EFA_ONLY

    @property
    def is_efa(self) -> bool:
        return self.interface_type in EFA_INTERFACE_TYPES

    @property
    def is_primary(self) -> bool:
        return self.network_card_index == 0 and self.device_index == 0

    def to_launch_template(self) -> dict[str, Any]:
        """The engine's camelCase launch-template keys (``networkInterfaces[]`` item)."""
        return {
            "networkCardIndex": self.network_card_index,
            "deviceIndex": self.device_index,
            "interfaceType": self.interface_type,
        }


def _name(info: Mapping[str, Any]) -> str:
    return str(info.get("InstanceType", "<unnamed instance type>"))


def _efa_supported(info: Mapping[str, Any]) -> bool:
    return bool((info.get("NetworkInfo") or {}).get("EfaSupported"))


def _max_efa(info: Mapping[str, Any]) -> int:
    if not _efa_supported(info):
        return 0
    return int(((info.get("NetworkInfo") or {}).get("EfaInfo") or {}).get("MaximumEfaInterfaces", 0))


def _card_limits(info: Mapping[str, Any]) -> dict[int, int]:
    return {
        int(card.get("NetworkCardIndex", 0)): int(card.get("MaximumNetworkInterfaces", 0))
        for card in (info.get("NetworkInfo") or {}).get("NetworkCards") or []
    }


def _max_cards(info: Mapping[str, Any]) -> int:
    return int((info.get("NetworkInfo") or {}).get("MaximumNetworkCards") or len(_card_limits(info)) or 1)


def _supports_efa(types: Iterable[str]) -> bool:
    return bool(EFA_INTERFACE_TYPES.intersection(types))


def _choose_efa_cards(info: Mapping[str, Any], efa_card_indices: Sequence[int] | None) -> list[int]:
    name = _name(info)
    types_by_card = card_interface_types(info)
    max_efa = _max_efa(info)
    capable = [index for index, types in sorted(types_by_card.items()) if _supports_efa(types)]
    if efa_card_indices is None:
        if len(capable) < max_efa:
            raise EfaPlanError(
                f"{name} reports MaximumEfaInterfaces {max_efa} but only {len(capable)} network card(s) "
                f"support EFA ({capable})"
            )
        return capable[:max_efa]

    chosen = [int(index) for index in efa_card_indices]
    problems: list[str] = []
    duplicates = sorted({index for index in chosen if chosen.count(index) > 1})
    if duplicates:
        problems.append(f"network card(s) {duplicates} listed more than once (at most one EFA per card)")
    for index in dict.fromkeys(chosen):
        if index not in types_by_card:
            problems.append(f"network card {index} does not exist (cards 0-{_max_cards(info) - 1})")
        elif not _supports_efa(types_by_card[index]):
            problems.append(f"network card {index} does not support EFA (interface types: {', '.join(types_by_card[index])})")
    if len(chosen) > max_efa:
        problems.append(f"{len(chosen)} EFA cards requested but MaximumEfaInterfaces is {max_efa}")
    if not chosen:
        problems.append("efa_card_indices is empty")
    if problems:
        raise EfaPlanError(f"efa_card_indices {list(efa_card_indices)} invalid for {name}: " + "; ".join(problems))
    return sorted(chosen)


def plan_interfaces(
    instance_type_info: Mapping[str, Any],
    *,
    layout: str = "recommended",
    efa_card_indices: Sequence[int] | None = None,
) -> list[PlannedInterface]:
    """Plan the network interfaces of one EFA instance type, sorted by (card, device).

    ``instance_type_info`` is one ``DescribeInstanceTypes`` item. ``layout`` is ``"recommended"``
    or ``"legacy"`` (see the module docstring). ``efa_card_indices`` picks the EFA cards
    explicitly (each must exist and support EFA; at most ``MaximumEfaInterfaces``); by default the
    first ``MaximumEfaInterfaces`` EFA-capable cards are used. Raises :class:`EfaPlanError`.
    """
    name = _name(instance_type_info)
    if layout not in LAYOUTS:
        raise EfaPlanError(f"unknown EFA layout {layout!r} for {name}; expected one of {', '.join(LAYOUTS)}")
    if not _efa_supported(instance_type_info):
        raise EfaPlanError(f"{name} does not support EFA (NetworkInfo.EfaSupported is false)")

    types_by_card = card_interface_types(instance_type_info)
    limits = _card_limits(instance_type_info)
    if 0 not in limits or limits[0] < 1:
        raise EfaPlanError(f"{name} reports no network card 0 with room for the primary interface")
    efa_cards = _choose_efa_cards(instance_type_info, efa_card_indices)

    def secondary_type(card: int) -> str:
        # Prefer an address-less EFA where the card offers it (recommended) -- unless legacy.
        offered = types_by_card[card]
        if layout == "recommended" and EFA_ONLY in offered:
            return EFA_ONLY
        if EFA in offered:
            return EFA
        return EFA_ONLY

    planned: list[PlannedInterface] = []
    if 0 in efa_cards:
        if layout == "legacy" or limits[0] == 1:
            if EFA not in types_by_card[0]:
                raise EfaPlanError(
                    f"{name}: network card 0 takes a single interface but does not offer type 'efa' "
                    f"for the primary (interface types: {', '.join(types_by_card[0])})"
                )
            planned.append(PlannedInterface(0, 0, EFA))
        else:
            planned.append(PlannedInterface(0, 0, INTERFACE))
            planned.append(PlannedInterface(0, 1, secondary_type(0)))
    else:
        planned.append(PlannedInterface(0, 0, INTERFACE))

    for card in efa_cards:
        if card == 0:
            continue
        device = 1 if layout == "legacy" and limits.get(card, 0) >= 2 else 0
        planned.append(PlannedInterface(card, device, secondary_type(card)))

    return sorted(planned, key=lambda interface: (interface.network_card_index, interface.device_index))


def describe_plan(interfaces: Sequence[PlannedInterface]) -> str:
    """A one-line summary such as ``"33 interfaces on 32 cards: 1 interface, 32 efa-only"``."""
    counts = {kind: sum(1 for i in interfaces if i.interface_type == kind) for kind in INTERFACE_TYPES}
    cards = len({interface.network_card_index for interface in interfaces})
    parts = ", ".join(f"{count} {kind}" for kind, count in counts.items() if count)
    return f"{len(interfaces)} interfaces on {cards} cards: {parts}"


def plan_group(
    infos: Sequence[Mapping[str, Any]],
    *,
    layout: str = "recommended",
    efa_card_indices: Sequence[int] | None = None,
) -> list[PlannedInterface]:
    """Plan one launch template for several instance types; they must all yield the same plan.

    Raises :class:`EfaPlanError` naming the types whose plans disagree (with a summary of each).
    """
    if not infos:
        raise EfaPlanError("no instance types to plan EFA interfaces for")
    plans = [(_name(info), plan_interfaces(info, layout=layout, efa_card_indices=efa_card_indices)) for info in infos]
    first_name, first_plan = plans[0]
    disagreeing = [(name, plan) for name, plan in plans[1:] if plan != first_plan]
    if disagreeing:
        summaries = "; ".join(f"{name}: {describe_plan(plan)}" for name, plan in [(first_name, first_plan), *disagreeing])
        raise EfaPlanError(
            "instance types of one group need different EFA interface layouts, so one launch template "
            f"cannot serve them ({summaries})"
        )
    return first_plan


# ---------------------------------------------------------------------------------------------
# Validation of arbitrary plans (planner output or launch-template props)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Interface:
    card: int
    device: int
    kind: str
    address_keys: tuple[str, ...]


def _is_set(value: Any) -> bool:
    if value is None or value is False:
        return False
    if isinstance(value, str):
        return value.strip().lower() not in ("", "false", "0")
    if isinstance(value, (list, tuple, dict)):
        return len(value) > 0
    if isinstance(value, (int, float)):
        return value != 0
    return True


def _normalise(position: int, interface: Any, problems: list[str]) -> _Interface | None:
    if isinstance(interface, PlannedInterface):
        return _Interface(interface.network_card_index, interface.device_index, interface.interface_type, ())
    if not isinstance(interface, Mapping):
        problems.append(f"interface #{position}: expected a PlannedInterface or a mapping, got {type(interface).__name__}")
        return None
    try:
        # EC2 defaults both indices to 0 when omitted.
        card = int(interface.get("networkCardIndex") or 0)
        device = int(interface.get("deviceIndex") or 0)
    except (TypeError, ValueError):
        problems.append(
            f"interface #{position}: networkCardIndex/deviceIndex must be integers "
            f"(got {interface.get('networkCardIndex')!r}/{interface.get('deviceIndex')!r})"
        )
        return None
    kind = str(interface.get("interfaceType") or INTERFACE)
    address_keys = tuple(key for key in ADDRESS_KEYS if _is_set(interface.get(key)))
    return _Interface(card, device, kind, address_keys)


def validate_plan(
    instance_type_info: Mapping[str, Any],
    interfaces: Sequence[PlannedInterface | Mapping[str, Any]],
    *,
    efa_count: int | None = None,
) -> list[str]:
    """Return every problem of an interface plan for one instance type (empty when it is sound).

    ``interfaces`` holds :class:`PlannedInterface` objects or launch-template dicts with the
    engine's camelCase keys (``networkCardIndex``, ``deviceIndex``, ``interfaceType`` and optional
    address keys such as ``privateIpAddresses``, ``ipv4AddressCount``,
    ``associatePublicIpAddress``; other keys such as ``securityGroups`` are ignored here).
    ``efa_count`` is the number of EFAs the plan must carry: by default
    ``EfaInfo.MaximumEfaInterfaces`` (0 for a type without EFA support); pass a smaller number
    for a group that deliberately uses fewer EFA cards.
    """
    name = _name(instance_type_info)
    problems: list[str] = []
    normalised = [n for position, i in enumerate(interfaces) if (n := _normalise(position, i, problems))]

    types_by_card = card_interface_types(instance_type_info)
    limits = _card_limits(instance_type_info)
    max_cards = _max_cards(instance_type_info)
    max_efa = _max_efa(instance_type_info)
    efa_supported = _efa_supported(instance_type_info)
    expected_efa = max_efa if efa_count is None else efa_count

    for interface in normalised:
        where = f"network card {interface.card}, device {interface.device}"
        if interface.kind not in INTERFACE_TYPES:
            problems.append(f"{where}: unknown interfaceType {interface.kind!r} (expected one of {', '.join(INTERFACE_TYPES)})")
        if interface.card < 0 or interface.card >= max_cards or interface.card not in limits:
            problems.append(
                f"{where}: network card {interface.card} does not exist on {name} "
                f"(MaximumNetworkCards {max_cards}, cards 0-{max_cards - 1})"
            )
            continue
        if interface.device < 0 or interface.device >= limits[interface.card]:
            problems.append(
                f"{where}: device index {interface.device} exceeds {name}'s limit for network card "
                f"{interface.card} (MaximumNetworkInterfaces {limits[interface.card]}, device indices "
                f"0-{limits[interface.card] - 1})"
            )
        if interface.kind in EFA_INTERFACE_TYPES and interface.kind not in types_by_card[interface.card]:
            if _supports_efa(types_by_card[interface.card]):
                problems.append(
                    f"{where}: network card {interface.card} of {name} does not offer interface type "
                    f"{interface.kind!r} (interface types: {', '.join(types_by_card[interface.card])})"
                )
            else:
                problems.append(
                    f"{where}: network card {interface.card} of {name} does not support EFA "
                    f"(interface types: {', '.join(types_by_card[interface.card])})"
                )
        if interface.kind == EFA_ONLY and interface.address_keys:
            problems.append(
                f"{where}: an efa-only interface has no IP address, but {', '.join(interface.address_keys)} "
                "is set; remove it or use type 'efa'"
            )

    efa_interfaces = [i for i in normalised if i.kind in EFA_INTERFACE_TYPES]
    if efa_interfaces and not efa_supported:
        problems.append(f"{name} does not support EFA, but the plan has {len(efa_interfaces)} EFA interface(s)")
    elif len(efa_interfaces) != expected_efa:
        basis = (
            "counted from EfaInfo.MaximumEfaInterfaces, not MaximumNetworkCards"
            if efa_count is None
            else f"requested efa_count, MaximumEfaInterfaces is {max_efa}"
        )
        problems.append(
            f"the plan carries {len(efa_interfaces)} EFA interface(s) but {name} needs {expected_efa} ({basis})"
        )
    if efa_count is not None and efa_count > max_efa:
        problems.append(f"efa_count {efa_count} exceeds {name}'s MaximumEfaInterfaces {max_efa}")

    for card in sorted({i.card for i in efa_interfaces}):
        on_card = sorted(i.device for i in efa_interfaces if i.card == card)
        if len(on_card) > 1:
            problems.append(
                f"network card {card} carries {len(on_card)} EFA interfaces (devices {on_card}); "
                "at most one EFA per network card"
            )

    seen: dict[tuple[int, int], int] = {}
    for interface in normalised:
        seen[(interface.card, interface.device)] = seen.get((interface.card, interface.device), 0) + 1
    for (card, device), count in sorted(seen.items()):
        if count > 1:
            problems.append(f"network card {card}, device {device} is used by {count} interfaces; (card, device) pairs must be unique")

    primaries = [i for i in normalised if i.card == 0 and i.device == 0]
    if not primaries:
        problems.append("no primary interface: network card 0, device 0 must carry an 'interface' or 'efa'")
    elif any(i.kind == EFA_ONLY for i in primaries):
        problems.append("network card 0, device 0: the primary interface cannot be efa-only (it has no IP address)")
    return problems
