"""PROGRESS in the job list, `space` marks and `m` compare, and the job detail's Metrics tab, fed with Snapshots
(fixed data, no cluster): what the user sees, and which reads the screens subscribe (only Running Jobs on
screen; Metrics only while shown)."""

from __future__ import annotations

import time
from dataclasses import replace
from types import MappingProxyType

from tui_factories import build_snapshot, job_dict

from rlark_tui.flow.messages import ContextChanged
from rlark_tui.flow.polls import METRICS, PROGRESS
from rlark_tui.screens.compare import CompareScreen
from rlark_tui.screens.job_detail import JobDetailScreen
from rlark_tui.screens.job_list import SETTLE_SECONDS
from rlark_tui.telemetry.curves import MetricsResult, MetricsState
from rlark_tui.telemetry.progress import Progress, ProgressState
from rlark_tui.telemetry.steptime import breakdown
from rlark_tui.tui.app import RlarkApp
from rlark_tui.widgets.metrics_view import MetricsView
from tests.pilot import wait_for

SIZE = (140, 40)


def jobs():
    return [job_dict("ppo-a"), job_dict("ppo-b"), job_dict("old", phase="Stopped", stopped=True)]


def snapshot(progress=None, metrics=None):
    base = build_snapshot(jobs())
    return replace(base, progress=MappingProxyType(progress or {}), metrics=MappingProxyType(metrics or {}))


def cells(app, name: str) -> list[str]:
    table = app.screen.table
    return [getattr(c, "plain", c) for c in table.get_row_at(table.get_row_index(name))]


def subscribed(app, topic: str) -> set[str]:
    return {key for (t, key), count in app.intents._counts.items() if t == topic and count > 0}


def series(job: str, scale: float) -> MetricsState:
    now = time.time()
    points = [(now - 50 + s, s, scale * s / 10) for s in range(1, 21)]
    return MetricsState(MetricsResult(job, "tensorboard", {"rollout/rewards": points}, fetched_at=now))


async def test_progress_column_and_only_running_jobs_on_screen_are_polled(post_snapshot):
    now = time.time()
    progress = {"ppo-a": ProgressState(Progress(12, 40, 30.0, 28.0, 1.0, at=now)),
                "ppo-b": ProgressState(Progress(5, 40, 12.5, 70.0, 2.0, at=now - 60))}
    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await post_snapshot(pilot, snapshot(progress))
        assert cells(app, "ppo-a")[-2] == "12/40 30% ETA 00:28"
        assert cells(app, "ppo-b")[-2] == "5/40 12% ETA 01:10 (stale)"
        assert cells(app, "old")[-2] == ""
        await wait_for(pilot, lambda: subscribed(app, PROGRESS) == {"ppo-a", "ppo-b"}, "progress subscriptions")
        app.screen.table.select_key("ppo-a")
        await pilot.press("enter")  # the opened Job alone is polled, and its summary shows the progress
        await wait_for(pilot, lambda: subscribed(app, PROGRESS) == {"ppo-a"}, "only the opened Job polled")
        await post_snapshot(pilot, snapshot(progress))
        assert "· step 12/40 30% ETA 00:28" in str(app.screen.query_one("#job-summary").render())


async def test_subscriptions_follow_the_filter_once_typing_settles(post_snapshot):
    """Keys typed within SETTLE_SECONDS of each other leave the subscriptions alone (no reads start for rows
    passing through the window); once the filter rests they follow the rows it shows."""
    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await post_snapshot(pilot, snapshot())
        await wait_for(pilot, lambda: subscribed(app, PROGRESS) == {"ppo-a", "ppo-b"}, "progress subscriptions")
        changes = []
        reconcile = app.intents.subscribe, app.intents.unsubscribe
        app.intents.subscribe = lambda topic, key, **kw: (changes.append(("+", topic, key)), reconcile[0](topic, key, **kw))
        app.intents.unsubscribe = lambda topic, key, **kw: (changes.append(("-", topic, key)),
                                                             reconcile[1](topic, key, **kw))
        await pilot.press("slash")
        typed_at = time.monotonic()
        await pilot.press("p", "p", "o", "-", "b")
        await wait_for(pilot, lambda: "ppo-a" not in app.screen.table.visible_keys, "the filter applied")
        if time.monotonic() - typed_at < SETTLE_SECONDS:
            assert changes == []
        await wait_for(pilot, lambda: subscribed(app, PROGRESS) == {"ppo-b"}, "subscriptions follow the filter")
        assert ("-", PROGRESS, "ppo-a") in changes and not any(sign == "+" for sign, _, _ in changes)


