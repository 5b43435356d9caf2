"""A launch record whose agreed patterns backtrack catastrophically must not freeze `rlark check` or the TUI.

The Job's Header prints `Global Step: ` + 34 a's + `!`. Its record agrees `progressPattern` `^Global Step: (a+)+$`
(the issue's pattern) and a `startupMarker` `^Global Step: (a|aa)+$`, which backtracks for minutes even in the
`regex` package. `rlark check` (a real process) ends within a baseline run's time plus the budget, row 3 saying the
pattern is too slow and row 5 not passing; in the TUI a key is handled while the check runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid

import pytest
from textual import events

from rlark_tui.checks.gather import gather
from rlark_tui.cluster import ClusterAccess
from rlark_tui.cluster.kinds import JOBS
from rlark_tui.flow.actions import Actions
from rlark_tui.model.keys import LAUNCH_RECORD_ANNOTATION
from rlark_tui.screens.check import CheckScreen
from rlark_tui.screens.job_list import JobListScreen
from rlark_tui.text.patterns import BUDGET_SECONDS
from rlark_tui.tui.app import RlarkApp
from tests.checks import fixtures as fx
from tests.pilot import wait_for

NAME = "redos-check"
LINE = "Global Step: " + "a" * 34 + "!"
PROGRESS = r"^Global Step: (a+)+$"
SLOW_MARKER = r"^Global Step: (a|aa)+$"


def _job(marker: str) -> dict:
    job = fx.unschedulable_job(NAME)
    task = job["spec"]["tasks"][0]
    task["kubernetes"]["workload"]["template"]["spec"]["containers"][0]["resources"] = {}
    task["prepareScript"] = f"echo 'Executing run script...'; echo '{LINE}'; sleep 3600"
    record = {"runId": "redos-1", "progressPattern": PROGRESS, "startupMarker": marker, "maxWaitSeconds": 600}
    job["metadata"]["annotations"] = {LAUNCH_RECORD_ANNOTATION: json.dumps(record)}
    return job


@pytest.fixture
def redos_job(sandbox, env):
    access = ClusterAccess.open(str(sandbox.kubeconfig), sandbox.context)
    Actions(access, state_dir=env / "state").submit(_job(r"^Global Step: a"))
    try:
        deadline = time.monotonic() + 60
        while not any(LINE in line for log in gather(access, NAME).logs for line in log.lines):
            assert time.monotonic() < deadline, "the Header never printed the line"
            time.sleep(0.3)
        yield access
    finally:
        access.delete(JOBS, NAME)
        access.close()


def _set_marker(access, marker: str) -> None:
    record = {"runId": "redos-1", "progressPattern": PROGRESS, "startupMarker": marker, "maxWaitSeconds": 600}
    access.http.json("PATCH", JOBS.path(None, NAME), _request(), body={"metadata": {"annotations": {
        LAUNCH_RECORD_ANNOTATION: json.dumps(record)}}}, content_type="application/merge-patch+json")


def _request():
    from rlark_tui.cluster.errors import Request
    return Request("patch", "jobs", NAME)


def _check(sandbox) -> tuple[float, subprocess.CompletedProcess]:
    started = time.monotonic()
    done = subprocess.run(["timeout", "60", sys.executable, "-m", "rlark_tui", "--kubeconfig", str(sandbox.kubeconfig),
                           "check", NAME], capture_output=True, text=True, env=os.environ.copy())
    return time.monotonic() - started, done


def test_rlark_check_ends_within_its_time_plus_the_budget_and_the_rows_do_not_pass(sandbox, redos_job):
    normal, baseline = _check(sandbox)
    assert "startup marker" not in baseline.stdout or "too slow" not in baseline.stdout
    _set_marker(redos_job, SLOW_MARKER)
    took, done = _check(sandbox)
    assert done.returncode == 1, done.stdout + done.stderr
    # within a normal run's time plus the budget of the two patterns, and a normal run's time again for the
    # machine's load (a run without budgets never ends)
    assert took < 2 * normal + 2 * BUDGET_SECONDS + 1.0, (took, normal)
    assert f"the launch record's startupMarker: pattern '{SLOW_MARKER}' is too slow (stopped after 1 s)" in done.stdout
    row5 = [line for line in done.stdout.splitlines() if line.lstrip().startswith("5")]
    assert row5 and "pass" not in row5[0].split()[:4], done.stdout
    assert "Traceback" not in done.stderr


async def test_the_tui_handles_keys_while_the_check_runs(sandbox, redos_job):
    # A pattern no earlier test used (a regex comment makes it new), so this process has not learnt it is slow.
    marker = SLOW_MARKER + f"(?#{uuid.uuid4().hex})"
    _set_marker(redos_job, marker)
    app = RlarkApp(redos_job)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, JobListScreen) and NAME in app.screen.rows, "the Job")
        app.screen.table.move_cursor(row=app.screen.table.get_row_index(NAME))
        # The keys go in as a terminal sends them: Pilot's own press waits for the whole process to go idle, and
        # the check's regex keeps a thread busy for its budget (so the check could be over before the next key).
        app._driver.send_message(events.Key("c", "c"))
        screen = await wait_for(pilot, lambda: isinstance(app.screen, CheckScreen) and app.screen, "the check")
        pressed = time.monotonic()
        app._driver.send_message(events.Key("question_mark", "?"))
        await wait_for(pilot, lambda: app.screen is not screen, "the help the key opens", timeout=5)
        answered = time.monotonic() - pressed
        judged_yet = screen.report is not None
        await pilot.press("escape")
        # a report made before the Header log was gathered says `pending` for row 3: wait for its judgement
        await wait_for(pilot, lambda: screen.report is not None and screen.report.row(3).result != "pending",
                       "row 3 judged")
        row3 = screen.report.row(3)
    # The help opened before the check's report came: a UI that judged the check itself (on its own thread) would
    # have set the report before it took the next key. How soon is the machine's: at load average 13 the key took
    # 1.3 s with the check still running (the regex engine lets other threads run while it matches).
    assert not judged_yet, answered
    assert row3.result == "fail" and any("is too slow" in note for note in row3.all_notes())
