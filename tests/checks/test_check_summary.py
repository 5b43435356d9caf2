"""The hand-over on the Job (issue 25 item 8) against the shared sandbox over HTTPS: `rlark check demo-ppo
--decision continue --recorder me --save` writes annotation rlark.io/check-summary, which real kubectl reads back;
the Job controller sees the change and does nothing else (same Pod CRs, same data-plane Pods with the same start
times, Tasks not re-synced); `rlark get jobs` shows it in CHECK; `--readonly` refuses before checking anything;
what the summary holds (no evidence, notes or contacts) and how a hand-edited value is read."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from datetime import UTC, datetime

import pytest

from rlark_sandbox.agent import DATA_NAMESPACE
from rlark_tui import cli
from rlark_tui.cluster.access import ClusterAccess
from rlark_tui.cluster.kinds import JOBS
from rlark_tui.model.check_summary import MALFORMED, CheckSummary, annotation_value, check_cell, read_summary
from rlark_tui.model.keys import CHECK_SUMMARY_ANNOTATION
from tests.agent.helpers import wait_for

JOB = "demo-ppo"


def _state(sandbox) -> dict:
    """What a restart or a re-sync would change: each Task as the controller writes it (no status, no
    resourceVersion), each Pod CR's uid, each data-plane Pod's uid, creation and start time, and the Job's spec."""
    store = sandbox.store
    tasks = {}
    for task in store.list("tasks")[0]:
        if (task["metadata"].get("labels") or {}).get("rlinf.io/job") == JOB:
            meta = {k: v for k, v in task["metadata"].items() if k not in ("resourceVersion", "managedFields")}
            tasks[task["metadata"]["name"]] = (meta, task["spec"])
    pods = sorted(p["metadata"]["uid"] for p in store.list("pods")[0]
                  if (p["metadata"].get("labels") or {}).get("rlark.io/task-name", "").startswith(JOB + "-"))
    data = sorted((p["metadata"]["name"], p["metadata"]["uid"], p["metadata"].get("creationTimestamp"),
                   (p.get("status") or {}).get("startTime"))
                  for cluster in store.clusters() for p in store.list("pods", DATA_NAMESPACE, plane=cluster)[0]
                  if p["metadata"]["name"].startswith(JOB + "-"))
    job = store.get("jobs", JOB)
    return {"tasks": tasks, "pods": pods, "data": data, "spec": job["spec"]}