async def test_marks_and_compare(post_snapshot):
    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await post_snapshot(pilot, snapshot())
        table = app.screen.table
        assert table.selected_key == "old"  # sorted by name
        await pilot.press("down", "space", "space")
        assert app.state.marked == ["ppo-a", "ppo-b"]
        assert cells(app, "ppo-a")[0] == "● ppo-a" and cells(app, "ppo-b")[0] == "● ppo-b"
        await pilot.press("space")  # the cursor stays on the last row: space again unmarks it
        assert app.state.marked == ["ppo-a"] and cells(app, "ppo-b")[0] == "ppo-b"
        await pilot.press("space")
        await pilot.press("m")
        await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen), "the compare screen")
        assert subscribed(app, METRICS) == {"ppo-a", "ppo-b"}
        await post_snapshot(pilot, snapshot(metrics={"ppo-a": series("ppo-a", 1), "ppo-b": series("ppo-b", 2)}))
        stats = str(app.screen.query_one("#metrics-stats").render())
        assert "ppo-a: last 2" in stats and "ppo-b: last 4" in stats
        await pilot.press("escape")
        await wait_for(pilot, lambda: not subscribed(app, METRICS), "compare reads stopped")
        assert app.state.marked == ["ppo-a", "ppo-b"]  # the marks stay for the next compare (or diff)
        app.screen.post_message(ContextChanged("another"))
        await wait_for(pilot, lambda: not app.state.marked, "marks dropped with the context")


async def test_metrics_tab_reads_only_while_shown(post_snapshot):
    app = RlarkApp(None)
    async with app.run_test(size=(80, 24)) as pilot:
        await post_snapshot(pilot, snapshot(metrics={"ppo-a": series("ppo-a", 1)}))
        await pilot.press("down", "m")  # no marks: the Metrics tab of the Job under the cursor
        await wait_for(pilot, lambda: isinstance(app.screen, JobDetailScreen), "the job detail")
        assert subscribed(app, METRICS) == {"ppo-a"}
        view = app.screen.query_one(MetricsView)
        await wait_for(pilot, lambda: "from TensorBoard via the gateway" in str(
            view.query_one("#metrics-status").render()), "the source line")
        assert "rollout/rewards: last 2" in str(view.query_one("#metrics-stats").render())
        await pilot.press("escape")  # the tag list has focus: back to the list
        await wait_for(pilot, lambda: not subscribed(app, METRICS), "no reads after leaving")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, JobDetailScreen), "the job detail again")
        assert not subscribed(app, METRICS)
        app.screen.action_tab("metrics")
        await wait_for(pilot, lambda: subscribed(app, METRICS) == {"ppo-a"}, "reads while shown")
        app.screen.action_tab("workers")
        await wait_for(pilot, lambda: not subscribed(app, METRICS), "reads stop on another tab")


async def test_detail_header_shows_the_step_time(post_snapshot):
    """The header's STEP TIME: the last step's total and the bottleneck's share, from the reconciler's breakdown
    (`time/*` rows as the Metrics tab read them); nothing is claimed before there are step times."""
    now = time.time()
    times = {"time/step": [(now, 1, 300.0), (now, 2, 342.0)], "time/actor_training": [(now, 1, 150.0), (now, 2, 185.0)],
             "time/env_interact": [(now, 1, 110.0), (now, 2, 119.0)]}
    timed = MetricsState(MetricsResult("ppo-a", "log", times, fetched_at=now), step_time=breakdown(times))
    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await post_snapshot(pilot, snapshot(metrics={"ppo-a": series("ppo-a", 1)}))
        await pilot.press("down", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, JobDetailScreen), "the job detail")
        summary = app.screen.query_one("#job-summary")
        await wait_for(pilot, lambda: "ppo-a · " in str(summary.render()), "the header")
        assert "s/step" not in str(summary.render())
        await post_snapshot(pilot, snapshot(metrics={"ppo-a": timed}))
        await wait_for(pilot, lambda: str(summary.render()).endswith(" · 342 s/step, actor_training 54%"),
                       "the step time in the header")
