"""`rlark watch -A -o json --webhook …` against the shared sandbox: each faulty Job gives its JSON line and a POST
within 30 s of the fault (the stall within 30 s of its threshold), no secret in either, and the crashed run's first
failure kept at once; `rlark wait` both ways."""

from __future__ import annotations

import json
import time

import pytest

from rlark_tui.raydash.diagnose import kept_path
from tests.alerts.conftest import NAMES, OWN, REFERENCED, SECRET
from tests.clirun import cli_runner

pytestmark = pytest.mark.xdist_group("alerts")
"""One worker runs the module: test_wait_both_ways reads the Failed phase the first test sets."""
EXPECTED = [("run-crashed", NAMES["crash"]), ("run-oom", NAMES["crash"]), ("pod-backoff", NAMES["exit"]),
            ("job-failed", NAMES["exit"]), ("pod-oomkilled", NAMES["oom"]), ("progress-stalled", NAMES["stall"])]


def fail_job(sandbox, name: str) -> None:
    """The controller's verdict on a Job whose Task failed (the sandbox's agent runs StatefulSets, which the
    platform never fails), written into the sandbox's store: Failed is terminal, so it stays."""
    def failed(job: dict) -> dict:
        job["status"] = {**(job.get("status") or {}), "phase": "Failed", "message": "Task actor failed: exit 1"}
        return job
    sandbox.call(lambda: sandbox.store.mutate("jobs", name, failed))


def test_each_fault_is_a_json_line_and_a_webhook_post_without_secrets(faulty, plain_sandbox):
    watch, receiver, submitted, state = faulty
    watch.wait_for(lambda l: l["rule"] == "pod-backoff" and l["job"] == NAMES["exit"], "the exit-1 Job's back-off")
    fail_job(plain_sandbox, NAMES["exit"])
    seen = {}
    for rule, job in EXPECTED:
        line = watch.wait_for(lambda l, r=rule, j=job: l["rule"] == r and l["job"] == j and l["state"] == "firing",
                              f"{rule} of {job}")
        seen[rule, job] = line
        assert set(line) == {"time", "severity", "rule", "job", "namespace", "object", "message", "state"}
    crashed = seen["run-crashed", NAMES["crash"]]
    assert crashed["severity"] == "critical" and crashed["namespace"] == "rlark-gpu-a"
    assert "EmbodiedFSDPActor's function run_training" in crashed["message"]
    assert seen["pod-oomkilled", NAMES["oom"]]["object"] == f"{NAMES['oom']}-actor-0"
    assert seen["run-oom", NAMES["crash"]]["object"] == f"{NAMES['crash']}-actor-0"
    assert "Task actor failed: exit 1" in seen["job-failed", NAMES["exit"]]["message"]
    # no Ray runs here: the stall's stacks were asked for once and it says why there are none
    assert "; stacks: not taken (the Ray dashboard of alert-stall: " in seen["progress-stalled", NAMES["stall"]]["message"]
    # the Jobs were submitted together; every alert came within 30 s of its fault (the stall: of its 5 s limit)
    assert time.time() - submitted < 90
    phase = watch.wait_for(lambda l: l["rule"] == "phase" and l["job"] == NAMES["exit"] and l["state"] == "Failed",
                           "the Failed phase line")
    assert phase["message"].endswith("-> Failed")

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not all(
            any(b["rule"] == r and b["job"] == j for b in receiver.bodies) for r, j in EXPECTED):
        time.sleep(0.1)
    for rule, job in EXPECTED:
        body = next(b for b in receiver.bodies if b["rule"] == rule and b["job"] == job)
        assert body == seen[rule, job]
    everything = "".join(watch.text) + b"".join(receiver.raw).decode()
    assert SECRET not in everything and "HF_TOKEN=***" in everything
    assert OWN not in everything and REFERENCED not in everything   # the Job's own value, its Secret's value
    assert "wandb *** note ***" in crashed["message"]
    # the watch that saw the run crash kept its first failure then, for diagnose and bundle once the Pods are gone
    kept = kept_path(state, NAMES["crash"], plain_sandbox.context)
    deadline = time.monotonic() + 30
    while not kept.exists():
        assert time.monotonic() < deadline, "the watch kept no first failure of the crashed run"
        time.sleep(0.1)
    failure = json.loads(kept.read_text())["diagnosis"]["first_failure"]
    assert (failure["worker"], failure["cause"]) == ("EmbodiedFSDPActor pid 4121", "cuda-oom")
    assert oct(kept.stat().st_mode & 0o777) == "0o600" and SECRET not in kept.read_text()


