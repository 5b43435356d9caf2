"""Two SVG snapshots (pytest-textual-snapshot): the job list at 120x40 and a Job's Workers at 80x24.

The Jobs carry no creationTimestamp so that no age or date in the picture depends on the clock;
refresh with --snapshot-update after an intended visual change.
"""

from __future__ import annotations

from rlark_tui.app import RlarkApp
from rlark_tui.messages import SnapshotChanged
from tui_factories import build_snapshot, job_dict


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
