"""Where a step's time goes: RLinf's `time/*` metrics per step, each phase's seconds and share of the step, the
bottleneck phase and its trend (rlinf-runtime.md §2.4).

The series come from whichever source the Metrics tab reads (telemetry.progress.metric_series, TensorBoard's
scalars): the embodied table's Time section (`time/step`, `time/generate_rollouts`, `time/actor_training`, …) or a
reasoning runner's tqdm postfix (`step_time`, `rollout_time`, `actor/training_time`). Pure: series in, numbers out.
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from rlark_tui.text.sanitize import clean
from rlark_tui.text.sinks import one_line

Point = tuple[float, int, float]

TABLE_TOTAL = "time/step"
TQDM_TOTAL = "step_time"
TREND_STEPS = 20
INF = float("inf")
# a share that moves by less than this (2 points) over the trend window is steady
TREND_THRESHOLD = 0.02
PHASE_CHARS = 48
"""A phase's name is cut here: it is the tag's, the Job's code's to name, and heads a column and a legend."""


class Step(NamedTuple):
    step: int
    total: float
    phases: Mapping[str, float]

    def share(self, phase: str) -> float:
        """The phase's part of the step, at most all of it: a phase past its step (clocks apart, or a Job's log that
        says 1.5 s of a 1e-300 s step) counts as the whole step, as the bars draw it (a share of 1.5e300 was a
        300-digit percentage in the STEP TIME cell)."""
        return min(self.phases.get(phase, 0.0) / self.total, 1.0) if self.total > 0 else 0.0


@dataclass(frozen=True, slots=True)
class Bottleneck:
    phase: str
    share: float
    trend: str
    """rising, falling or steady: the bottleneck's share over the last TREND_STEPS steps."""
    change: float
    """How much the share moved over that window (least-squares slope times the window's steps)."""


@dataclass(frozen=True, slots=True)
class StepTime:
    steps: Sequence[Step]
    bottleneck: Bottleneck | None

    def to_json(self, job: str) -> dict:
        bottleneck = self.bottleneck
        return {"job": job,
                "steps": [{"step": s.step, "total": s.total, "phases": dict(s.phases)} for s in self.steps],
                "bottleneck": None if bottleneck is None else
                {"phase": bottleneck.phase, "share": round(bottleneck.share, 4), "trend": bottleneck.trend}}


def phase_of(tag: str) -> str | None:
    """The phase a `time/*` tag or a tqdm `*_time` postfix names (`actor/training_time` -> actor_training), on one
    line (sinks.one_line: a line break or bidi control as its escape) of at most PHASE_CHARS; None for the step's
    total and for tags that are not times."""
    if tag in (TABLE_TOTAL, TQDM_TOTAL):
        return None
    if tag.startswith("time/"):
        name = tag[len("time/"):]
    elif tag.endswith("_time"):
        name = tag[:-len("_time")]
    else:
        return None
    name = one_line(name.replace("/", "_"))
    return (name if len(name) <= PHASE_CHARS else name[:PHASE_CHARS - 1] + "…") or None


def breakdown(series: Mapping[str, Sequence[Point]]) -> StepTime:
    """Per step: the total (`time/step`, else `step_time`, else the sum of the phases) and every phase's
    seconds; the bottleneck is the phase with the largest share at the last step. NaN, infinite and negative
    values are left out, and so is a step whose phases sum past any number or whose share of a phase is no
    number (1e308 seconds over 5e-324)."""
    totals: dict[int, float] = {}
    for tag in (TQDM_TOTAL, TABLE_TOTAL):  # the table's total wins where both exist
        totals.update({step: value for _, step, value in series.get(tag, ()) if 0 <= value < INF})
    by_phase: dict[str, dict[int, float]] = {}
    for tag, points in series.items():
        phase = phase_of(tag)
        if phase is not None:
            by_phase.setdefault(phase, {}).update(
                {step: value for _, step, value in points if 0 <= value < INF})
    steps = []
    for step in sorted(totals.keys() | {step for values in by_phase.values() for step in values}):
        phases = {phase: values[step] for phase, values in by_phase.items() if step in values}
        total = totals.get(step) or sum(phases.values())
        if 0 < total < INF and all(value / total < INF for value in phases.values()):
            steps.append(Step(step, total, phases))
    return StepTime(steps, _bottleneck(steps))


