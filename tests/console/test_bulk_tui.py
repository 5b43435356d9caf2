"""Bulk actions on marked Jobs (issue 25 item 5), Pilot against the shared sandbox over HTTPS: two marked Jobs and
`s` stop both after one confirmation that lists each; a Job that vanished before the confirmation is reported as
failed while the other is still stopped; read-only refuses before any dialog; the plan's text per Job."""

from __future__ import annotations

import pytest

from rlark_tui.cluster.errors import NotFound
from rlark_tui.cluster.kinds import JOBS
from rlark_tui.model.lifecycle import bulk_plan
from rlark_tui.screens.confirm import ConfirmScreen
from rlark_tui.screens.job_list import JobListScreen
from rlark_tui.tui.app import RlarkApp
from tests.console.test_console_tui import access, notes  # noqa: F401 (the fixture)
from tests.pilot import wait_for
from tests.tui.test_sandbox_tui import manifest


@pytest.fixture
def jobs(access):
    names = ["bulk-a", "bulk-b", "bulk-c"]
    for name in names:
        access.create(JOBS, manifest(name, "registry.example.com/rlinf:invalid", "edge-b1"))
    yield names
    for name in names:
        try:
            access.delete(JOBS, name)
        except NotFound:
            pass


async def _mark(pilot, app, names: list[str], pods: bool = True) -> None:
    await wait_for(pilot, lambda: isinstance(app.screen, JobListScreen) and all(
        n in app.screen.rows and (not pods or app.index.job_pods(app.index.job(n))) for n in names),
        "the Jobs and their Pods", timeout=60)
    for name in names:
        assert app.screen.table.select_key(name)
        await pilot.press("space")
    assert app.state.marked == names


async def test_two_marked_jobs_stop_after_one_confirmation_and_a_failure_is_reported_per_job(access, jobs):
    first, second, gone = jobs
    app = RlarkApp(access)
    async with app.run_test(size=(160, 40)) as pilot:
        await _mark(pilot, app, [first, second])
        await pilot.press("s")
        assert isinstance(app.screen, ConfirmScreen)
        assert app.screen.title_text == "Stop/Start 2 marked Job(s)?"
        body = app.screen.body_text
        assert f"- {first}: stop: its 1 Pod(s) are deleted" in body and f"- {second}: stop:" in body
        await pilot.press("y")
        await wait_for(pilot, lambda: all(access.get(JOBS, n)["spec"].get("stopped") is True
                                          for n in (first, second)), "both Jobs stopped")
        await wait_for(pilot, lambda: "all 2 done" in notes(app), "the per-Job report", show=notes)
        assert f"job {first} stopped" in notes(app) and f"job {second} stopped" in notes(app)
        assert app.state.marked == []
        assert access.get(JOBS, gone)["spec"].get("stopped") is not True  # the unmarked one untouched

        await _mark(pilot, app, [second, gone], pods=False)
        await pilot.press("ctrl+d")
        assert isinstance(app.screen, ConfirmScreen) and "2 marked" in app.screen.title_text
        access.delete(JOBS, second)  # gone before the confirmation: its delete fails, the other still goes
        await pilot.press("y")
        await wait_for(pilot, lambda: "1 done, 1 failed" in notes(app), "the partial failure", show=notes)
        assert f"FAILED delete {second}" in notes(app)
        assert app.state.marked == [second]
        with pytest.raises(NotFound):
            access.get(JOBS, gone)


async def test_readonly_refuses_a_bulk_action_before_any_dialog(access, jobs):
    """The bulk keys are hidden; pressed, actions.py refuses in words naming the marked Jobs, and no dialog opens."""
    app = RlarkApp(access, readonly=True)
    async with app.run_test(size=(160, 40)) as pilot:
        await _mark(pilot, app, jobs[:2])
        await pilot.press("s")
        await wait_for(pilot, lambda: "read-only mode: refusing to stop or start 2 marked jobs" in notes(app),
                       "the refusal", show=notes)
        assert isinstance(app.screen, JobListScreen)
        assert all(access.get(JOBS, n)["spec"].get("stopped") is not True for n in jobs[:2])


def test_the_plan_says_what_happens_to_each_job():
    plan = bulk_plan("stop_start", [("a", False, "Running", 3), ("b", True, "Stopped", 0),
                                    ("c", False, "Failed", 0), ("d", False, None, 0)])
    assert [(name, action) for name, action, _ in plan] == [("a", "stop"), ("b", "start"), ("c", None),
                                                           ("d", None)]
    assert "3 Pod(s)" in plan[0][2] and "no checkpoint resume" in plan[1][2] and "finished" in plan[2][2]
    restart = bulk_plan("restart", [("a", False, "Running", 1), ("b", True, "Stopped", 0)])
    assert "nothing restarts" in restart[0][2] and "un-stops" in restart[1][2]
    assert bulk_plan("delete", [("c", False, "Failed", 2)])[0][1] == "delete"


def test_the_dialog_of_5000_marked_jobs_lists_a_few_and_counts_the_rest():
    # issue 33: one line per marked Job, 5,000 long names laid out in a dialog that does not scroll
    from rlark_tui.model.lifecycle import BULK_SHOWN, bulk_consequences

    jobs = [(f"job-{n:04}-{'x' * 240}", False, "Failed" if n % 2 else "Running", 2) for n in range(5000)]
    title, body = bulk_consequences("stop_start", bulk_plan("stop_start", jobs))
    lines = body.split("\n")
    assert title == "Stop/Start 2500 marked Job(s)?"
    assert len(lines) == BULK_SHOWN + 2 and lines[0].startswith("- job-0000-")
    assert lines[-2] == f"… and {5000 - BULK_SHOWN:,} more marked Jobs: {2500 - BULK_SHOWN // 2:,} to act on, " \
                        f"{2500 - BULK_SHOWN // 2:,} skipped"
