"""The Metrics view with fixed data (no cluster): curves, tag list and filter, smoothing, x axis, the source and
age line, compare with a legend, and the bad inputs (nothing read, an error, NaN/inf, no such tag) as states.
SVG snapshots of the tab at 80x24 and of compare."""

from __future__ import annotations

import math

from textual.app import App, ComposeResult
from textual.widgets import Input, SelectionList, Static

from rlark_tui.local.resources import stylesheet
from rlark_tui.telemetry.curves import MetricsResult, MetricsState, ema
from rlark_tui.widgets.metrics_view import TAG_CHARS, MetricsView, Run
from tests.pilot import drawn

NOW = 1_000_000.0


def result(job: str, scale: float = 1.0, source: str = "tensorboard", note: str = "", nan: bool = False):
    series = {
        "rollout/rewards": [(NOW - 100 + s, s, scale * math.tanh(s / 10) + (0.05 if s % 2 else -0.05))
                            for s in range(1, 41)],
        "train/actor/policy_loss": [(NOW - 100 + s, s, (float("nan") if nan and s == 5 else 1 / s))
                                    for s in range(1, 41)],
        "time/step": [(NOW - 100 + s, s, 1.0) for s in range(1, 41)],
    }
    return MetricsResult(job, source, series, fetched_at=NOW - 12, note=note)


class ViewApp(App):
    CSS_PATH = [stylesheet("app.tcss"), stylesheet("metrics.tcss")]

    def __init__(self, runs, compare=False):
        super().__init__()
        self.runs, self.compare = runs, compare

    def compose(self) -> ComposeResult:
        yield MetricsView(id="metrics", compare=self.compare)

    def on_mount(self) -> None:
        self.query_one(MetricsView).show(self.runs, NOW)
        for field in self.query(Input):
            field.cursor_blink = False   # a snapshot on a loaded machine must not catch the cursor blinked off


def text(app, selector: str) -> str:
    return str(app.query_one(selector, Static).render())


def test_ema_is_tensorboards_debiased_average():
    assert ema([1.0, 1.0, 1.0], 0.9) == [1.0, 1.0, 1.0]
    smoothed = ema([0.0, 10.0, float("nan"), 10.0], 0.5)
    assert smoothed[0] == 0.0 and math.isclose(smoothed[1], 5 / 0.75) and math.isnan(smoothed[2])
    assert ema([3.0, 4.0], 0.0) == [3.0, 4.0]


async def test_one_job_source_age_tags_and_stats():
    app = ViewApp([Run("demo-ppo", MetricsState(result("demo-ppo")))])
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        view = app.query_one(MetricsView)
        assert "from TensorBoard via the gateway, 12s old" in text(app, "#metrics-status")
        assert view.chosen == ["rollout/rewards"]
        assert "rollout/rewards: last 0.9493  min 0.1474  max 1.049  40 pts" in text(app, "#metrics-stats")
        tags = app.query_one("#metrics-tags", SelectionList)
        assert tags.option_count == 3
        tags.focus()
        await pilot.press("slash")
        await pilot.press(*"loss")
        await pilot.pause()
        assert tags.option_count == 1
        tags.select("train/actor/policy_loss")
        await pilot.pause()
        assert view.chosen == ["rollout/rewards", "train/actor/policy_loss"]  # the filtered-out choice stays
        assert "train/actor/policy_loss: last 0.025" in text(app, "#metrics-stats")
        tags.focus()
        await pilot.press("t", "greater_than_sign")
        assert view.by == "wall" and view.smoothing == 0.8
        assert "wall time" in text(app, "#metrics-status")


