"""`:overview` (issue 36 item 5) on the shared sandbox: a Node cordoned in the store and a Job that asks for more GPUs
than its Node has are both lines, with why (the scheduler's FailedScheduling event the platform copies onto the
Pending Task), and `enter` opens each: the Node's detail, the Job on its Events. `rlark status --long` prints the
same lines from one list of the cluster."""

from __future__ import annotations

import json
import time

import pytest

from rlark_tui.cluster.errors import NotFound
from rlark_tui.cluster.kinds import JOBS
from rlark_tui.flow.actions import Actions
from rlark_tui.screens.job_detail import JobDetailScreen
from rlark_tui.screens.node_detail import NodeDetailScreen
from rlark_tui.screens.overview import OverviewScreen
from rlark_tui.tui.app import RlarkApp
from rlark_tui.widgets.live_table import LiveTable
from tests.checks import fixtures as fx
from tests.clirun import cli_runner
from tests.pilot import wait_for

NAME = "overview-unplaced"
NODE = "rlark-edge-b/edge-b2"


@pytest.fixture
def trouble(plain_sandbox, access, tmp_path):
    """edge-b2 cordoned (the platform's spec.unschedulable) and a Job the scheduler cannot place."""
    def cordon(value: bool) -> None:
        plain_sandbox.call(lambda: plain_sandbox.store.mutate(
            "nodes", "edge-b2", lambda n: {**n, "spec": {**(n.get("spec") or {}), "unschedulable": value}},
            namespace="rlark-edge-b"))

    cordon(True)
    Actions(access, state_dir=tmp_path / "state").submit(fx.unschedulable_job(NAME))
    try:
        yield plain_sandbox
    finally:
        cordon(False)
        try:
            access.delete(JOBS, NAME)
        except NotFound:
            pass


def lines(app) -> dict[str, tuple[str, ...]]:
    table = app.screen.query_one(LiveTable)
    return {table.get_row_at(i)[1]: tuple(map(str, table.get_row_at(i))) for i in range(table.row_count)}


async def test_overview_lists_a_cordoned_node_and_an_unschedulable_job_and_opens_them(trouble, access):
    app = RlarkApp(access)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.index is not None and app.index.nodes, "the Nodes")
        app.run_command("overview")
        await pilot.pause()
        assert isinstance(app.screen, OverviewScreen)
        await wait_for(pilot, lambda: NODE in lines(app) and "unschedulable" in lines(app).get(NAME, ("",) * 3)[2],
                       "both lines", show=lambda app: str(lines(app)))
        node, job = lines(app)[NODE], lines(app)[NAME]
        assert node[:3] == ("Node", NODE, "cordoned")
        assert job[0] == "Job" and "Insufficient nvidia.com/gpu" in job[3] and job[3].startswith("Actor: ")

        table = app.screen.query_one(LiveTable)
        assert table.select_key(next(key for key in table.visible_keys if key.endswith(f"\t{NODE}")))
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, NodeDetailScreen), "the Node's detail")
        assert app.screen.node_key == NODE
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, OverviewScreen), "back on :overview")

        table = app.screen.query_one(LiveTable)
        assert table.select_key(next(key for key in table.visible_keys if key.endswith(f"\t{NAME}")))
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, JobDetailScreen), "the Job's detail")
        assert app.screen.job_name == NAME and app.screen.query_one("TabbedContent").active == "events"


def test_status_long_prints_the_lines_and_the_firing_alerts(trouble, env, capsys):
    rl = cli_runner(trouble.kubeconfig, capsys)
    state = env / "state"
    state.mkdir(exist_ok=True)
    (state / "alerts-summary.json").write_text(json.dumps({
        "time": time.time(), "alerts": 1, "counts": {"critical": 1},
        "firing": [{"severity": "critical", "rule": "run-crashed", "job": "demo-ppo", "object": "demo-ppo",
                    "message": "the run crashed: \x1b]52;c;aGk=\x07Traceback", "fired_at": time.time() - 300},
                   {"severity": "critical", "rule": 7},  # another version's: a time no datetime holds, unknown
                   {"severity": "warning", "rule": "job-failed", "job": "other", "object": "other", "message": "x",
                    "fired_at": 1e20}]}))
    def job_line(out: list[str]) -> str:
        return next((line for line in out if line.split()[:2] == ["Job", NAME]), "")

    deadline = time.monotonic() + 30
    while True:  # the Node's line says spec.unschedulable at once; the Job's waits for the scheduler's event
        result = rl("status", "--long")
        assert result.code == 0, result.err
        out = result.out.splitlines()
        if "unschedulable" in job_line(out) or time.monotonic() > deadline:
            break
    assert out[0].startswith("Jobs: ") and "not schedulable" in out[0]
    assert out[1].split() == ["KIND", "OBJECT", "STATE", "WHY", "AGE"]
    alert = next(line for line in out if line.startswith("Alert"))
    assert "critical run-crashed" in alert and "the run crashed: Traceback" in alert and "5m" in alert
    assert "\x1b" not in result.out and out.index(alert) == 2  # a critical alert comes first
    assert any(line.split()[:4] == ["Alert", "other", "warning", "job-failed"] for line in out)
    node = next(line for line in out if NODE in line)
    assert node.split()[:3] == ["Node", NODE, "cordoned"]
    job = job_line(out)
    assert "unschedulable" in job and "Insufficient nvidia.com/gpu" in job

    (state / "alerts-summary.json").write_text(json.dumps({"time": time.time() - 600, "firing": []}))
    result = rl("status", "--long")
    assert "alerts: no TUI or `rlark watch` evaluated them" in result.out and "Alert" not in result.out