def _rlark(sandbox, capsys, *args) -> tuple[int, str, str]:
    code = cli.main(["--kubeconfig", str(sandbox.kubeconfig), "--context", sandbox.context, *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_check_save_annotates_the_job_without_restarting_it(sandbox, capsys, env):
    wait_for(lambda: len(_state(sandbox)["pods"]) == 3 and len(_state(sandbox)["data"]) == 3, what="demo-ppo's Pods")
    code, out, err = _rlark(sandbox, capsys, "--readonly", "check", JOB, "--decision", "continue", "--recorder",
                            "me", "--save")
    assert code != 0 and "read-only mode: refusing to write the check summary to job demo-ppo" in err
    assert out == "" and not (env / "state" / "checks").exists()  # refused before anything was checked

    before = _state(sandbox)
    try:
        code, out, err = _rlark(sandbox, capsys, "check", JOB, "--decision", "continue", "--recorder", "me",
                                "--save")
        assert "check summary written to job demo-ppo (annotation rlark.io/check-summary)" in err, err
        kube = subprocess.run(["kubectl", "--cache-dir", str(env / "kcache"), "get", "rljob", JOB, "-o",
                               "jsonpath={.metadata.annotations}"], capture_output=True, text=True, timeout=30,
                              env={"PATH": "/usr/bin:/bin", "HOME": str(env), "KUBECONFIG": str(sandbox.kubeconfig)})
        assert kube.returncode == 0, kube.stderr
        summary = json.loads(json.loads(kube.stdout)[CHECK_SUMMARY_ANNOTATION])
        assert summary["recorder"] == "me" and summary["decision"] == "continue" and len(summary["results"]) == 6
        assert set(summary) == {"at", "recorder", "results", "decision", "by"}  # no evidence, notes or contacts

        rv = sandbox.store.get("jobs", JOB)["metadata"]["resourceVersion"]
        wait_for(lambda: (sandbox.agent._synced.get(JOB) or ("",))[0] == rv, what="the Job controller to see it")
        wait_for(lambda: sandbox.agent._statused.get(JOB, ("",))[0] == rv, what="the status pass over the Job")
        assert _state(sandbox) == before  # no restart, no re-sync of the Tasks

        code, out, err = _rlark(sandbox, capsys, "get", "jobs", JOB)
        passed = summary["results"].count("pass")
        assert re.search(rf" {passed}/6 continue \d+s ago me$", out.splitlines()[1].rstrip()), out
    finally:
        access = ClusterAccess.open(str(sandbox.kubeconfig), sandbox.context)
        access.patch(JOBS, JOB, {"metadata": {"annotations": {CHECK_SUMMARY_ANNOTATION: None}}})
        access.close()


def test_the_summary_holds_only_time_recorder_results_and_decision():
    at = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
    summary = CheckSummary(at, "alice", ("pass",) * 6, "continue")
    text = annotation_value(summary)
    assert json.loads(text) == {"at": "2026-12-01T10:00:00Z", "recorder": "alice", "results": ["pass"] * 6,
                                "decision": "continue", "by": "rlark"}
    back = read_summary({CHECK_SUMMARY_ANNOTATION: text})
    assert back == summary and back.cell(datetime(2026, 12, 1, 12, 5, tzinfo=UTC)) == \
        "6/6 continue 2h ago alice"
    for bad in ("", "[]", '{"at":"x","results":["pass"]}', '{"at":"2026-12-01T10:00:00Z","results":["ok"]}',
                '{"at":"2026-12-01T10:00:00Z","results":[]}', "x" * 5000,
                '{"at":"2026-12-01T10:00:00Z","results":["pass"],"decision":"rm -rf"}',
                '{"at":"2026-12-01T10:00:00Z","results":["pass"],"recorder":["a"]}',
                '{"at":"2026-12-01T10:00:00Z","results":["pass"],"by":7}'):
        assert read_summary({CHECK_SUMMARY_ANNOTATION: bad}) is None, bad
    odd = read_summary({CHECK_SUMMARY_ANNOTATION: json.dumps(
        {"at": "2026-12-01T10:00:00Z", "results": ["fail"], "recorder": "\x1b]0;x\x07" + "y" * 99})})
    assert odd.decision == "" and "\x1b" not in odd.recorder and len(odd.recorder) == 64


NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def _cell(**fields) -> str:
    data = {"at": "2026-12-01T10:00:00Z", "recorder": "alice", "results": ["pass"] * 6, "decision": "continue",
            "by": "rlark", **fields}
    return check_cell({CHECK_SUMMARY_ANNOTATION: json.dumps({k: v for k, v in data.items() if v is not None})}, NOW)


def test_a_summary_is_shown_as_a_claim_and_only_rlarks_own_shows_its_results():
    assert _cell() == "6/6 continue 2h ago alice"
    assert _cell(at="2026-12-01T12:04:00Z") == "6/6 continue 0s ago alice"  # within the clock skew
    assert _cell(at="2026-12-04T12:00:00Z") == "future? in 3d alice"
    assert _cell(by=None) == "claim? 2h ago alice"  # no writer: a hand-made annotation
    assert _cell(by="ci-bot") == "claim? 2h ago alice"
    assert _cell(results=["pass", "ok"]) == MALFORMED
    assert _cell(decision="ship it") == MALFORMED
    assert check_cell({CHECK_SUMMARY_ANNOTATION: "{not json"}, NOW) == MALFORMED
    assert check_cell({CHECK_SUMMARY_ANNOTATION: ["x"]}, NOW) == MALFORMED
    assert check_cell({}, NOW) == check_cell(None, NOW) == ""


@pytest.mark.parametrize(("fields", "shown"), [
    ({"at": "2099-01-01T00:00:00Z", "by": "rlark"}, r"future\? in \d+d alice"),
    ({"at": "2026-01-01T00:00:00Z"}, r"claim\? \d+d ago alice"),
    ({"at": "2026-01-01T00:00:00Z", "by": "rlark", "results": "pass"}, r"malformed\?"),
])
def test_get_jobs_flags_a_summary_it_cannot_show_as_a_pass(sandbox, capsys, env, fields, shown):
    data = {"recorder": "alice", "results": ["pass"] * 6, "decision": "continue", **fields}
    access = ClusterAccess.open(str(sandbox.kubeconfig), sandbox.context)
    try:
        access.patch(JOBS, JOB, {"metadata": {"annotations": {CHECK_SUMMARY_ANNOTATION: json.dumps(data)}}})
        code, out, err = _rlark(sandbox, capsys, "get", "jobs", JOB)
        assert code == 0, err
        row = out.splitlines()[1].rstrip()
        assert re.search(rf" {shown}$", row) and "6/6" not in row, out
    finally:
        access.patch(JOBS, JOB, {"metadata": {"annotations": {CHECK_SUMMARY_ANNOTATION: None}}})
        access.close()