def _bottleneck(steps: list[Step]) -> Bottleneck | None:
    if not steps or not steps[-1].phases:
        return None
    last = steps[-1]
    phase = max(sorted(last.phases), key=last.share)
    window = [step.share(phase) for step in steps[-TREND_STEPS:]]
    change = _slope(window) * (len(window) - 1)
    trend = "rising" if change > TREND_THRESHOLD else "falling" if change < -TREND_THRESHOLD else "steady"
    return Bottleneck(phase, last.share(phase), trend, change)


def _slope(values: list[float]) -> float:
    n = len(values)
    if n < 2:
        return 0.0
    mean_x, mean_y = (n - 1) / 2, sum(values) / n
    spread = sum((x - mean_x) ** 2 for x in range(n))
    return sum((x - mean_x) * (y - mean_y) for x, y in enumerate(values)) / spread


def seconds(value: float) -> str:
    """`342 s`, `4.5 s`; past a billion seconds in exponent form (`1e+308 s`, not 309 digits)."""
    return f"{value:.3g} s" if value >= 1e9 else f"{value:.0f} s" if value >= 10 else f"{value:.1f} s"


def step_time_cell(step_time: StepTime | None) -> str:
    """The STEP TIME cell of `get jobs -o wide` and the Job detail's header: the last step's total and the
    bottleneck phase's share of it, `342 s/step, actor_training 54%`; `-` without time metrics. The phase name
    comes from the run's log: one line, no control characters."""
    if step_time is None or not step_time.steps:
        return "-"
    text = f"{seconds(step_time.steps[-1].total)}/step"
    if step_time.bottleneck is not None:
        text += f", {step_time.bottleneck.phase} {step_time.bottleneck.share:.0%}"
    return clean(text)


def bars(step_time: StepTime, width: int, last: int) -> list[str]:
    """The Time view's stacked bars, one line per step (the last `last` steps): `step  total  bar`, each phase
    drawn with its own letter (the legend's), in order of the bottleneck first. Readable in monochrome."""
    steps = list(step_time.steps)[-last:]
    if not steps:
        return []
    order = sorted({phase for step in steps for phase in step.phases},
                   key=lambda p: (p != (step_time.bottleneck.phase if step_time.bottleneck else None), p))
    letters = legend_letters(order)
    longest = max(step.total for step in steps)
    label_width = len(str(steps[-1].step)) + 1 + 8
    room = max(10, width - label_width - 1)
    lines = []
    for step in steps:
        cells = round(room * (step.total / longest))
        bar = ""
        for phase in order:
            bar += letters[phase] * round(cells * step.share(phase))
        bar = bar[:cells].ljust(cells, ".")
        lines.append(f"{step.step:>{len(str(steps[-1].step))}} {seconds(step.total):>8} {bar}")
    return lines


def table_cells(step_time: StepTime, phases: Sequence[str], last: int) -> list[list[str]]:
    """`rlark metrics --time`'s rows under STEP, TOTAL and `phases`: each of the last `last` steps' number, total and
    each phase's seconds and share, every time as the bars say it (`seconds`: a Job's 1e308 s was a 309-digit cell)."""
    return [[str(step.step), seconds(step.total),
             *(f"{seconds(step.phases[p])} {step.share(p):4.0%}" if p in step.phases else "-" for p in phases)]
            for step in list(step_time.steps)[-last:]]


def legend_letters(phases: Sequence[str]) -> dict[str, str]:
    """A distinct letter per phase: its first free letter, else a digit."""
    taken: dict[str, str] = {}
    for phase in phases:
        choice = next((c for c in phase.upper() if c in string.ascii_uppercase and c not in taken.values()), None)
        taken[phase] = choice or str(len(taken) % 10)
    return taken
