"""SVG snapshots (pytest-textual-snapshot): the job list at 120x40 and at 80x24, and a Job's Workers at 80x24.

The Jobs carry no creationTimestamp so that no age or date in the picture depends on the clock;
refresh with --snapshot-update after an intended visual change.
"""

from __future__ import annotations

import dataclasses

from tui_factories import build_snapshot, job_dict

from rlark_tui.flow.messages import SnapshotChanged
from rlark_tui.model.podstate import PodHealth
from rlark_tui.telemetry.progress import Progress, ProgressState
from rlark_tui.tui.app import RlarkApp


def snapshot_app():
    jobs = [job_dict("demo-ppo", display="PPO demo", created=""),
            job_dict("eval-sweep", phase="Pending", created=""),
            job_dict("old-run", phase="Stopped", stopped=True, created="")]
    app = RlarkApp(None)

    async def deliver(pilot):
        app.post_message(SnapshotChanged(build_snapshot(jobs)))
        await pilot.pause()
        await pilot.pause()

    return app, deliver


def test_job_list_snapshot(snap_compare):
    app, deliver = snapshot_app()
    assert snap_compare(app, terminal_size=(120, 40), run_before=deliver)


def test_workers_snapshot_80x24(snap_compare):
    app, deliver = snapshot_app()

    async def open_detail(pilot):
        await deliver(pilot)
        await pilot.press("enter")
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 24), run_before=open_detail)



def test_job_list_snapshot_80x24_keeps_progress_reason_and_age(snap_compare):
    """At 80 columns DISPLAY NAME, HEADER NODE, ROLES and TYPE give way (narrowed, then hidden) so that NAME, PHASE,
    PODS, PROGRESS, REASON and AGE stay on screen (issue 25 item 6). Progress rows carry no log time (never stale)."""
    jobs = [job_dict("demo-ppo", display="PPO demo on three roles", created=""),
            job_dict("eval-sweep", phase="Pending", created=""),
            job_dict("crashed-run", phase="Failed", created="")]
    snapshot = dataclasses.replace(
        build_snapshot(jobs),
        progress={"demo-ppo": ProgressState(Progress(12, 40, 30.0, 28.0, 1.0))},
        health={"eval-sweep": {"rlark-gpu-a/p": PodHealth(0, "Unschedulable")},
                "crashed-run": {"rlark-gpu-a/q": PodHealth(3, "OOMKilled")}})
    app = RlarkApp(None)

    async def check(pilot):
        app.post_message(SnapshotChanged(snapshot))
        await pilot.pause()
        await pilot.pause()
        table = app.screen.table
        assert {"name", "phase", "pods", "progress", "reason", "age"} <= set(table.shown_columns)
        assert "display" not in table.shown_columns
        assert "12/40 30% ETA 00:28" in [getattr(c, "plain", c) for c in table.get_row_at(table.get_row_index(
            "demo-ppo"))]

    assert snap_compare(app, terminal_size=(80, 24), run_before=check)