async def test_a_tag_from_the_cluster_is_shown_as_plain_text_on_its_line():
    # a TensorBoard tag is whatever the Job's code logged: '[@click=app.quit]' in one was an action in the tag list
    # (Textual's markup), and a line break forged a line under the stats
    hostile = "[b]x[/b] [@click=app.quit]quit[/]\nrollout/rewards: last 99  min 99  max 99  1 pts"
    series = {hostile: [(NOW - 1, 1, 0.5)], "time/step": [(NOW - 1, 1, 1.0)]}
    app = ViewApp([Run("demo-ppo", MetricsState(MetricsResult("demo-ppo", "tensorboard", series,
                                                               fetched_at=NOW)))])
    async with app.run_test(size=(120, 24)) as pilot:
        await drawn(pilot)
        tags = app.query_one("#metrics-tags", SelectionList)
        tags.select(hostile)
        await drawn(pilot)
        rendered = [tags.render_line(y) for y in range(tags.option_count)]
        assert rendered[0].text.startswith("▐X▌ [b]x[/b] [@click="), [r.text for r in rendered]
        assert str(tags.get_option_at_index(0).prompt).startswith("[b]x[/b] [@click=app.quit]quit[/]\\nrollout")
        assert not [s.style.meta for line in rendered for s in line if s.style and "@click" in s.style.meta]
        stats = text(app, "#metrics-stats")
        assert "\n" not in stats and stats.startswith("[b]x[/b] [@click=app.quit]quit[/]\\nrollout/rewards"), stats


async def test_bad_inputs_are_states():
    runs = [Run("empty", MetricsState(MetricsResult("empty", "log", {}, fetched_at=NOW)))]
    app = ViewApp(runs)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        view = app.query_one(MetricsView)
        assert view._empty_reason(view.chosen) == "the run has no scalars yet"
        view.show([Run("bad", MetricsState(None, "TensorBoard via the gateway answered HTML, not data"))], NOW)
        await pilot.pause()
        assert "no numbers: TensorBoard via the gateway answered HTML" in text(app, "#metrics-status")
        view.show([Run("nan", MetricsState(result("nan", nan=True), "timed out"))], NOW)
        view._chosen = {"train/actor/policy_loss"}
        view._draw()
        await pilot.pause()
        assert "(1 NaN/inf left out)" in text(app, "#metrics-stats")
        assert "latest read failed: timed out" in text(app, "#metrics-status")
        view.show([Run("slow", None)], NOW)
        await pilot.pause()
        assert "reading…" in text(app, "#metrics-status")


async def test_numbers_a_plot_cannot_scale_are_left_out_of_it_not_a_crash():
    """Issue 33, a ninth round, a hostile Job's TensorBoard or log: values that are finite but past what the plot
    can scale (1.7e308 and -1.7e308: their range is inf; 5e-324: a subnormal) raised ValueError and OverflowError
    in plotext while the Metrics tab was drawn, and the TUI ended in a crash report. They are left out of the plot
    and counted, the rest drawn; last/min/max still say them."""
    series = {"loss": [(NOW - 50 + s, s, (1.7e308 if s % 2 else -1.7e308) if s < 10 else 5e-324 * s if s < 20
                        else float(s)) for s in range(1, 31)],
              "wall": [(-1.7e308, 1, 1.0), (1.7e308, 2, 2.0), (NOW, 3, 3.0)]}
    app = ViewApp([Run("huge", MetricsState(MetricsResult("huge", "tensorboard", series, fetched_at=NOW)))])
    async with app.run_test(size=(80, 24)) as pilot:
        view = app.query_one(MetricsView)
        for by, tag in (("step", "loss"), ("wall", "loss"), ("wall", "wall")):
            view.by, view._chosen = by, {tag}
            view._draw()
            await drawn(pilot)
            assert app.return_code is None and app.is_running
        assert "wall: last 3  min 1  max 3  3 pts  (2 too large or small to plot left out)" in text(app, "#metrics-stats")
        view.by, view._chosen = "step", {"loss"}
        view._draw()
        await drawn(pilot)
        assert "loss: last 30  min -1.7e+308  max 1.7e+308  30 pts  (19 too large or small to plot left out)" in \
            text(app, "#metrics-stats"), text(app, "#metrics-stats")


