"""The issue's Done-when lines on the shared Ray sandbox's demo-ppo (one live run): TensorBoard behind the
gateway lists real tags, `rlark metrics` gives a growing reward series from TensorBoard and from the log with the
Pod's TensorBoard stopped, and `get jobs -o wide` shows its progress."""

from __future__ import annotations

import json
import time

import pytest

from tests.clirun import cli_runner
from tests.sandbox.helpers import raw

JOB = "demo-ppo"


@pytest.mark.ray
def test_demo_metrics_and_progress(sandbox, env, capsys):
    rlark = cli_runner(sandbox.kubeconfig, capsys)
    deadline = time.monotonic() + 300
    wide = None
    while time.monotonic() < deadline:
        wide = rlark("get", "jobs", "-o", "wide")
        row = next((line for line in wide.out.splitlines() if line.startswith(JOB + " ")), "")
        if "/40 " in row:
            break
        time.sleep(3)
    assert "/40 " in row and "%" in row, wide

    tags = raw(sandbox, "GET", f"/api/v1/rlinf.io/v1alpha1/tasks/{JOB}-actor/tensorboard/data/plugin/scalars/tags",
               timeout=90)
    assert tags.status == 200 and "rollout/rewards" in tags.json()["."]

    result = rlark("metrics", JOB, "--format", "json", "--tag", "rollout/rewards")
    assert result.code == 0, result.err
    data = json.loads(result.out)
    steps = [point[1] for point in data["series"]["rollout/rewards"]]
    assert data["source"] == "tensorboard" and steps == sorted(steps) and len(set(steps)) == len(steps) >= 1

    timed = rlark("metrics", JOB, "--time", "-o", "json")
    assert timed.code == 0, timed.err
    shape = json.loads(timed.out)
    last = shape["steps"][-1]
    assert shape["job"] == JOB and last["phases"] and last["total"] > 0
    assert shape["bottleneck"]["phase"] == max(last["phases"], key=last["phases"].get)
    assert shape["bottleneck"]["share"] == round(last["phases"][shape["bottleneck"]["phase"]] / last["total"], 4)
    text = rlark("metrics", JOB, "--time")
    assert text.code == 0 and f"bottleneck: {shape['bottleneck']['phase']} " in text.out, text.err

    saved = rlark("checkpoints", JOB, "-o", "json")
    assert saved.code == 0, saved.err
    listing = json.loads(saved.out)
    assert listing["location"].endswith("/checkpoints") and all(
        c["complete"] and c["name"] == f"global_step_{c['step']}" and c["step"] % 10 == 0
        for c in listing["checkpoints"]), listing

    with sandbox.faults.cleared() as faults:
        faults.stop_tensorboard(f"{JOB}-actor-0")
        fallback = rlark("metrics", JOB, "--format", "json", "--tag", "rollout/rewards")
    assert fallback.code == 0, fallback.err
    data = json.loads(fallback.out)
    assert data["source"] == "log" and data["series"]["rollout/rewards"][-1][1] >= steps[-1]


@pytest.mark.ray
async def test_demo_tui_progress_and_growing_curves(sandbox, env):
    import re

    from rlark_tui.cluster import ClusterAccess
    from rlark_tui.screens.job_detail import JobDetailScreen
    from rlark_tui.screens.job_list import COLUMNS
    from rlark_tui.tui.app import RlarkApp
    from tests.pilot import wait_for

    access = ClusterAccess.open(str(sandbox.kubeconfig), sandbox.context)
    app = RlarkApp(access)
    try:
        async with app.run_test(size=(120, 30)) as pilot:
            progress_column = [column.key for column in COLUMNS].index("progress")

            def progress() -> str:
                table = app.screen.table
                try:
                    return str(table.get_row_at(table.get_row_index(JOB))[progress_column])
                except KeyError:
                    return ""

            await wait_for(pilot, lambda: "/40 " in progress(), "demo-ppo's PROGRESS", timeout=120)
            assert app.screen.table.select_key(JOB)
            await pilot.press("m")
            await wait_for(pilot, lambda: isinstance(app.screen, JobDetailScreen), "the job detail")
            stats = app.screen.query_one("#metrics-stats")

            def points() -> int:
                found = re.search(r"rollout/rewards: last \S+ .* (\d+) pts", str(stats.render()))
                return int(found.group(1)) if found else 0

            first = await wait_for(pilot, points, "the reward curve", timeout=60)
            assert "from TensorBoard via the gateway" in str(app.screen.query_one("#metrics-status").render())
            if first < 40:  # still training: the curve grows with the next reads (every 5 s)
                await wait_for(pilot, lambda: points() > first, "a longer reward curve", timeout=30)
    finally:
        access.close()
