"""The log pane following a Job of 10 Pods written by the sandbox's load generator (Ray-free sandbox of its own).

Every Pod is followed at once (the streams must not wait for one another), every line arrives once, and the
status line counts them; streams cut mid-line resume without duplicates or gaps; a pane that falls a whole buffer
behind says how many lines it skipped.
"""

from __future__ import annotations

import asyncio

import pytest

from rlark_tui.cluster.access import ClusterAccess
from rlark_tui.model.logtarget import Scope
from rlark_tui.screens.logs import BUFFER_LINES, LogScreen
from rlark_tui.tui.app import RlarkApp
from rlark_tui.widgets.log_pane import NOTICE, SOURCE, TEXT
from tests.pilot import wait_for
from tests.sandbox.helpers import raw

SIZE = (120, 30)
PODS = 10


@pytest.fixture(scope="module")
def load_sandbox(tmp_path_factory):
    from rlark_sandbox import Sandbox
    with Sandbox(tmp_path_factory.mktemp("log-follow-sandbox"), seed="scale:1:0", agent=False) as sb:
        yield sb


def status(app) -> str:
    found = app.screen.query("#log-status")
    return str(found.first().render()) if found else ""


def last_row(screen: LogScreen) -> str:
    """The bottom row the user sees (above the horizontal scrollbar, if any)."""
    view = screen.view
    return view.render_line(view.scrollable_content_region.height - 1).text


async def open_load_pane(pilot, app, job: str, pods: int) -> LogScreen:
    """The pane of `job` once the app knows all its Pods (opened earlier, it says it waits for task sync)."""
    def known() -> bool:
        found = app.index.job(job) if app.index is not None else None
        return found is not None and len(app.index.job_pods(found)) == pods
    await wait_for(pilot, known, "the load Job and its Pods")
    screen = LogScreen(job, Scope.ALL)
    app.push_screen(screen)
    await wait_for(pilot, lambda: "follow on" in status(app), "the pane")
    return screen


async def test_ten_pods_are_followed_at_once_and_every_line_arrives_once(load_sandbox):
    reply = raw(load_sandbox, "POST", "/_sandbox/loadgen", {"pods": PODS, "lines_per_s": 1, "seconds": 0.1,
                                                             "job": "follow"})
    assert reply.status == 200, reply.body
    access = ClusterAccess.open(str(load_sandbox.kubeconfig), load_sandbox.context)
    app = RlarkApp(access)
    try:
        async with app.run_test(size=SIZE) as pilot:
            screen = await open_load_pane(pilot, app, "follow", PODS)
            raw(load_sandbox, "POST", "/_sandbox/loadgen", {"pods": PODS, "lines_per_s": 2000, "seconds": 1,
                                                            "job": "follow"})
            await wait_for(pilot, lambda: "2000 lines" in status(app), "2000 lines in the status")
            assert await asyncio.wait_for(asyncio.to_thread(lambda: "free"), 10) == "free", \
                "10 streams must leave the default executor (thread workers, reconciler probes) free"
            lines = [line[TEXT] for line in screen.view.shown_lines if not line[NOTICE]]
            seqs = sorted(int(text.split()[1].removeprefix("seq=")) for text in lines)
            assert seqs == list(range(2000))
            assert {line[SOURCE] for line in screen.view.shown_lines} == {f"load/follow-load-{n}" for n in range(PODS)}
            bottom = last_row(screen)
            assert bottom.startswith("[load/follow-load-") and " load seq=" in bottom
    finally:
        access.close()


async def test_a_pane_a_whole_buffer_behind_says_how_many_lines_it_skipped(load_sandbox):
    raw(load_sandbox, "POST", "/_sandbox/loadgen", {"pods": 1, "lines_per_s": 1, "seconds": 0.1, "job": "behind"})
    access = ClusterAccess.open(str(load_sandbox.kubeconfig), load_sandbox.context)
    app = RlarkApp(access)
    try:
        async with app.run_test(size=SIZE) as pilot:
            screen = await open_load_pane(pilot, app, "behind", 1)
            for n in range(BUFFER_LINES + 250):
                screen._push("load/behind-load-0", "", f"burst {n}")
            # a status drawn before the pane's next drain may show the count with no lines yet: wait for both
            await wait_for(pilot, lambda: "250 skipped (arriving faster than shown)" in status(app)
                           and f"{BUFFER_LINES} lines" in status(app), "the count and a full buffer")
            assert screen.view.shown_lines[0][TEXT] == "burst 250"
            assert last_row(screen).rstrip() == f"[load/behind-load-0] burst {BUFFER_LINES + 249}"
    finally:
        access.close()


def load_seqs(screen: LogScreen) -> list[int]:
    return sorted(int(line[TEXT].split()[1].removeprefix("seq=")) for line in screen.view.shown_lines
                  if not line[NOTICE])


async def test_cut_streams_resume_without_duplicates_or_gaps(load_sandbox):
    raw(load_sandbox, "POST", "/_sandbox/loadgen", {"pods": 2, "lines_per_s": 1, "seconds": 0.1, "job": "cut"})
    load_sandbox.faults.cut_logs(after_lines=5, times=2, follow_only=True)  # the two streams, not an alert round's read
    access = ClusterAccess.open(str(load_sandbox.kubeconfig), load_sandbox.context)
    app = RlarkApp(access)
    try:
        async with app.run_test(size=SIZE) as pilot:
            screen = await open_load_pane(pilot, app, "cut", 2)
            await wait_for(pilot, lambda: screen.open_streams == 2, "2 open streams")
            raw(load_sandbox, "POST", "/_sandbox/loadgen", {"pods": 2, "lines_per_s": 400, "seconds": 1,
                                                            "job": "cut"})
            await wait_for(pilot, lambda: load_seqs(screen) == list(range(400)), "all 400 lines")
            notices = [line[TEXT] for line in screen.view.shown_lines if line[NOTICE]]
            assert sum("dropped" in text and "reconnecting" in text for text in notices) == 2, notices
    finally:
        load_sandbox.faults.clear()
        access.close()