def test_wait_both_ways(faulty, plain_sandbox, capsys):
    run = cli_runner(plain_sandbox.kubeconfig, capsys)
    reached = run("wait", NAMES["crash"], "--for", "phase=Running", "--timeout", "60s")
    assert reached.code == 0, reached.err
    assert reached.out.strip() == f"job {NAMES['crash']} is Running"
    impossible = run("wait", NAMES["exit"], "--for", "phase=Succeeded", "--timeout", "60s")
    assert impossible.code == 1
    assert f"job {NAMES['exit']} is Failed" in impossible.err and "can no longer become Succeeded" in impossible.err
    timed_out = run("wait", NAMES["stall"], "--for", "progress=40", "--timeout", "2s")
    assert timed_out.code == 2 and "timed out" in timed_out.err and "step 1/40" in timed_out.err


def test_a_wait_for_a_step_says_what_its_read_of_the_header_log_left_out(faulty, plain_sandbox, capsys,
                                                                          monkeypatch):
    """Issue 33, one way to read an input: `rlark wait --for progress=N` read the Header log's last 200 lines
    whatever their size (3.2 GiB of 16 MiB lines from a data plane unlike a kubelet). It holds the newest within
    metrics.PROGRESS_TAIL_BYTES (here 64 bytes: no line fits), and when no progress row is among them it says what
    it left out, with the bound, not that the log has no row yet."""
    from rlark_tui.cluster import ClusterAccess, metrics
    from tests.agent.helpers import wait_for

    monkeypatch.setattr(metrics, "PROGRESS_TAIL_BYTES", 64)
    access = ClusterAccess.open(str(plain_sandbox.kubeconfig), plain_sandbox.context)

    def read_with_lines_left_out() -> str:  # the Header Pod is there and has logged (run alone, it may not have yet)
        header = metrics.find_header(access, NAMES["stall"])
        return metrics.read_progress(access, header.cluster, header.pod)[1]

    try:
        wait_for(read_with_lines_left_out, timeout=60, interval=0.05, what="the stalled Job's Header log")
    finally:
        access.close()
    run = cli_runner(plain_sandbox.kubeconfig, capsys)
    timed_out = run("wait", NAMES["stall"], "--for", "progress=40", "--timeout", "0s")  # one read, then its deadline
    assert timed_out.code == 2 and "timed out" in timed_out.err
    said = [line for line in timed_out.err.splitlines() if "no progress row" in line]
    assert len(said) == 1 and "no progress row in the Header log read (its last 0 lines read and " in said[0]
    assert "before them left out, to hold at most 64 bytes (the read's bound))" in said[0], timed_out.err


