"""GPU use by role (issue 35 item 2): per role of a Job, its Pods' GPU utilisation and memory (min/mean/max over
the role's GPUs), and a note when one role's mean utilisation is IMBALANCE_POINTS or more above another's, naming
RLinf's `cluster.component_placement` where the run printed it. Pure: samples in, rows and a sentence out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rlark_tui.telemetry.sample import GPU_MEM_USED, GPU_UTIL, GPUS, PodUsage
from rlark_tui.telemetry.usage import NONE
from rlark_tui.text.sinks import one_line

IMBALANCE_POINTS = 70.0


@dataclass(frozen=True, slots=True)
class Spread:
    low: float
    mean: float
    high: float


@dataclass(frozen=True, slots=True)
class RoleUse:
    role: str
    pods: int
    gpus: int
    util: Spread | None
    """Percent, over the role's GPUs; None when no GPU numbers were read."""
    memory: Spread | None
    """MiB used per GPU."""


def _spread(values: Sequence[float]) -> Spread | None:
    return Spread(min(values), sum(values) / len(values), max(values)) if values else None


def by_role(pods: Mapping[str, Sequence[PodUsage | None]]) -> list[RoleUse]:
    """`pods`: role name -> the samples of its Running Pods (None for a Pod not sampled), in role order."""
    rows = []
    for role, samples in pods.items():
        gpus = [gpu for sample in samples if sample is not None and sample[GPUS] for gpu in sample[GPUS] or ()]
        rows.append(RoleUse(role, len(samples), len(gpus), _spread([g[GPU_UTIL] for g in gpus]),
                            _spread([g[GPU_MEM_USED] for g in gpus])))
    return rows


def spread_cell(value: Spread | None, unit: str, scale: float = 1.0) -> str:
    """`4/10/20%`: min/mean/max (each divided by `scale`), `-` when nothing was read."""
    return NONE if value is None else f"{value.low / scale:.0f}/{value.mean / scale:.0f}/{value.high / scale:.0f}{unit}"


def util_cell(row: RoleUse) -> str:
    return spread_cell(row.util, "%")


def memory_cell(row: RoleUse) -> str:
    """GiB used per GPU (the samples are MiB)."""
    return spread_cell(row.memory, "Gi", 1024)


def placement_text(placement: object, chars: int | None = None) -> str:
    """RLinf's `cluster.component_placement` in one line: `actor 0-3, rollout 4-7` (a mapping of component to a
    rank expression, or to `{placement: …}` in the node-group form). With `chars`, the components past the first
    that take it over `chars` characters are left out: the caller cuts the line there, and a placement is the
    Job's text (100,000 components were a line of 1.1 MB, laid out and scanned for one note)."""
    if not isinstance(placement, Mapping):
        return ""
    parts: list[str] = []
    length = -2
    for component, where in placement.items():
        if chars is not None and length > chars:
            break
        value = where.get("placement") if isinstance(where, Mapping) else where
        if isinstance(value, (str, int)) and not isinstance(value, bool):
            parts.append(f"{component} {value}")
            length += len(parts[-1]) + 2
    return ", ".join(parts)


NOTE_CHARS = 300
"""The imbalance note is cut here: it quotes the roles' names and RLinf's placement, the Job's text."""


def imbalance(rows: Sequence[RoleUse], placement: object = None) -> str | None:
    """`rollout GPUs at 4 % while actor at 93 %` when the busiest role's mean is IMBALANCE_POINTS above the
    idlest's; with the placement RLinf printed, if any. One line (sinks.one_line) of at most NOTE_CHARS."""
    measured = [(row.role, row.util.mean) for row in rows if row.util is not None]
    if len(measured) < 2:
        return None
    idle, idle_mean = min(measured, key=lambda role_mean: role_mean[1])
    busy, busy_mean = max(measured, key=lambda role_mean: role_mean[1])
    if busy_mean - idle_mean < IMBALANCE_POINTS:
        return None
    note = f"{idle} GPUs at {idle_mean:.0f} % while {busy} at {busy_mean:.0f} %"
    where = placement_text(placement, NOTE_CHARS)  # what the cut below leaves shown, and one more component
    note = one_line(note + (f" (placement: {where})" if where else ""))
    return note if len(note) <= NOTE_CHARS else note[:NOTE_CHARS - 1] + "…"
