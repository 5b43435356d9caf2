"""The alert rules' thresholds: the config file's `alerts:` section and the `rlark watch` flags.

Pure and light (no other rlark module): the config file is read by every command, and alerting/rules.py, which
uses these, loads the log, progress and Pod-state rules as well.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any


@dataclass(frozen=True)
class Thresholds:
    """The `alerts:` section of the config file; each also a `rlark watch` flag (FLAGS)."""

    start_seconds: float = 900.0
    unschedulable_seconds: float = 120.0
    stall_factor: float = 3.0
    stall_min_seconds: float = 300.0
    gpu_idle_percent: float = 5.0
    gpu_idle_seconds: float = 600.0
    ray_missing_seconds: float = 60.0
    source_seconds: float = 60.0
    bell: bool = True
    """Ring the terminal bell on a new warning or critical alert (the TUI)."""
    notify: bool = False
    """Also send an OSC 9 / OSC 777 desktop notification (terminals that show them)."""


NUMBER_KEYS = tuple(name for name, kind in Thresholds.__annotations__.items() if kind == "float")
BOOL_KEYS = ("bell", "notify")
FLAGS: Mapping[str, str] = MappingProxyType({name: "--" + name.replace("_", "-") for name in NUMBER_KEYS})
"""Config key -> `rlark watch` flag: `stall_min_seconds` -> `--stall-min-seconds`."""


def thresholds_from(section: object, where: str = "alerts") -> Thresholds:
    """Thresholds from the config file's `alerts:` mapping (`-` may stand for `_`); ValueError in one line."""
    if section is None:
        return Thresholds()
    if not isinstance(section, Mapping):
        raise ValueError(f"`{where}` must be a mapping")
    # field name -> a float or a bool, each checked below against its field's kind (Any: mypy cannot tie a value's
    # type to a key known only at run time)
    values: dict[str, Any] = {}
    for raw_key, value in section.items():
        name = str(raw_key).replace("-", "_")
        if name in BOOL_KEYS:
            if not isinstance(value, bool):
                raise ValueError(f"`{where}.{raw_key}` must be true or false")
        elif name in NUMBER_KEYS:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1e9:
                raise ValueError(f"`{where}.{raw_key}` must be a number of 0 or more")
            value = float(value)
        else:
            raise ValueError(f"`{where}.{raw_key}` is not an alert setting (known: "
                             f"{', '.join(NUMBER_KEYS + BOOL_KEYS)})")
        values[name] = value
    return Thresholds(**values)