async def test_the_tui_counts_marks_lists_and_opens_the_evidence(faulty, plain_sandbox, tmp_path, monkeypatch):
    import dataclasses
    import json

    from rlark_tui.alerting.rules import Thresholds
    from rlark_tui.cluster import ClusterAccess
    from rlark_tui.screens.alerts import AlertsScreen
    from rlark_tui.screens.job_list import COLUMNS
    from rlark_tui.screens.logs import LogScreen
    from rlark_tui.screens.overview import OverviewScreen
    from rlark_tui.tui.app import RlarkApp
    from rlark_tui.widgets.live_table import LiveTable
    from rlark_tui.widgets.status_header import StatusHeader
    from tests.pilot import wait_for

    monkeypatch.setenv("RLARK_STATE_DIR", str(tmp_path / "state"))
    access = ClusterAccess.open(str(plain_sandbox.kubeconfig), plain_sandbox.context)
    access.config = dataclasses.replace(access.config, alerts=Thresholds(stall_min_seconds=5, stall_factor=1))
    app = RlarkApp(access)
    bells = []
    app.bell = lambda: bells.append(1)
    try:
        async with app.run_test(size=(180, 40)) as pilot:
            header = lambda: app.screen.query_one(StatusHeader).summary()  # noqa: E731
            await wait_for(pilot, lambda: "critical" in header(), what="alert counts in the header", timeout=40)
            table = app.screen.table

            column = [c.key for c in COLUMNS].index("reason")

            def reason(name: str) -> str:
                rows = [[getattr(c, "plain", c) for c in table.get_row_at(i)] for i in range(table.row_count)]
                return next((row[column] for row in rows if row[0] == name), "")
            await wait_for(pilot, lambda: reason(NAMES["crash"]).startswith("✗ run-crashed"),
                           what="the crashed Job's mark in the list", timeout=40)
            assert bells, "a new critical alert rings the bell"

            await pilot.press("colon", *"alerts", "enter")
            assert isinstance(app.screen, AlertsScreen)
            alerts = app.screen.query_one(LiveTable)

            def row_of(rule: str, job: str) -> str | None:
                return next((key for key, alert in app.screen.alerts.items()
                             if alert.rule == rule and alert.job == job), None)
            await wait_for(pilot, lambda: all(row_of(r, j) for r, j in EXPECTED if r != "job-failed"),
                           what="every alert in :alerts", timeout=40)
            shown = [[getattr(c, "plain", c) for c in alerts.get_row_at(i)] for i in range(alerts.row_count)]
            crash = next(row for row in shown if row[3] == "run-crashed" and row[2] == NAMES["crash"])
            assert crash[1] == "critical" and crash[5] == "firing" and "EmbodiedFSDPActor" in crash[4]
            assert SECRET not in str(shown)

            alerts.select_key(row_of("pod-oomkilled", NAMES["oom"]))
            await pilot.press("enter")
            await wait_for(pilot, lambda: isinstance(app.screen, LogScreen), what="the OOM-killed Pod's logs")
            assert app.screen.previous and app.screen.scope.kind == "pod"
            await pilot.press("escape")
            assert isinstance(app.screen, AlertsScreen)

            # the firing alerts reach `rlark status --long` through the summary, and `:overview` opens one
            summary = tmp_path / "state" / "alerts-summary.json"
            await wait_for(pilot, lambda: summary.exists() and any(
                a["rule"] == "run-crashed" and a["job"] == NAMES["crash"]
                for a in json.loads(summary.read_text()).get("firing", [])), what="the summary's alerts", timeout=40)
            assert SECRET not in summary.read_text()
            await pilot.press("colon", *"overview", "enter")
            assert isinstance(app.screen, OverviewScreen)
            lines = app.screen.query_one(LiveTable)
            crashed = f"0alert\t\t{NAMES['crash']}|run-crashed|{NAMES['crash']}"
            await wait_for(pilot, lambda: crashed in lines.visible_keys, what="the alert in :overview", timeout=20)
            assert "critical run-crashed" in map(str, lines.get_row_at(lines.get_row_index(crashed)))
            lines.select_key(crashed)
            await pilot.press("enter")
            await wait_for(pilot, lambda: isinstance(app.screen, LogScreen), what="the crashed run's log")
            await pilot.press("colon", *"alerts", "enter")
            assert isinstance(app.screen, AlertsScreen)
            alerts = app.screen.query_one(LiveTable)

            alerts.select_key(row_of("run-crashed", NAMES["crash"]))
            await pilot.press("a")
            await wait_for(pilot, lambda: any(a.rule == "run-crashed" and a.state == "acknowledged"
                                              for a in app.screen.alerts.values()),
                           what="the acknowledged alert", timeout=20)
            saved = json.loads((tmp_path / "state" / "alert-acks.json").read_text())
            assert any(key.endswith(f"/run-crashed/{NAMES['crash']}") for key in saved["acks"])
            assert oct((tmp_path / "state" / "alert-acks.json").stat().st_mode & 0o777) == "0o600"
    finally:
        access.close()


def test_wait_fails_early_on_a_critical_alert_with_the_first_failure(faulty, plain_sandbox, capsys, tmp_path,
                                                                     monkeypatch):
    """A crashed run stays Running (its StatefulSet Pod sleeps on): the wait for Succeeded ends at the run-crashed
    (or run-oom) alert, with the diagnosis's first failure, masked; --keep-waiting waits on to the timeout."""
    monkeypatch.setenv("RLARK_STATE_DIR", str(tmp_path / "state"))
    run = cli_runner(plain_sandbox.kubeconfig, capsys)
    failed = run("wait", NAMES["crash"], "--for", "phase=Succeeded", "--timeout", "60s")
    assert failed.code == 1, failed.err
    assert f"job {NAMES['crash']}: critical alert run-" in failed.err
    assert "\nfirst failure: EmbodiedFSDPActor pid 4121 failed first (cuda-oom): torch.OutOfMemoryError" in failed.err
    assert SECRET not in failed.err and OWN not in failed.err and REFERENCED not in failed.err
    waited = run("wait", NAMES["crash"], "--for", "phase=Succeeded", "--timeout", "2s", "--keep-waiting")
    assert waited.code == 2 and "timed out" in waited.err


def test_a_context_or_phase_with_a_line_break_stays_on_its_events_line():
    """A kubeconfig context named with a line break, a bidi control or markup (several contexts: each line starts
    `[context]`), or a Job status phase with a break, forged a second event line in rlark watch and its webhooks."""
    import io
    import json

    from rlark_tui.commands.watch import Printer

    forged = "\n2026-12-01T10:31:02Z critical job-failed other firing: forged"
    for as_json in (False, True):
        out = io.StringIO()
        printer = Printer("k", as_json, [], out=out, context=f"site-b\u202e[@click=app.quit]{forged}")
        printer.emit({"rule": "phase", "job": "demo", "state": f"Running{forged}"},
                     f"2026-12-01T10:31:00Z phase demo - -> Running{forged}")
        lines = out.getvalue().splitlines()
        assert len(lines) == 1
        if as_json:
            assert "\u202e" not in lines[0] and json.loads(lines[0])["context"].startswith("site-b\u202e")
        else:
            assert lines[0].startswith("[site-b\\u202e[@click=app.quit]\\n2026-12-01T10:31:02Z critical")
