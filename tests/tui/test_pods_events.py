"""`:pods` and `:events` (issue 25 item 7) on a snapshot as the reconciler delivers it: every Pod of every Job with
its Job, role, Node, phase and (from the HEALTH read) reason and restarts, filterable, enter opens its log; the
Tasks' events newest first, enter opens the Job's events; columns give way at 80 columns."""

from __future__ import annotations

import dataclasses

from tui_factories import build_snapshot, job_dict

from rlark_tui.model.podstate import PodHealth
from rlark_tui.screens.job_detail import JobDetailScreen
from rlark_tui.screens.logs import LogScreen
from rlark_tui.screens.pods import EventsScreen, PodsScreen
from rlark_tui.tui.app import RlarkApp


def _snapshot():
    snapshot = build_snapshot([job_dict("demo-ppo"), job_dict("eval-sweep", phase="Pending")])
    tasks = dict(snapshot.tasks)
    key = next(k for k in tasks if k.endswith("/demo-ppo-actor"))
    tasks[key] = {**tasks[key], "status": {**tasks[key]["status"], "events": [
        {"type": "Warning", "reason": "BackOff", "message": "Back-off restarting \x1b[31mfailed container",
         "objectKind": "Pod", "objectName": "demo-ppo-actor-0", "lastTime": "2026-11-29T10:05:00Z", "count": 3},
        {"type": "Normal", "reason": "Scheduled", "message": "assigned to gpu-a1", "objectKind": "Pod",
         "objectName": "demo-ppo-actor-0", "lastTime": "2026-11-29T10:00:00Z"}]}}
    return dataclasses.replace(snapshot, tasks=tasks, health={"demo-ppo": {
        "rlark-gpu-a/uid-demo-ppo-actor-0": PodHealth(3, "OOMKilled")}})


async def test_pods_and_events(post_snapshot):
    app = RlarkApp(None)
    async with app.run_test(size=(80, 24)) as pilot:
        await post_snapshot(pilot, _snapshot())
        app.run_command("pods")
        await post_snapshot(pilot, _snapshot())
        screen = app.screen
        assert isinstance(screen, PodsScreen)
        table = screen.query_one("#list-table")
        rows = {table.get_row_at(i)[1]: table.get_row_at(i) for i in range(table.row_count)}
        assert len(rows) == 6
        assert rows["demo-ppo-actor-0"][:1] == ("demo-ppo",) and rows["demo-ppo-actor-0"][4:] == (
            "Running", "OOMKilled", "3")
        assert {"job", "pod", "phase", "reason"} <= set(table.shown_columns)
        await pilot.press("slash", *"eval")
        await pilot.pause()
        assert table.row_count == 3
        await pilot.press("escape")
        await pilot.pause()
        assert table.row_count == 6
        assert table.select_key("rlark-gpu-a/uid-demo-ppo-actor-0\tdemo-ppo")
        await pilot.press("enter")
        assert isinstance(app.screen, LogScreen) and app.screen.job_name == "demo-ppo"

        app.run_command("events")
        await pilot.pause()
        events = app.screen
        assert isinstance(events, EventsScreen)
        table = events.query_one("#list-table")
        assert [table.get_row_at(i)[3] for i in range(table.row_count)] == ["BackOff ×3", "Scheduled"]
        assert "\x1b" not in table.get_row_at(0)[5]
        await pilot.press("enter")
        assert isinstance(app.screen, JobDetailScreen) and app.screen.job_name == "demo-ppo"


async def test_overview_shows_cpu_memory_requests_and_running_time(post_snapshot):
    job = job_dict("demo-ppo")
    job["status"]["startTime"] = "2026-11-29T10:00:00Z"
    job["status"]["endTime"] = "2026-11-29T12:30:00Z"
    resources = job["spec"]["tasks"][0]["kubernetes"]["workload"]["template"]["spec"]["containers"][0]["resources"]
    resources["requests"] = {"cpu": "4", "memory": "16Gi"}
    app = RlarkApp(None)
    async with app.run_test(size=(120, 40)) as pilot:
        await post_snapshot(pilot, build_snapshot([job]))
        app.open_job("demo-ppo", "overview")
        await pilot.pause()
        await post_snapshot(pilot, build_snapshot([job]))
        text = str(app.screen.query_one("#overview-text").render())
        assert "requests cpu 4, memory 16Gi" in text and "none set (best effort" in text
        assert "Running time: 2h\n" in text  # startTime to endTime
