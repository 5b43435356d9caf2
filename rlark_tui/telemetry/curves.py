"""Scalar curves of one or more Jobs as the Metrics tab and `rlark metrics` show them: the fetched series
(`MetricsResult`), TensorBoard's debiased EMA smoothing, per-tag last/min/max, and plot-ready x/y lists.

Pure: numbers in, numbers and short texts out.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

from rlark_tui.telemetry.progress import Point, finite
from rlark_tui.telemetry.steptime import StepTime


@dataclass
class MetricsResult:
    """A Job's series from one source: tensorboard or log; `note` says why the log was used or what was odd."""
    job: str
    source: str
    series: dict[str, list[Point]]
    fetched_at: float = field(default_factory=time.time)
    note: str = ""
    thinned: bool = False

    def to_json(self) -> dict:
        return {"job": self.job, "source": self.source,
                "series": {tag: [[_json_number(w), s, _json_number(v)] for w, s, v in points]
                           for tag, points in self.series.items()}}


@dataclass(frozen=True)
class MetricsState:
    """What the reconciler last got for a Job's Metrics: the newest good result (kept through a failed read)
    and the error of the latest read, if it failed; `step_time`, where that result's step time goes (derived on
    the reconciler's thread, not the UI's)."""
    result: MetricsResult | None = None
    error: str = ""
    step_time: StepTime | None = None


@dataclass(frozen=True)
class Stats:
    last: float | None
    low: float | None
    high: float | None
    points: int
    bad: int
    """NaN or inf values (left out of the plot and of min/max)."""
    off: int = 0
    """Finite values the plot cannot scale (plottable), left out of it but not of last/min/max."""


PLOT_BOUND = 1e100
"""The largest magnitude a plotted x or y may have, and its inverse the smallest but 0: plotext scales an axis by
its range, and 1.7e308 with -1.7e308 make it inf (ValueError), a subnormal such as 5e-324 OverflowError, while
the Metrics tab was drawn (a crash of the TUI)."""


def plottable(value: float) -> bool:
    return math.isfinite(value) and (value == 0 or 1 / PLOT_BOUND <= abs(value) <= PLOT_BOUND)


def _json_number(value: float) -> float | None:
    return value if math.isfinite(value) else None


def ema(values: list[float], weight: float) -> list[float]:
    """TensorBoard's smoothing slider: an exponential moving average debiased for its start; NaN/inf pass."""
    if weight <= 0:
        return list(values)
    out, last, count = [], 0.0, 0
    for value in values:
        if not math.isfinite(value):
            out.append(value)
            continue
        last = last * weight + (1 - weight) * value
        count += 1
        out.append(last / (1 - weight ** count))
    return out


def stats(points: list[Point]) -> Stats:
    real = finite(points)
    good = [p[2] for p in real]
    return Stats(good[-1] if good else None, min(good) if good else None, max(good) if good else None,
                 len(points), len(points) - len(good), len(real) - len(_plotted(real)))


def _plotted(points: list[Point]) -> list[Point]:
    """The points whose wall time, step and value the plot can scale (plottable)."""
    return [p for p in points if plottable(p[2]) and plottable(float(p[1])) and plottable(p[0])]


def xy(points: list[Point], by: str, weight: float) -> tuple[list[float], list[float]]:
    """x (step, or seconds since the first point for `wall`) and smoothed y of the points the plot can scale
    (_plotted: no NaN, inf, nor a magnitude past PLOT_BOUND or under its inverse)."""
    good = _plotted(finite(points))
    if not good:
        return [], []
    if by == "wall":
        start = good[0][0]
        xs = [p[0] - start for p in good]
    else:
        xs = [float(p[1]) for p in good]
    return xs, ema([p[2] for p in good], weight)


def number(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def elapsed(seconds: float) -> str:
    """A short elapsed time: 45s, 12m."""
    seconds = max(0, int(seconds))
    return f"{seconds}s" if seconds < 120 else f"{seconds // 60}m"


def default_tags(tags: list[str]) -> list[str]:
    """The tag shown first: a reward curve when there is one, else the first tag."""
    rewards = [t for t in tags if "reward" in t]
    return rewards[:1] or tags[:1]
