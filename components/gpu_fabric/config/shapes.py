"""Read manifests of unknown shape: the value at a key when it has the expected shape, else empty.

Manifests come from YAML files, resource inputs and builders; a malformed object must yield a
finding (``missing``, ``wrong type``), never a ``TypeError``, and static type checking must see
what each read returns.

At ``pulumi preview`` any value may also be *unknown*: the engine sends a value it does not know
yet (another resource's id or output) as its sentinel string, and the policies' boundary
(``gpu_fabric.policies.engine_wire.plain``) turns every sentinel into :data:`UNKNOWN`. That value is
readable as every shape a rule may expect, so no reader below the boundary needs to ask first:
as a mapping it has no keys and every key of it is unknown, iterated it yields nothing, it is
``in`` nothing's way, and it equals only itself. A rule that needs the value cannot decide (it sees
nothing to refuse); every other rule still decides over the values that are known.
"""

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Optional


class Unknown(Mapping[str, Any]):
    """A value the engine does not know at preview: an absorbing, empty mapping and iterable.

    Reading a key of an unknown object gives :data:`UNKNOWN` (a part of an unknown value is
    unknown); iterating it, taking its length or testing membership sees nothing. It is truthy (a
    value will be there after the update) and equal only to itself, so it never matches a wanted
    spelling. There is exactly one instance, :data:`UNKNOWN`.
    """

    _instance: Optional["Unknown"] = None

    def __new__(cls) -> "Unknown":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __getitem__(self, key: Any) -> Any:
        return self

    def get(self, key: Any, default: Any = None) -> Any:
        return self

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0

    def __contains__(self, item: object) -> bool:
        return False

    def __eq__(self, other: object) -> bool:
        return other is self

    def __hash__(self) -> int:
        return id(self)

    def __bool__(self) -> bool:
        # An unknown value is present: it will have a value after the update.
        return True

    def __repr__(self) -> str:
        return "<unknown at preview>"

    __str__ = __repr__


UNKNOWN: Any = Unknown()
"""The one unknown value (typed ``Any``: it stands wherever any value may stand)."""


def is_unknown(value: Any) -> bool:
    """True for :data:`UNKNOWN`."""
    return value is UNKNOWN


def as_mapping(value: Any) -> Mapping[str, Any]:
    """``value`` when it is a mapping (unknown reads as an unknown mapping), else an empty one."""
    return value if isinstance(value, Mapping) else {}


def as_list(value: Any) -> list[Any]:
    """``value`` when it is a list, else an empty one."""
    return value if isinstance(value, list) else []


def known_str(value: Any) -> Optional[str]:
    """``value`` as a string when it is a known scalar, else ``None``."""
    if value is None or is_unknown(value) or isinstance(value, (Mapping, list)):
        return None
    return str(value)


def truthy(value: Any) -> bool:
    """A known true value, accepting pulumi-aws's string booleans (``"true"``)."""
    if is_unknown(value):
        return False
    if isinstance(value, str):
        return value.strip().lower() == "true"
    return value is True


def mapping_at(obj: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """``obj[key]`` when it is a mapping (or unknown), else an empty one."""
    value = obj.get(key)
    return value if isinstance(value, Mapping) else {}


def list_at(obj: Mapping[str, Any], key: str) -> list[Any]:
    """``obj[key]`` when it is a list, else an empty one (unknown, missing, wrong type)."""
    value = obj.get(key)
    return value if isinstance(value, list) else []


def str_at(obj: Mapping[str, Any], key: str) -> Optional[str]:
    """``obj[key]`` when it is a known string, else ``None`` (unknown, missing, wrong type)."""
    value = obj.get(key)
    return value if isinstance(value, str) else None


def int_at(obj: Mapping[str, Any], key: str) -> Optional[int]:
    """``obj[key]`` when it is a known whole number (not a bool), else ``None``."""
    value = obj.get(key)
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value if isinstance(value, int) else None


def unknown_paths(value: Any, prefix: str = "") -> list[str]:
    """The paths (``a.b[0].c``) of every :data:`UNKNOWN` inside ``value``, ``prefix`` first.

    A rule whose deciding fields are among them cannot decide at preview: it says which value it
    waits for (a not-applicable reason) instead of refusing or passing on a guess.
    """
    if is_unknown(value):
        return [prefix or "<root>"]
    found: list[str] = []
    if isinstance(value, Mapping):
        for key, item in value.items():
            found += unknown_paths(item, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += unknown_paths(item, f"{prefix}[{index}]")
    return found


def rests_on_unknown(value: Any, path: Sequence[Any]) -> bool:
    """True when reading ``path`` inside ``value`` meets :data:`UNKNOWN` (the value or one of its parents).

    ``path`` is keys and list indices; ``"*"`` stands for every item of a list or mapping there. A
    refusal whose deciding field rests on an unknown waits for the value (it might be what the rule
    wants); a refusal that reads only known fields is still made.
    """
    if is_unknown(value):
        return True
    if not path:
        return bool(unknown_paths(value))
    head, rest = path[0], path[1:]
    if head == "*":
        items = value.values() if isinstance(value, Mapping) else value if isinstance(value, list) else []
        return any(rests_on_unknown(item, rest) for item in items)
    if isinstance(value, Mapping):
        return head in value and rests_on_unknown(value[head], rest)
    if isinstance(value, list) and isinstance(head, int):
        return -len(value) <= head < len(value) and rests_on_unknown(value[head], rest)
    return False
