"""The Stacks screen (issue 34 item 1): `S` on the job detail, or on a progress-stalled alert in `:alerts`, opens
where the Job's live Ray workers are. The screen asks the app's worker and shows its answer: one line when none
can be taken (here: not connected), else the odd ranks and the groups, from the hung demo run's recorded py-spy
dumps (tests/raydebug/data/hang) as the worker's result."""

from __future__ import annotations

import dataclasses
from types import MappingProxyType

from tui_factories import build_snapshot, job_dict

from rlark_tui.alerting import rules as A
from rlark_tui.flow.messages import StacksTaken
from rlark_tui.screens.alerts import AlertsScreen
from rlark_tui.screens.job_detail import JobDetailScreen
from rlark_tui.screens.stacks import StacksScreen
from rlark_tui.telemetry import stacks
from rlark_tui.tui.app import RlarkApp
from tests.pilot import wait_for
from tests.raydebug.recorded import hang_workers

SIZE = (120, 40)
NOT_CONNECTED = "stacks: not connected to a cluster"


def on(app, kind: type) -> bool:
    """The app shows a mounted screen of this kind."""
    return isinstance(app.screen, kind) and app.screen.ready


def shown(app) -> str:
    screen = app.screen
    return f"{screen.query_one('#stacks-status').render()}\n{screen.query_one('#stacks-text').render()}"


async def test_S_on_the_job_detail_says_in_one_line_why_no_stack_was_taken(post_snapshot):
    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await post_snapshot(pilot, build_snapshot([job_dict("demo-ppo")]))
        await pilot.press("d")
        assert isinstance(app.screen, JobDetailScreen)
        await pilot.press("S")
        await wait_for(pilot, lambda: on(app, StacksScreen) and NOT_CONNECTED in shown(app),
                       "the not-connected line", show=shown)
        assert str(app.screen.query_one("#stacks-text").render()).strip() == NOT_CONNECTED
        assert "no stacks at " in shown(app) and "r tries again" in shown(app)
        await pilot.press("r")
        await wait_for(pilot, lambda: "r tries again" in shown(app), "the second answer", show=shown)
        await pilot.press("question_mark")
        help_text = str(app.screen.query_one("#help-text").render())
        assert "Take again" in help_text
        await pilot.press("escape", "escape")
        assert isinstance(app.screen, JobDetailScreen)
        await pilot.press("question_mark")
        assert "Stacks of the Ray workers" in str(app.screen.query_one("#help-text").render())


async def test_the_hung_runs_odd_rank_is_named_over_the_groups(post_snapshot):
    recorded = stacks.group("demo-ppo", "py-spy", hang_workers())
    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await post_snapshot(pilot, build_snapshot([job_dict("demo-ppo")]))
        app.open_stacks("demo-ppo")
        await wait_for(pilot, lambda: on(app, StacksScreen) and NOT_CONNECTED in shown(app),
                       "the first answer", show=shown)
        app.screen.post_message(StacksTaken("demo-ppo", recorded))
        await wait_for(pilot, lambda: "is elsewhere" in shown(app), "the recorded stacks", show=shown)
        lines = [line.rstrip() for line in shown(app).splitlines()]
        assert lines[0].startswith("taken at ") and lines[0].endswith(" · 4 ranks in 2 groups · r takes them again")
        assert lines[1:4] == [
            "stacks of demo-ppo (from py-spy)",
            "ActorGroup:2 is elsewhere: next_batch (demo_workload.py:241); 3 ranks wait in allreduce",
            ""]
        assert lines[4:9] == [
            "3 × main.<locals>.Worker: ActorGroup:0, ActorGroup:1, ActorGroup:3",
            "    Condition.wait (threading.py:327)",
            "    Event.wait (threading.py:629)",
            "    allreduce (rlark_sandbox/demo_workload.py:246)",
            "    main.<locals>.Worker.step (rlark_sandbox/demo_workload.py:289)"]
        assert lines[10:13] == [
            "1 × main.<locals>.Worker: ActorGroup:2",
            "    next_batch (rlark_sandbox/demo_workload.py:241)",
            "    main.<locals>.Worker.step (rlark_sandbox/demo_workload.py:288)"]
        assert not any("ray/_private" in line for line in lines)
        await pilot.press("escape")
        assert not isinstance(app.screen, StacksScreen)


def stalled_book() -> A.Book:
    stalled = A.Finding("progress-stalled", "demo-ppo", "demo-ppo", "no new step for 30 min", "Global Step 3/50")
    crashed = A.Finding("run-crashed", "other", "other", "the run crashed: boom", "boom")
    return A.step(A.Book(), A.merge([A.Evaluation((stalled, crashed))]), 1000.0)


async def test_S_on_a_progress_stalled_alert_opens_its_jobs_stacks(post_snapshot, tmp_path, monkeypatch):
    monkeypatch.setenv("RLARK_STATE_DIR", str(tmp_path))
    snapshot = build_snapshot([job_dict("demo-ppo"), job_dict("other")])
    snapshot = dataclasses.replace(snapshot, alerts=MappingProxyType({A.ALL_KEY: A.AlertsState(stalled_book())}))
    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await post_snapshot(pilot, snapshot)
        app.run_command("alerts")
        await wait_for(pilot, lambda: on(app, AlertsScreen), "the alerts screen")
        table = app.screen.query_one("#alert-table")
        await wait_for(pilot, lambda: table.row_count == 2, "two alerts")
        rows = {app.screen.alerts[key].rule: key for key in app.screen.alerts}
        table.select_key(rows["run-crashed"])
        await pilot.press("S")
        assert isinstance(app.screen, AlertsScreen)
        assert any("S takes the stacks of a progress-stalled alert's Job; this one is run-crashed" in n.message
                   for n in app._notifications)
        table.select_key(rows["progress-stalled"])
        await pilot.press("S")
        await wait_for(pilot, lambda: on(app, StacksScreen), "the Stacks screen")
        assert app.screen.job_name == "demo-ppo"
        await wait_for(pilot, lambda: NOT_CONNECTED in shown(app), "its answer", show=shown)
