"""The run-check report screen driven with Pilot: rows, evidence, jumps, hand-over fields and saving."""

from __future__ import annotations

import stat

import yaml
from textual.widgets import Checkbox, DataTable, Input, OptionList, Select

from rlark_tui.cluster import ClusterAccess
from rlark_tui.cluster.kinds import JOBS
from rlark_tui.flow.actions import Actions
from rlark_tui.local.config import state_dir
from rlark_tui.screens.check import CheckScreen
from rlark_tui.screens.job_detail import JobDetailScreen
from rlark_tui.screens.job_list import JobListScreen
from rlark_tui.screens.logs import LogScreen
from rlark_tui.tui.app import RlarkApp
from tests.console.test_console_tui import notes
from tests.pilot import drained, wait_for

from . import fixtures as fx
from .scenarios import SCENARIOS

SIZE = (140, 45)


def _rows(screen) -> list[list[str]]:
    table = screen.query_one("#check-rows", DataTable)
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


async def _settle(pilot, screen, done) -> None:
    for _ in range(200):
        await pilot.pause(0.05)
        if done():
            return


async def _open(pilot, app, evidence, records_dir):
    """Push the report screen, then deliver `evidence` the way the reconciler does (in a Snapshot)."""
    screen = CheckScreen("demo-ppo", records_dir=records_dir)
    app.push_screen(screen)
    await pilot.pause()
    fx.post_evidence(app, "demo-ppo", evidence)
    await _settle(pilot, screen, lambda: screen.report is not None)
    return screen


async def test_report_rows_evidence_and_jump_to_a_log_line(tmp_path):
    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot, app, SCENARIOS["wrong rank"][0], tmp_path)
        rows = _rows(screen)
        assert [r[2] for r in rows] == ["PASS", "PASS", "FAIL", "PASS", "PASS", "FAIL"]
        assert rows[2][5] == "demo-ppo-env-0: RLINF_NODE_RANK 1, expected 2 (rank start 2 + ordinal 0)"
        assert "earliest failing stage: ray" in str(screen.query_one("#check-summary").render())
        screen.query_one("#check-rows", DataTable).move_cursor(row=2)
        await pilot.press("enter")
        options = screen.query_one("#check-evidence", OptionList)
        labels = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        assert "demo-ppo-env-0/main#0:1 = RLINF_NODE_RANK: 1" in labels
        options.highlighted = labels.index("demo-ppo-env-0/main#0:1 = RLINF_NODE_RANK: 1")
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, LogScreen)
        assert app.screen.scope == ("pod", "rlark-robot-b/uid-env")


async def test_object_evidence_opens_the_job_detail(tmp_path):
    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot, app, SCENARIOS["pod on a wrong node"][0], tmp_path)
        screen.query_one("#check-rows", DataTable).move_cursor(row=1)
        await pilot.press("enter")
        options = screen.query_one("#check-evidence", OptionList)
        labels = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        wrong = [i for i, text in enumerate(labels) if "status.node = gpu-a9" in text]
        assert wrong and "(expected gpu-a2)" in labels[wrong[0]]
        options.highlighted = wrong[0]
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, JobDetailScreen)


async def test_hand_over_fields_reach_the_saved_record(tmp_path):
    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot, app, SCENARIOS["healthy"][0], tmp_path)
        assert [r[2] for r in _rows(screen)] == ["PASS"] * 5 + ["PENDING"]
        screen.query_one("#check-recorder", Input).value = "Li Lei"
        screen.query_one("#check-contacts", Input).value = "ops@example.com, ml@example.com"
        await pilot.pause()
        assert [r[2] for r in _rows(screen)][5] == "PENDING"  # no decision yet
        screen.query_one("#check-decision", Select).value = "continue"
        screen.query_one("#check-retention", Input).value = "30 days in s3://ckpt/ppo-demo-1"
        screen.query_one("#check-links", Input).value = "https://tracker.example.com/42"
        screen.query_one("#check-cleaned-up", Checkbox).value = True
        await pilot.pause()
        assert [r[2] for r in _rows(screen)] == ["PASS"] * 6
        assert screen.report.hand_over.recorder == "Li Lei"
        assert screen.report.hand_over.contacts == ("ops@example.com", "ml@example.com")
        screen.focus_body()
        await pilot.press("ctrl+s")
        await pilot.pause()
        (saved,) = sorted((tmp_path / "checks").glob("*.md"))
        text = saved.read_text()
        assert "- Recorder: Li Lei" in text and "ops@example.com, ml@example.com" in text
        assert "30 days in s3://ckpt/ppo-demo-1" in text and "https://tracker.example.com/42" in text
        assert "[x] temporary access and secrets cleaned up" in text
        assert "This run was checked at" in text
        assert stat.S_IMODE(saved.stat().st_mode) == 0o600


