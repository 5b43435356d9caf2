"""The log pane's time windows and inverse filter (issue 25 item 7), Pilot against the agent-less sandbox over
HTTPS: `1` reads the log again with sinceSeconds=60 (an hour-old line goes, the fresh one stays), `0` brings back
the whole tail, and `&!pattern` keeps only the lines that do not match."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from rlark_tui.cluster.access import ClusterAccess
from rlark_tui.model.logtarget import Scope
from rlark_tui.screens.logs import LogScreen
from rlark_tui.tui.app import RlarkApp
from rlark_tui.widgets.filter_bar import make_line_filter
from rlark_tui.widgets.log_pane import NOTICE, TEXT
from tests.cluster.seeding import seed_running_job, write_log
from tests.pilot import wait_for

ROLE = {"name": "actor", "role": "Actor", "head": True, "cluster": "rlark-gpu-a", "node": "gpu-a1"}


def shown(app) -> list[str]:
    if not (isinstance(app.screen, LogScreen) and app.screen.ready):
        return []
    return [line[TEXT] for line in app.screen.view.shown_lines if not line[NOTICE]]


async def test_time_windows_reread_with_since_seconds_and_the_inverse_filter(sb, env):
    pods = seed_running_job(sb, "log-windows", [ROLE])
    cluster, pod = pods["actor"]
    write_log(sb, cluster, pod, ["an hour ago"], when=datetime.now(UTC) - timedelta(hours=1))
    write_log(sb, cluster, pod, ["just now", "also now"])
    access = ClusterAccess.open(str(sb.kubeconfig), sb.context)
    try:
        app = RlarkApp(access)
        async with app.run_test(size=(120, 30)) as pilot:
            await wait_for(pilot, lambda: app.index is not None and app.index.job("log-windows"), "the Job")
            app.open_logs("log-windows", Scope.ALL)
            await wait_for(pilot, lambda: shown(app) == [
                "an hour ago", "just now", "also now"], "the whole log", show=shown)
            await pilot.press("1")
            await wait_for(pilot, lambda: shown(app) == ["just now", "also now"], "the last minute", show=shown)
            assert "(last 1 min)" in str(app.screen.query_one("#log-status").render())
            await pilot.press("0")
            await wait_for(pilot, lambda: len(shown(app)) == 3, "all lines again", show=shown)
            await pilot.press("ampersand", *"!now")
            await wait_for(pilot, lambda: shown(app) == ["an hour ago"], "the inverse filter", show=shown)
    finally:
        access.close()
        sb.store.delete("jobs", "log-windows", "")


def test_line_filter_bang_inverts():
    inverse = make_line_filter("!err(or)?")
    assert inverse.invert and not inverse.matches("an error here") and inverse.matches("all fine")
    assert inverse.spans("an error") == []
    assert make_line_filter("!").matches("!") and not make_line_filter("error").invert
