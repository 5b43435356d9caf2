"""Numbers in cluster text, read by total functions: ASCII digits only, with a length bound.

`str.isdigit` passes `²` and other Unicode digits that `int` refuses, and `int` raises past 4,300 digits: a
hostile nvidia-smi row or RLinf table row read with them stops the read of every Job. These answer None.
"""

from __future__ import annotations

import math
import re

MAX_DIGITS = 18
"""The longest integer read (a step, a GPU index, a count): past it the text is not a number rlark shows."""
MAX_NUMBER_CHARS = 40

_INT = re.compile(rf"[0-9]{{1,{MAX_DIGITS}}}", re.ASCII)
_FLOAT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]{1,3})?", re.ASCII)


def ascii_int(text: str) -> int | None:
    """A non-negative integer of ASCII digits (at most MAX_DIGITS of them), else None."""
    return int(text) if _INT.fullmatch(text) else None


def ascii_float(text: str) -> float | None:
    """A finite decimal number in ASCII (at most MAX_NUMBER_CHARS long), else None."""
    if len(text) > MAX_NUMBER_CHARS or not _FLOAT.fullmatch(text):
        return None
    value = float(text)
    return value if math.isfinite(value) else None