async def test_c_on_a_job_opens_the_live_report_from_the_sandbox(sandbox, tmp_path, monkeypatch):
    monkeypatch.setenv("RLARK_STATE_DIR", str(tmp_path))
    access = ClusterAccess.open(str(sandbox.kubeconfig), sandbox.context)
    Actions(access, state_dir=tmp_path).submit(fx.unschedulable_job("check-screen"))
    app = RlarkApp(access)
    try:
        async with app.run_test(size=SIZE) as pilot:
            for _ in range(100):
                await pilot.pause(0.1)
                if app.index is not None and app.index.job("check-screen") is not None:
                    break
            screen = app.screen
            assert isinstance(screen, JobListScreen)
            screen.table.move_cursor(row=screen.table.get_row_index("check-screen"))
            await pilot.press("c")
            check = app.screen
            assert isinstance(check, CheckScreen)
            for _ in range(100):
                await pilot.pause(0.1)
                if check.report is not None:
                    break
            rows = _rows(check)
            assert [r[1] for r in rows][:2] == ["Job created and configured as submitted",
                                                "Pods: count and Nodes as planned"]
            assert rows[0][2] == "PASS" and rows[1][2] == "PENDING"
            assert "Run check of check-screen" in str(check.query_one("#check-summary").render())
    finally:
        access.delete(JOBS, "check-screen")
        access.close()


async def test_a_live_refresh_keeps_the_cursor_and_the_evidence_highlight(tmp_path):
    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot, app, SCENARIOS["healthy"][0], tmp_path)
        screen.query_one("#check-rows", DataTable).move_cursor(row=2)
        await pilot.press("enter")
        options = screen.query_one("#check-evidence", OptionList)
        options.highlighted = 2
        fx.post_evidence(app, "demo-ppo", SCENARIOS["2 of 3 alive"][0])
        await _settle(pilot, screen, lambda: screen.report.rows[2].result == "pending")
        assert screen.query_one("#check-rows", DataTable).cursor_row == 2
        assert _rows(screen)[2][2] == "PENDING"
        assert options.highlighted == 2 and app.focused is options


async def test_without_a_cluster_the_report_says_there_is_nothing_to_check(tmp_path):
    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        screen = CheckScreen("demo-ppo", records_dir=tmp_path)
        app.push_screen(screen)
        await pilot.pause()
        summary = str(screen.query_one("#check-summary").render())
        assert "gathering evidence" in summary and "not connected to a cluster: nothing to check" in summary


async def _shown_note(pilot, app, job: str, note: str = "") -> str:
    """Open `job`'s run check as `c` does, once its report is shown and the kept hand-over fields are loaded: what
    its notes field shows; then type `note` (if any), wait until rlark has kept it and go back to the list, so the
    next check screen reads what was kept."""
    app.open_check(job)
    check = await wait_for(pilot, lambda: isinstance(app.screen, CheckScreen) and app.screen.report and app.screen,
                           "the Job's report")
    await drained(app)
    await wait_for(pilot, lambda: not any(w.group == "hand-over-load" and not w.is_finished for w in app.workers),
                   "the kept fields loaded")
    await drained(app)
    shown = check.query_one("#check-notes", Input).value
    if note:
        check.query_one("#check-notes", Input).value = note
        kept = state_dir() / "checks" / "hand-over"
        await wait_for(pilot, lambda: any(note in path.read_text() for path in kept.rglob("*.json")), "the note kept")
    await app.pop_screen()  # and no longer subscribed to the Job's evidence
    return shown


