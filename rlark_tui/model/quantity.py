"""Kubernetes resource quantities ("8", "64Gi", "500m", "1e3") read as plain numbers.

Pure parsing only; an unreadable quantity is None, never an exception.
"""

from __future__ import annotations

import math
import re
from types import MappingProxyType

_QUANTITY = re.compile(
    r"^(?P<num>[+-]?(?:\d+(?:\.\d*)?|\.\d+))(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$", re.ASCII
)
"""ASCII digits only (text/parse's rule): a str pattern's `\\d` is any Unicode digit, and float() reads them, so a
Node's `８` GPUs or `１２Gi` was 8 and 12 GiB to rlark and no quantity to Kubernetes."""
_SUFFIX = MappingProxyType({
    "": 1.0,
    "n": 1e-9, "u": 1e-6, "m": 1e-3,
    "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
    "Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50, "Ei": 2.0**60,
})


QUANTITY_BOUND = 2.0**63
"""The largest amount read (no machine has more of anything): the sum or difference of two doubles may be inf
(1.7e308 allocatable and -1.7e308 used), and what is derived from amounts (free, reserved, a cluster's GPUs) is
added and subtracted, then shown with int() or round(), which raise on inf."""


def parse_quantity(value: object) -> float | None:
    """The numeric value of a quantity (int, float or string), or None when it is not one or its size passes
    QUANTITY_BOUND."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        try:
            number = float(value)
        except OverflowError:  # an int past a float's range
            return None
        return _bounded(number)
    if not isinstance(value, str):
        return None
    match = _QUANTITY.match(value.strip())
    if not match:
        return None
    suffix = match.group("suffix") or ""
    try:
        if suffix in _SUFFIX:  # `E` (exa) and `Ei` (exbi) too, not an exponent
            number = float(match.group("num")) * _SUFFIX[suffix]
        else:
            number = float(match.group("num") + suffix)
    except OverflowError:
        return None
    return _bounded(number)


def _bounded(number: float) -> float | None:
    return number if math.isfinite(number) and abs(number) <= QUANTITY_BOUND else None


def size_text(count: int) -> str:
    """A byte count as a bound is said to the user: `512 MiB`, `64 KiB`, `1,000 bytes`."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if count >= size and count % size == 0:
            return f"{count // size} {unit}"
    return f"{count:,} bytes"
