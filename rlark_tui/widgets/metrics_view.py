"""MetricsView: the Metrics tab's curves (textual-plotext) of one Job, or of several marked Jobs overlaid
(compare: one colour per Job, a legend), with a tag list and its filter, EMA smoothing, x by step or wall time,
last/min/max per tag, and a line saying where the numbers come from and how old they are.

It only draws what it is given (`show(runs, now)`); fetching and parsing happen in the reconciler's threads.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Input, SelectionList, Static
from textual_plotext import PlotextPlot

from rlark_tui.telemetry.curves import MetricsState, default_tags, elapsed, number, stats, xy
from rlark_tui.telemetry.steptime import TREND_STEPS, bars, legend_letters, step_time_cell
from rlark_tui.text.sanitize import clean
from rlark_tui.text.sinks import one_line

COLORS = ("cyan", "orange", "green", "magenta", "yellow", "blue", "red", "white")
SMOOTHING_STEPS = (0.0, 0.3, 0.6, 0.8, 0.9, 0.95, 0.99)
SOURCE_NAMES = MappingProxyType({"tensorboard": "TensorBoard via the gateway", "log": "the Header log"})


TAG_CHARS = 120
"""The most characters of a tag shown (the list, the legend, the stats line): a tag is the Job's text, and 256
tags of 30,000 characters (TensorBoard's 8 MB answer allows them) laid out 3 s of the UI thread at every poll."""


def tag_text(tag: str) -> str:
    """A tag on its one line, cut at TAG_CHARS."""
    return one_line(tag if len(tag) <= TAG_CHARS else tag[:TAG_CHARS] + "…")


@dataclass(frozen=True)
class Run:
    """One Job's metrics as the view draws them; `state` None means not read yet."""
    job: str
    state: MetricsState | None


class MetricsView(Vertical):
    """The tab's body. Keys while it has focus: `t` x axis step/wall time, `<` `>` smoothing, `/` tag filter,
    `b` the Time view (where each step's time goes: stacked bars per step, the bottleneck and its trend)."""

    BINDINGS = [
        Binding("t", "toggle_x", "x: step/time"),
        Binding("less_than_sign", "smoothing(-1)", "Less smoothing", key_display="<"),
        Binding("greater_than_sign", "smoothing(1)", "More smoothing", key_display=">"),
        Binding("slash", "filter", "Filter tags", key_display="/"),
        Binding("b", "toggle_time", "Step time"),
    ]

    def __init__(self, *, id: str | None = None, compare: bool = False) -> None:  # noqa: A002 (Textual's name)
        super().__init__(id=id)
        self.compare = compare
        self.runs: list[Run] = []
        self.now = 0.0
        self.by = "step"
        self.smoothing = 0.6
        self._tags: list[str] = []
        self._chosen: set[str] | None = None
        self._drawn: tuple | None = None
        self.time_view = False

    def compose(self) -> ComposeResult:
        yield Static("", id="metrics-status", markup=False)
        with Horizontal(id="metrics-body"):
            with Vertical(id="metrics-side"):
                yield Input(placeholder="filter tags", id="metrics-filter")
                yield SelectionList[str](id="metrics-tags")
            yield PlotextPlot(id="metrics-plot")
            yield Static("", id="metrics-time", markup=False)
        yield Static("", id="metrics-stats", markup=False)

    # -- input ------------------------------------------------------------------------------------------------

    def show(self, runs: list[Run], now: float) -> None:
        """Draw these runs (called on each Snapshot with the reconciler's results); cheap when nothing changed."""
        self.runs, self.now = runs, now
        tags = sorted({tag for run in runs if run.state and run.state.result
                       for tag in run.state.result.series})
        if tags != self._tags:
            self._tags = tags
            self._fill_tags()
        self._draw()

    @property
    def chosen(self) -> list[str]:
        if self._chosen is None:
            return default_tags(self._tags)
        return [t for t in self._tags if t in self._chosen]

    def _fill_tags(self) -> None:
        needle = self.query_one("#metrics-filter", Input).value.strip().lower()
        chosen = set(self.chosen)
        shown = [t for t in self._tags if needle in t.lower()]
        tags = self.query_one("#metrics-tags", SelectionList)
        with self.prevent(SelectionList.SelectedChanged):
            tags.clear_options()
            tags.add_options([(Text(tag_text(t)), t, t in chosen) for t in shown])  # a tag is the Job's text: never markup

    @on(Input.Changed, "#metrics-filter")
    def _filter_changed(self) -> None:
        self._fill_tags()

    @on(SelectionList.SelectedChanged, "#metrics-tags")
    def _selection_changed(self, event: SelectionList.SelectedChanged) -> None:
        needle = self.query_one("#metrics-filter", Input).value.strip().lower()
        hidden = {t for t in self.chosen if needle not in t.lower()}
        self._chosen = hidden | set(event.selection_list.selected)
        self._draw()

    def action_toggle_x(self) -> None:
        self.by = "wall" if self.by == "step" else "step"
        self._draw()

    def action_smoothing(self, direction: int) -> None:
        index = min(range(len(SMOOTHING_STEPS)), key=lambda i: abs(SMOOTHING_STEPS[i] - self.smoothing))
        self.smoothing = SMOOTHING_STEPS[max(0, min(len(SMOOTHING_STEPS) - 1, index + direction))]
        self._draw()

    def action_toggle_time(self) -> None:
        self.time_view = not self.time_view
        self._draw()

    def action_filter(self) -> None:
        self.query_one("#metrics-filter", Input).focus()

    # -- drawing ----------------------------------------------------------------------------------------------

    def _status(self) -> str:
        parts = []
        for run in self.runs:
            label = f"{one_line(run.job)}: " if len(self.runs) > 1 else ""
            state = run.state
            if state is None:
                parts.append(f"{label}reading…")
                continue
            result = state.result
            if result is None:
                parts.append(f"{label}no numbers: {one_line(state.error) or 'nothing read yet'}")
                continue
            text = f"{label}from {one_line(SOURCE_NAMES.get(result.source, result.source))}, " \
                   f"{elapsed(self.now - result.fetched_at)} old"
            if state.error:
                text += f" (latest read failed: {one_line(state.error)})"
            if result.note:
                text += f"; {one_line(result.note)}"
            parts.append(text)
        if self.time_view:
            parts.append("step time: seconds per step by phase (b: curves)")
        else:
            axis = "step" if self.by == "step" else "wall time (s)"
            parts.append(f"x: {axis} (t) · smoothing {self.smoothing:g} (< >)")
        return " · ".join(parts) if len(self.runs) <= 1 else "\n".join(parts)

    def _draw(self) -> None:
        chosen = self.chosen
        key = (tuple((r.job, id(r.state)) for r in self.runs), tuple(chosen), self.by, self.smoothing,
               int(self.now) // 5, self.time_view, self.size)
        if key == self._drawn:
            return
        self._drawn = key
        self.query_one("#metrics-status", Static).update(self._status())
        plot, time_view = self.query_one("#metrics-plot", PlotextPlot), self.query_one("#metrics-time", Static)
        plot.display, time_view.display = not self.time_view, self.time_view
        if self.time_view:
            self._draw_time(time_view)
            return
        plt = plot.plt
        plt.clear_data()
        plt.clear_figure()
        lines, drawn = [], 0
        for r_index, run in enumerate(self.runs):
            result = run.state.result if run.state else None
            if result is None:
                continue
            for t_index, tag in enumerate(chosen):
                points = result.series.get(tag)
                if points is None:
                    if self.compare:
                        lines.append(f"{one_line(run.job)}  {tag_text(tag)}: no such tag")
                    continue
                xs, ys = xy(points, self.by, self.smoothing)
                color = COLORS[(r_index if self.compare else t_index) % len(COLORS)]
                # the legend's label too: plotext's drawing is read back as ANSI, where a name's OSC 8 was a link
                label = one_line(run.job) if self.compare and len(chosen) == 1 else (
                    f"{one_line(run.job)} {tag_text(tag)}" if self.compare else tag_text(tag))
                if xs:
                    plt.plot(xs, ys, label=label, color=color, marker="braille")
                    drawn += 1
                s = stats(points)
                bad = (f"  ({s.bad} NaN/inf left out)" if s.bad else "") + \
                    (f"  ({s.off} too large or small to plot left out)" if s.off else "")
                lines.append(f"{label}: last {number(s.last)}  min {number(s.low)}  max {number(s.high)}  "
                             f"{s.points} pts{bad}")
        plt.xlabel("step" if self.by == "step" else "seconds since the first point")
        if not drawn:
            plt.title(self._empty_reason(chosen))
        plot.refresh()
        self.query_one("#metrics-stats", Static).update("\n".join(lines) or " ")

    def _draw_time(self, view: Static) -> None:
        """The Time view: per Job, the last steps as stacked bars (one letter per phase) and the bottleneck."""
        body = self.query_one("#metrics-body")
        width = max(20, body.size.width - self.query_one("#metrics-side").size.width)
        height = max(3, body.size.height)
        lines, stats_lines = [], []
        for run in self.runs:
            step_time = run.state.step_time if run.state else None
            label = f"{one_line(run.job)}: " if len(self.runs) > 1 else ""
            if step_time is None or not step_time.steps:
                stats_lines.append(f"{label}no step times yet (RLinf's time/* rows or the tqdm step_time)")
                continue
            rows = max(1, height // len(self.runs) - 2)
            if len(self.runs) > 1:
                lines.append(one_line(run.job))
            lines += bars(step_time, width, rows)
            phases = sorted({p for step in step_time.steps for p in step.phases})
            letters = legend_letters(sorted(phases, key=lambda p: (p != (
                step_time.bottleneck.phase if step_time.bottleneck else None), p)))
            lines.append("  ".join(f"{letters[p]}={one_line(p)}" for p in letters))
            if step_time.bottleneck is not None:
                b = step_time.bottleneck
                stats_lines.append(f"{label}{step_time_cell(step_time)} · bottleneck {one_line(b.phase)} {b.share:.0%}, {b.trend} over "
                                   f"the last {min(len(step_time.steps), TREND_STEPS)} steps "
                                   f"({b.change * 100:+.0f} points)")
        # phase names come from the run's log: shown as plain text, without control characters
        view.update(clean("\n".join(lines)) or "no step times yet")
        self.query_one("#metrics-stats", Static).update(clean("\n".join(stats_lines)) or " ")

    def _empty_reason(self, chosen: list[str]) -> str:
        if not any(run.state and run.state.result for run in self.runs):
            return "no numbers yet"
        if not self._tags:
            return "the run has no scalars yet"
        if not chosen:
            return "no tag chosen"
        return "no finite values for the chosen tags"