async def test_a_job_made_again_while_its_check_is_open_gets_fields_of_its_own(plain_sandbox, env):
    """A Job deleted and made again under its name while its run check stays open is another Job (a new uid): the
    note typed for the one before stays kept for it, the screen says it is another Job now and shows the new
    one's fields, and what is typed next is kept for the new one. The screen kept the first Job's key for as long
    as it was open, so the new Job showed and kept the deleted one's note."""
    access = ClusterAccess.open(str(plain_sandbox.kubeconfig), plain_sandbox.context)
    job = "hand-over-remade"
    try:
        Actions(access, state_dir=env).submit(fx.unschedulable_job(job))
        app = RlarkApp(access)
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.index is not None and app.index.job(job) is not None, f"{job} listed")
            app.open_check(job)
            check = await wait_for(pilot, lambda: isinstance(app.screen, CheckScreen) and app.screen.report
                                   and app.screen, "the Job's report")
            field = check.query_one("#check-notes", Input)
            kept = state_dir() / "checks" / "hand-over"
            field.value = "the first one's note"
            await wait_for(pilot, lambda: any("the first one's note" in path.read_text()
                                              for path in kept.rglob("*.json")), "the note kept")
            first = app.index.job(job).uid
            access.delete(JOBS, job)
            await wait_for(pilot, lambda: app.index.job(job) is None, f"{job} gone")
            Actions(access, state_dir=env).submit(fx.unschedulable_job(job))
            await wait_for(pilot, lambda: "is another Job now (made again" in notes(app), "the made-again note",
                           show=lambda _app: f"{notes(app)!r}; notes field {field.value!r}")
            assert field.value == "" and app.index.job(job).uid != first
            field.value = "the second one's note"
            await wait_for(pilot, lambda: any("the second one's note" in path.read_text()
                                              for path in kept.rglob("*.json")), "the new note kept")
            texts = [path.read_text() for path in kept.rglob("*.json")]
            assert sum("the first one's note" in text for text in texts) == 1
            assert not any("the first one's note" in text and "the second one's note" in text for text in texts)
    finally:
        access.delete(JOBS, job)
        access.close()


async def test_hand_over_fields_stay_with_their_job(plain_sandbox, env):
    """Notes typed into a Job's run check come back for that Job only: not for the Job of that name another context
    shows (here a second context of the same control plane), nor for the Job deleted and made again (a new uid)."""
    data = yaml.safe_load(plain_sandbox.kubeconfig.read_text())
    data["contexts"].append({**data["contexts"][0], "name": "team-b"})
    kubeconfig = env / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(data))
    kubeconfig.chmod(0o600)
    here = ClusterAccess.open(str(kubeconfig), plain_sandbox.context)
    there = ClusterAccess.open(str(kubeconfig), "team-b")
    job = "hand-over-owner"

    def listed(app, uid: str = ""):
        return lambda: app.index is not None and (made := app.index.job(job)) is not None and made.uid != uid

    try:
        Actions(here, state_dir=env).submit(fx.unschedulable_job(job))
        typed = "night shift: outputs on /data/ppo"
        app = RlarkApp(there)
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, listed(app), f"{job} listed")
            assert await _shown_note(pilot, app, job, "team b: not ours") == ""
        app = RlarkApp(here)
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, listed(app), f"{job} listed")
            assert await _shown_note(pilot, app, job, typed) == ""  # the same Job, as another context shows it
            assert await _shown_note(pilot, app, job) == typed  # the same Job: kept (read by a new screen)
            uid = app.index.job(job).uid
            here.delete(JOBS, job)
            await wait_for(pilot, lambda: app.index.job(job) is None and app.index.evidence_of(job) is None,
                           f"{job} and its evidence gone")
            Actions(here, state_dir=env).submit(fx.unschedulable_job(job))
            await wait_for(pilot, listed(app, uid), f"{job} made again")
            assert await _shown_note(pilot, app, job) == ""  # made again: a new uid
    finally:
        here.delete(JOBS, job)
        here.close()
        there.close()
