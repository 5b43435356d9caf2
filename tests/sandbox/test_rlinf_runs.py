"""Issue 23's Done-when on the shared sandbox, without Ray: two Jobs whose Header runs a small Python printer (as
its prepare script; the container's stdout and stderr go through the sandbox's CRI log writer):
- one prints the released RLinf 0.3.0's own `print_metrics_table` (taken from the wheel) every 3 s for 30 steps;
- one draws tqdm with the reasoning runner's arguments (`desc="Global Step"`, `total`, `ncols=1650`) on stderr
  and never closes it, so its log holds one unterminated line that reaches the log API in 16 KiB pieces.
`get -o wide`, `rlark metrics` and the TUI's job list must read progress and series from both while they run."""

from __future__ import annotations

import json
import re
import sys
import time

import pytest

from rlark_tui.cluster.metrics import PROGRESS_SECONDS
from tests.agent.helpers import Api, delete_and_wait, job, task, wait_for
from tests.clirun import cli_runner
from tests.rlinf_release import rlinf  # noqa: F401 (the fixture)

pytest.importorskip("tqdm")

TABLES, BAR = "rlinf-tables", "rlinf-tqdm"
STEP_SECONDS = 3.0
BAR_STEP_SECONDS = 0.3
BAR_STEPS = 100
"""The bar runs for 30 s: about every 5 redraws (16 KiB of `█`) a new piece reaches the log."""
TQDM_PRINTER = f"""import time
from tqdm import tqdm

bar = tqdm(initial=0, total={BAR_STEPS}, desc="Global Step", ncols=1650)
for step in range(1, {BAR_STEPS + 1}):
    time.sleep({BAR_STEP_SECONDS})
    bar.set_postfix({{"step_time": {BAR_STEP_SECONDS}, "rollout_time": 0.1, "actor/training_time": 0.2,
                     "rewards": step / {BAR_STEPS}}}, refresh=False)
    bar.update(1)
time.sleep(3600)
"""
METRICS = ('{"time/step": 3.0, "env/success_once": min(1.0, step / 20), "env/return": 10.0 * step, '
           '"rollout/rewards": 0.05 * step, "train/actor/policy_loss": 1 / (step + 1), '
           '"train/critic/value_loss": 0.5}')


@pytest.fixture(scope="module")
def sandbox(plain_sandbox):
    return plain_sandbox


@pytest.fixture(scope="module")
def runs(sandbox, rlinf, tmp_path_factory):
    folder = tmp_path_factory.mktemp("printers")
    tables = rlinf.printer(folder / "tables.py", 30, STEP_SECONDS, METRICS)
    bar = folder / "bar.py"
    bar.write_text(TQDM_PRINTER)
    api = Api(sandbox)
    for name, script in ((TABLES, tables), (BAR, bar)):
        api.create_job(job(name, [task("actor", "gpu-a3", head=True, prepare=f"{sys.executable} {script}")]))
    try:
        yield api
    finally:
        for name in (TABLES, BAR):
            delete_and_wait(api, name)


def _header_log(sandbox) -> str:
    return "\n".join(sandbox.logs.read("rlark-gpu-a", "rlark-system", f"{TABLES}-actor-0", "main"))


def _row(out: str, name: str) -> str:
    return next((line for line in out.splitlines() if line.startswith(name + " ")), "")


def _step(text: str) -> int | None:
    found = re.search(r"(\d+)/(?:30|100) ", text)
    return int(found.group(1)) if found else None


def test_get_wide_and_metrics_read_rlinfs_table_and_a_never_closed_bar(runs, sandbox, env, capsys):
    rlark = cli_runner(sandbox.kubeconfig, capsys)
    seen: dict[str, list[int]] = {TABLES: [], BAR: []}

    def advanced() -> bool:
        out = rlark("get", "jobs", "-o", "wide").out
        for name in seen:
            step = _step(_row(out, name))
            if step is not None and step not in seen[name]:
                seen[name].append(step)
        return all(len(steps) >= 2 for steps in seen.values()) and "ETA" in _row(out, TABLES)
    wait_for(advanced, 60, interval=0.5, what=f"PROGRESS of both Jobs advancing (seen {seen})")
    assert all(steps == sorted(steps) for steps in seen.values()), seen

    result = rlark("metrics", TABLES, "--format", "json")
    assert result.code == 0, result.err
    data = json.loads(result.out)
    assert data["source"] == "log"
    rewards, success = data["series"]["rollout/rewards"], data["series"]["env/success_once"]
    # RLinf is called with the 0-based step: the table of Global Step 2 holds the metrics of step=1
    assert [p[1] for p in rewards][:2] == [1, 2] and rewards[1][2] == 0.05 and success[1][2] == 0.05
    bar = json.loads(rlark("metrics", BAR, "--format", "json").out)
    steps = [p[1] for p in bar["series"]["rewards"]]
    assert steps == sorted(steps) and len(steps) >= 10


async def test_tui_list_shows_each_new_row_within_one_poll(runs, sandbox, env):
    from rlark_tui.cluster import ClusterAccess
    from rlark_tui.screens.job_list import COLUMNS
    from rlark_tui.tui.app import RlarkApp
    from tests.pilot import wait_for as pilot_wait

    access = ClusterAccess.open(str(sandbox.kubeconfig), sandbox.context)
    reads: list[float] = []
    pod_log = access.pod_log

    def recorded(*args, **kwargs):
        if args[1] == f"{TABLES}-actor-0":
            reads.append(time.monotonic())
        return pod_log(*args, **kwargs)
    access.pod_log = recorded
    app = RlarkApp(access)
    column = [c.key for c in COLUMNS].index("progress")

    def progress(name: str) -> str:
        table = app.screen.table
        try:
            return str(table.get_row_at(table.get_row_index(name))[column])
        except (KeyError, AttributeError):
            return ""
    try:
        async with app.run_test(size=(160, 40)) as pilot:
            first = await pilot_wait(pilot, lambda: "ETA" in progress(TABLES) and _step(progress(TABLES)),
                                     "the table Job's PROGRESS with an ETA", timeout=40)
            bar_first = await pilot_wait(pilot, lambda: _step(progress(BAR)), "the tqdm Job's PROGRESS",
                                         timeout=40)
            # once a newer table is in the log, the list's next progress read of that Job must show it
            await pilot_wait(pilot, lambda: f"Global Step: {first + 1:4d}/30" in _header_log(sandbox),
                             f"table {first + 1} in the log", timeout=30)
            landed = time.monotonic()
            await pilot_wait(pilot, lambda: any(at > landed for at in reads), "the next progress read",
                             timeout=PROGRESS_SECONDS * 4)
            await pilot_wait(pilot, lambda: (_step(progress(TABLES)) or 0) > first,
                             f"a newer table than {first}/30 after the next read", timeout=10)
            await pilot_wait(pilot, lambda: (_step(progress(BAR)) or 0) > bar_first,
                             f"the bar past {bar_first}/{BAR_STEPS}", timeout=PROGRESS_SECONDS + 5)
    finally:
        access.close()
