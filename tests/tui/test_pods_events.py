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


def test_a_jobs_flood_of_events_is_a_bounded_number_of_rows_and_one_that_counts_the_rest():
    """Issue 33, a seventeenth round (floods): each Task holds up to 500 events, and a Job of 200 such Tasks was
    100,000 rows of :events, derived (0.8 s) and laid out on the UI thread at each Snapshot while the view was open.
    A Job has EVENT_ROWS_PER_JOB rows, in its Tasks' order, and one row counting its others; another Job's events
    are all there."""
    from datetime import UTC, datetime

    from rlark_tui.view.index import SnapshotIndex
    from rlark_tui.view.pods import EVENT_ROWS_PER_JOB, event_rows

    roles = tuple((f"t{n}", "Actor", "Actor", "gpu-a1", "rlark-gpu-a") for n in range(40))
    snapshot = build_snapshot([job_dict("flood", roles=roles), job_dict("quiet")], with_pods=False)
    for task in snapshot.tasks.values():
        many = task["metadata"]["name"].startswith("flood-")
        task["status"]["events"] = [{"type": "Warning", "reason": f"R{n}", "lastTime": "2026-12-06T00:00:00Z"}
                                    for n in range(500 if many else 2)]
    rows = event_rows(SnapshotIndex(snapshot), datetime.now(UTC))
    flood = [row for row in rows if row.key.endswith("\tflood")]
    assert len(flood) == EVENT_ROWS_PER_JOB + 1 and len(rows) == len(flood) + 3 * 2
    assert flood[-1].key == "more\tflood" and flood[-1].cells[5] == (
        f"… {40 * 500 - EVENT_ROWS_PER_JOB:,} more events of this Job (the first {EVENT_ROWS_PER_JOB} shown)")
