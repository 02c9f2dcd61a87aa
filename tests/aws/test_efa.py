"""gpu_fabric.aws.efa: the interface planner and the plan validator."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import moto
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpu_fabric.aws.catalog.bundled import BundledInstanceCatalog
from gpu_fabric.aws.catalog.types import card_interface_types
from gpu_fabric.aws.efa import EfaPlanError, PlannedInterface, plan_group, plan_interfaces, validate_plan

BUNDLED = BundledInstanceCatalog()
BUNDLED_ITEMS = BUNDLED.describe(BUNDLED.names())
BUNDLED_EFA_TYPES = sorted(name for name, item in BUNDLED_ITEMS.items() if item["NetworkInfo"]["EfaSupported"])

MOTO_TABLE = Path(moto.__file__).parent / "ec2" / "resources" / "instance_types.json.gz"
MOTO_ITEMS: dict[str, dict] = json.loads(gzip.decompress(MOTO_TABLE.read_bytes()))
MOTO_EFA_TYPES = sorted(name for name, item in MOTO_ITEMS.items() if item["NetworkInfo"].get("EfaSupported"))


def item(name: str) -> dict:
    return BUNDLED_ITEMS[name]


def efa_interfaces(plan):
    return [interface for interface in plan if interface.interface_type in ("efa", "efa-only")]


def assert_sound_default_plan(info: dict) -> None:
    plan = plan_interfaces(info)
    assert validate_plan(info, plan) == [], info["InstanceType"]
    assert len(efa_interfaces(plan)) == info["NetworkInfo"]["EfaInfo"]["MaximumEfaInterfaces"]
    assert sum(1 for interface in plan if interface.consumes_address) == 1, info["InstanceType"]
    assert plan == sorted(plan, key=lambda i: (i.network_card_index, i.device_index))


# --- every EFA-capable type ---------------------------------------------------------------------


def test_bundled_table_has_the_efa_types_of_moto():
    assert len(BUNDLED_EFA_TYPES) >= 300
    assert set(BUNDLED_EFA_TYPES) == set(MOTO_EFA_TYPES)


@pytest.mark.parametrize("name", BUNDLED_EFA_TYPES)
def test_default_plan_of_every_bundled_efa_type_is_sound(name):
    assert_sound_default_plan(item(name))


@pytest.mark.parametrize("name", MOTO_EFA_TYPES)
def test_default_plan_of_every_moto_efa_type_is_sound(name):
    assert_sound_default_plan(MOTO_ITEMS[name])


@pytest.mark.parametrize("name", MOTO_EFA_TYPES)
def test_plans_stay_sound_when_interface_types_must_be_derived(name):
    stripped = json.loads(json.dumps(MOTO_ITEMS[name]))
    for card in stripped["NetworkInfo"]["NetworkCards"]:
        del card["InterfaceTypes"]
    assert_sound_default_plan(stripped)
    legacy = plan_interfaces(stripped, layout="legacy")
    assert validate_plan(stripped, legacy) == []


@pytest.mark.parametrize("name", BUNDLED_EFA_TYPES)
def test_legacy_plan_of_every_bundled_efa_type_is_valid(name):
    plan = plan_interfaces(item(name), layout="legacy")
    assert validate_plan(item(name), plan) == []
    assert all(interface.interface_type != "efa-only" for interface in plan)


# --- specific instance types --------------------------------------------------------------------


def test_p5_48xlarge_gets_32_efas():
    plan = plan_interfaces(item("p5.48xlarge"))
    assert len(efa_interfaces(plan)) == 32
    assert plan[:3] == [
        PlannedInterface(0, 0, "interface"),
        PlannedInterface(0, 1, "efa-only"),
        PlannedInterface(1, 0, "efa-only"),
    ]
    assert len(plan) == 33


def test_p6_b300_gets_16_efas_and_none_on_card_0():
    plan = plan_interfaces(item("p6-b300.48xlarge"))
    assert plan[0] == PlannedInterface(0, 0, "interface")
    assert [i for i in plan if i.network_card_index == 0] == [PlannedInterface(0, 0, "interface")]
    assert efa_interfaces(plan) == [PlannedInterface(card, 0, "efa-only") for card in range(1, 17)]


def test_hpc6id_single_slot_cards_use_an_efa_primary():
    info = item("hpc6id.32xlarge")
    # Two cards, one interface each, two EFAs: no room for a separate ENA primary.
    assert [card["MaximumNetworkInterfaces"] for card in info["NetworkInfo"]["NetworkCards"]] == [1, 1]
    assert info["NetworkInfo"]["EfaInfo"]["MaximumEfaInterfaces"] == 2
    assert plan_interfaces(info) == [PlannedInterface(0, 0, "efa"), PlannedInterface(1, 0, "efa-only")]
    assert plan_interfaces(info, layout="legacy") == [PlannedInterface(0, 0, "efa"), PlannedInterface(1, 0, "efa")]


def test_legacy_layout_of_p5_is_efa_on_device_1_of_other_cards():
    plan = plan_interfaces(item("p5.48xlarge"), layout="legacy")
    assert plan[0] == PlannedInterface(0, 0, "efa")
    assert plan[1:] == [PlannedInterface(card, 1, "efa") for card in range(1, 32)]


def test_single_efa_type_keeps_an_ena_primary_and_an_efa_only_on_card_0():
    assert plan_interfaces(item("g6e.8xlarge")) == [PlannedInterface(0, 0, "interface"), PlannedInterface(0, 1, "efa-only")]


def test_planned_interfaces_convert_to_launch_template_keys():
    assert PlannedInterface(3, 0, "efa-only").to_launch_template() == {
        "networkCardIndex": 3, "deviceIndex": 0, "interfaceType": "efa-only",
    }
    assert not PlannedInterface(3, 0, "efa-only").consumes_address
    assert PlannedInterface(0, 0, "efa").consumes_address


# --- planner errors -----------------------------------------------------------------------------


def test_non_efa_type_is_refused_by_name():
    with pytest.raises(EfaPlanError, match="g5.xlarge does not support EFA"):
        plan_interfaces(item("g5.xlarge"))


def test_unknown_layout_is_refused():
    with pytest.raises(EfaPlanError, match="unknown EFA layout 'fancy'"):
        plan_interfaces(item("p5.48xlarge"), layout="fancy")


def test_explicit_efa_cards_are_used_and_validated():
    info = item("p6-b300.48xlarge")
    plan = plan_interfaces(info, efa_card_indices=[1, 2, 3, 4])
    assert efa_interfaces(plan) == [PlannedInterface(card, 0, "efa-only") for card in (1, 2, 3, 4)]
    assert validate_plan(info, plan, efa_count=4) == []
    with pytest.raises(EfaPlanError, match="network card 0 does not support EFA"):
        plan_interfaces(info, efa_card_indices=[0, 1])
    with pytest.raises(EfaPlanError, match="network card 17 does not exist"):
        plan_interfaces(info, efa_card_indices=[17])
    with pytest.raises(EfaPlanError, match="17 EFA cards requested but MaximumEfaInterfaces is 16"):
        plan_interfaces(info, efa_card_indices=list(range(1, 17)) + [1])


def test_group_of_identical_layouts_plans_once():
    plan = plan_group([item("p5.48xlarge"), item("p5e.48xlarge")])
    assert plan == plan_interfaces(item("p5.48xlarge"))


def test_group_of_different_layouts_names_the_disagreeing_types():
    with pytest.raises(EfaPlanError) as raised:
        plan_group([item("p5.48xlarge"), item("p4d.24xlarge")])
    assert "p5.48xlarge" in str(raised.value) and "p4d.24xlarge" in str(raised.value)
    assert "32 efa-only" in str(raised.value)


def test_group_with_a_non_efa_type_names_it():
    with pytest.raises(EfaPlanError, match="g5.xlarge"):
        plan_group([item("p5.48xlarge"), item("g5.xlarge")])


# --- validate_plan catches each mistake ---------------------------------------------------------


def as_dicts(plan):
    return [interface.to_launch_template() for interface in plan]


def test_launch_template_dicts_of_a_sound_plan_pass():
    info = item("p5.48xlarge")
    interfaces = as_dicts(plan_interfaces(info))
    interfaces[0].update({"securityGroups": ["sg-1"], "associatePublicIpAddress": "false"})
    assert validate_plan(info, interfaces) == []


def test_efa_count_taken_from_network_cards_instead_of_max_efa_interfaces_is_refused():
    info = item("p6-b300.48xlarge")
    # The eksctl-on-main mistake: one EFA per card, 17 of them, the first on card 0.
    interfaces = [{"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "efa"}] + [
        {"networkCardIndex": card, "deviceIndex": 1, "interfaceType": "efa-only"} for card in range(1, 17)
    ]
    problems = validate_plan(info, interfaces)
    assert any("carries 17 EFA interface(s)" in p and "needs 16" in p and "MaximumEfaInterfaces" in p for p in problems)
    assert any("network card 0 of p6-b300.48xlarge does not support EFA" in p for p in problems)


def test_too_few_efas_are_refused():
    info = item("p5.48xlarge")
    problems = validate_plan(info, plan_interfaces(info)[:-1])
    assert problems == ["the plan carries 31 EFA interface(s) but p5.48xlarge needs 32 "
                        "(counted from EfaInfo.MaximumEfaInterfaces, not MaximumNetworkCards)"]


def test_efa_on_card_0_of_p6_b300_is_refused():
    info = item("p6-b300.48xlarge")
    plan = plan_interfaces(info)
    moved = [PlannedInterface(0, 1, "efa-only") if i.network_card_index == 16 else i for i in plan]
    problems = validate_plan(info, moved)
    assert problems == [
        "network card 0, device 1: network card 0 of p6-b300.48xlarge does not support EFA (interface types: interface)"
    ]


def test_missing_primary_is_refused():
    info = item("p5.48xlarge")
    problems = validate_plan(info, [i for i in plan_interfaces(info) if not i.is_primary])
    assert "no primary interface: network card 0, device 0 must carry an 'interface' or 'efa'" in problems


def test_efa_only_primary_is_refused():
    info = item("hpc6id.32xlarge")
    problems = validate_plan(info, [PlannedInterface(0, 0, "efa-only"), PlannedInterface(1, 0, "efa-only")])
    assert problems == ["network card 0, device 0: the primary interface cannot be efa-only (it has no IP address)"]


def test_two_efas_on_one_card_are_refused():
    info = item("g6e.24xlarge")  # 2 cards, 2 EFAs
    plan = [PlannedInterface(0, 0, "interface"), PlannedInterface(0, 1, "efa-only"), PlannedInterface(0, 2, "efa-only")]
    problems = validate_plan(info, plan)
    assert "network card 0 carries 2 EFA interfaces (devices [1, 2]); at most one EFA per network card" in problems


def test_card_index_beyond_maximum_network_cards_is_refused():
    info = item("p5.48xlarge")
    plan = plan_interfaces(info)[:-1] + [PlannedInterface(32, 0, "efa-only")]
    problems = validate_plan(info, plan)
    assert any(p.startswith("network card 32, device 0: network card 32 does not exist") and "MaximumNetworkCards 32" in p
               for p in problems)


def test_device_index_beyond_the_card_limit_is_refused():
    info = item("p5.48xlarge")
    # eksctl#7520: DeviceIndex=i on p5, whose cards take 2 interfaces each.
    plan = [i if i.network_card_index != 5 else PlannedInterface(5, 2, "efa-only") for i in plan_interfaces(info)]
    problems = validate_plan(info, plan)
    assert problems == [
        "network card 5, device 2: device index 2 exceeds p5.48xlarge's limit for network card 5 "
        "(MaximumNetworkInterfaces 2, device indices 0-1)"
    ]


def test_duplicate_card_and_device_is_refused():
    info = item("p5.48xlarge")
    plan = plan_interfaces(info) + [PlannedInterface(0, 0, "interface")]
    problems = validate_plan(info, plan)
    assert "network card 0, device 0 is used by 2 interfaces; (card, device) pairs must be unique" in problems


@pytest.mark.parametrize(
    "address",
    [{"privateIpAddresses": ["10.0.0.5"]}, {"ipv4AddressCount": 2}, {"associatePublicIpAddress": "true"},
     {"associatePublicIpAddress": True}],
)
def test_addresses_on_efa_only_are_refused(address):
    info = item("p5.48xlarge")
    interfaces = as_dicts(plan_interfaces(info))
    interfaces[2].update(address)
    problems = validate_plan(info, interfaces)
    assert len(problems) == 1
    assert problems[0].startswith("network card 1, device 0: an efa-only interface has no IP address")
    assert next(iter(address)) in problems[0]


def test_efa_on_a_type_without_efa_is_refused():
    problems = validate_plan(item("g5.xlarge"), [PlannedInterface(0, 0, "efa")])
    assert any("g5.xlarge does not support EFA" in p for p in problems)
    assert validate_plan(item("g5.xlarge"), [PlannedInterface(0, 0, "interface")]) == []


def test_unknown_interface_type_and_bad_indices_are_reported():
    info = item("g6e.8xlarge")
    problems = validate_plan(info, [{"deviceIndex": 0, "interfaceType": "interface"},
                                    {"networkCardIndex": 0, "deviceIndex": 1, "interfaceType": "efa-lite"}])
    assert any("unknown interfaceType 'efa-lite'" in p for p in problems)
    problems = validate_plan(info, [{"networkCardIndex": "zero", "deviceIndex": 0}])
    assert any("must be integers" in p for p in problems)


# --- property: synthetic instance types ---------------------------------------------------------


@st.composite
def synthetic_instance_types(draw):
    card_count = draw(st.integers(min_value=1, max_value=20))
    cards = []
    for index in range(card_count):
        efa_capable = draw(st.booleans())
        cards.append({
            "NetworkCardIndex": index,
            "MaximumNetworkInterfaces": draw(st.integers(min_value=1, max_value=6)),
            "InterfaceTypes": ["interface", "efa", "efa-only"] if efa_capable else ["interface"],
        })
    capable = sum(1 for card in cards if "efa" in card["InterfaceTypes"])
    max_efa = draw(st.integers(min_value=1, max_value=capable)) if capable else 0
    return {
        "InstanceType": "synthetic.metal",
        "NetworkInfo": {
            "EfaSupported": capable > 0,
            "EfaInfo": {"MaximumEfaInterfaces": max_efa},
            "MaximumNetworkCards": card_count,
            "NetworkCards": cards,
        },
    }


@settings(max_examples=300, deadline=None)
@given(synthetic_instance_types(), st.sampled_from(["recommended", "legacy"]))
def test_plans_never_share_a_slot_nor_exceed_card_limits(info, layout):
    if not info["NetworkInfo"]["EfaSupported"]:
        with pytest.raises(EfaPlanError):
            plan_interfaces(info, layout=layout)
        return
    plan = plan_interfaces(info, layout=layout)
    slots = [(i.network_card_index, i.device_index) for i in plan]
    assert len(slots) == len(set(slots))
    limits = {card["NetworkCardIndex"]: card["MaximumNetworkInterfaces"] for card in info["NetworkInfo"]["NetworkCards"]}
    assert all(0 <= i.device_index < limits[i.network_card_index] for i in plan)
    assert all(i.network_card_index < info["NetworkInfo"]["MaximumNetworkCards"] for i in plan)
    efa_cards = [i.network_card_index for i in efa_interfaces(plan)]
    assert len(efa_cards) == len(set(efa_cards)) == info["NetworkInfo"]["EfaInfo"]["MaximumEfaInterfaces"]
    assert all("efa" in card_interface_types(info)[card] for card in efa_cards)
    assert validate_plan(info, plan) == []
    if layout == "recommended":
        assert sum(1 for i in plan if i.consumes_address) == 1
