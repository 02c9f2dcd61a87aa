"""Kubernetes ``resource.Quantity`` parsing, enough to reason about counts and sizes.

GPUStack declares ``roles[].resources.interface`` and ``accelerator`` as Quantities, so ``2``,
``"2"`` and ``"2000m"`` all mean two. Counting rules (whole, positive) are decided by callers;
this module only turns the text into an exact ``Decimal``.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation

_BINARY_SUFFIXES = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL_SUFFIXES = {
    "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1),
    "k": Decimal("1e3"), "M": Decimal("1e6"), "G": Decimal("1e9"), "T": Decimal("1e12"),
    "P": Decimal("1e15"), "E": Decimal("1e18"),
}
# "No matter which of the three exponent forms is used, no quantity may represent a number greater
# than 2^63-1 in magnitude" (k8s.io/apimachinery/pkg/api/resource/quantity.go, type Quantity).
MAX_QUANTITY = Decimal(2**63 - 1)
# Kubernetes' grammar (the same file, the comment on type Quantity, and parseQuantityString, which
# scans only the bytes '0'..'9'): ASCII digits only. Python's ``\d`` and ``Decimal()`` would also take
# Arabic-Indic or full-width digits, which the API server refuses -- hence ``[0-9]`` and ``fullmatch``
#.
_QUANTITY = re.compile(r"([+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+))(?:([eE][+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)")


class QuantityError(ValueError):
    """The text is not a Kubernetes quantity."""


def parse_quantity(value: object) -> Decimal:
    """Return the exact value of a Kubernetes quantity given as ``int``, ``float`` or ``str``."""
    if isinstance(value, bool):
        raise QuantityError(f"{value!r} is not a quantity")
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"{value!r} is not a quantity (not a finite number)")
        return _bounded(value, Decimal(repr(value)))
    if not isinstance(value, str):
        raise QuantityError(f"{value!r} is not a quantity")
    # ``Quantity.UnmarshalJSON`` trims surrounding white space (strings.TrimSpace) before parsing.
    match = _QUANTITY.fullmatch(value.strip())
    if not match:
        raise QuantityError(f"{value!r} is not a quantity (examples: 2, \"2\", \"8Gi\", \"500m\")")
    number, exponent, suffix = match.groups()
    try:
        base = Decimal(number)
    except InvalidOperation as error:  # pragma: no cover - the regex admits only valid numbers
        raise QuantityError(f"{value!r} is not a quantity") from error
    if exponent:
        power = int(exponent[1:])
        if power > 18:  # 1e19 is already beyond MAX_QUANTITY; do not build 1e400000
            raise QuantityError(f"{value!r} is larger than a Kubernetes quantity may be (2^63-1)")
        return _bounded(value, base * (Decimal(10) ** power))
    if suffix in _BINARY_SUFFIXES:
        return _bounded(value, base * _BINARY_SUFFIXES[suffix])
    return _bounded(value, base * _DECIMAL_SUFFIXES[suffix or ""])


def _bounded(text: object, number: Decimal) -> Decimal:
    if abs(number) > MAX_QUANTITY:
        raise QuantityError(f"{text!r} is larger than a Kubernetes quantity may be (2^63-1)")
    return number


def amount(value: object, what: str = "quantity", *, positive: bool = False) -> Decimal:
    """A quantity that measures an amount (memory, capacity, a count): never negative.

    ``positive`` also refuses zero, for sizes that must hold something. Raises ``QuantityError``
    whose message names ``what``.
    """
    number = parse_quantity(value)
    if number < 0 or (positive and number == 0):
        raise QuantityError(f"{what} {value!r} must be {'greater than zero' if positive else 'zero or more'}")
    return number


def whole_count(value: object) -> int | None:
    """Return ``value`` as an ``int`` when it is a whole-number quantity, else ``None``."""
    try:
        number = parse_quantity(value)
    except QuantityError:
        return None
    return int(number) if number == number.to_integral_value() else None