async def test_a_tag_of_30000_characters_is_shown_cut():
    """Issue 33, a ninth round: a tag is the Job's text (TensorBoard's tag list, 8 MB, allows 256 tags of 30,000
    characters), and the list, the legend and the stats line laid out every character of each: 3 s of the UI thread
    at every poll. A tag shows its first TAG_CHARS characters and `…`."""
    long = {f"{n}" + "t" * 30_000: [(NOW - 10 + s, s, float(s)) for s in range(1, 5)] for n in range(3)}
    app = ViewApp([Run("j", MetricsState(MetricsResult("j", "tensorboard", long, fetched_at=NOW)))])
    async with app.run_test(size=(80, 24)) as pilot:
        view = app.query_one(MetricsView)
        view._chosen = set(long)
        view._draw()
        await drawn(pilot)
        stats = text(app, "#metrics-stats").splitlines()
        assert stats == [f"{n}{'t' * (TAG_CHARS - 1)}…: last 4  min 1  max 4  4 pts" for n in range(3)], stats
        prompt = str(app.query_one("#metrics-tags", SelectionList).get_option_at_index(0).prompt)
        assert prompt == f"0{'t' * (TAG_CHARS - 1)}…"


def compare_runs():
    return [Run("ppo-a", MetricsState(result("ppo-a"))),
            Run("ppo-b", MetricsState(result("ppo-b", scale=0.5, source="log", note="TensorBoard answered 502"))),
            Run("ppo-c", MetricsState(MetricsResult("ppo-c", "log", {"time/step": [(NOW, 1, 1.0)]}, NOW)))]


async def test_compare_overlays_one_tag_per_job_with_a_legend():
    app = ViewApp(compare_runs(), compare=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        stats = text(app, "#metrics-stats")
        assert "ppo-a: last" in stats and "ppo-b: last" in stats and "ppo-c  rollout/rewards: no such tag" in stats
        status = text(app, "#metrics-status")
        assert "ppo-b: from the Header log" in status and "TensorBoard answered 502" in status


def test_metrics_tab_snapshot_80x24(snap_compare):
    assert snap_compare(ViewApp([Run("demo-ppo", MetricsState(result("demo-ppo")))]), terminal_size=(80, 24))


def test_compare_snapshot(snap_compare):
    assert snap_compare(ViewApp(compare_runs(), compare=True), terminal_size=(100, 30))


def timed(job: str) -> MetricsState:
    from rlark_tui.telemetry.steptime import breakdown
    series = {"time/step": [], "time/actor_training": [], "time/generate_rollouts": []}
    for s in range(1, 41):
        series["time/actor_training"].append((NOW - 100 + s, s, 185.0 + 5 * s))
        series["time/generate_rollouts"].append((NOW - 100 + s, s, 36.0))
        series["time/step"].append((NOW - 100 + s, s, 185.0 + 5 * s + 36.0))
    data = MetricsResult(job, "log", series, fetched_at=NOW - 3)
    return MetricsState(data, step_time=breakdown(series))


async def test_time_view_shows_the_bottleneck_and_bars_at_80x24():
    app = ViewApp([Run("demo-ppo", timed("demo-ppo"))])
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        app.query_one("#metrics-tags", SelectionList).focus()
        await pilot.press("b")
        await pilot.pause()
        bars_text = text(app, "#metrics-time")
        rows = bars_text.splitlines()
        assert rows[-1] == "A=actor_training  G=generate_rollouts"
        assert rows[-2].startswith("40    421 s ") and "A" in rows[-2] and "G" in rows[-2]
        assert all(len(row) <= 80 - 26 for row in rows)
        assert "421 s/step, actor_training 91% · bottleneck actor_training 91%, rising over the last 20 steps" \
            in text(app, "#metrics-stats")
        assert app.query_one("#metrics-plot").display is False
        await pilot.press("b")
        await pilot.pause()
        assert app.query_one("#metrics-plot").display is True and "bottleneck" not in text(app, "#metrics-stats")
