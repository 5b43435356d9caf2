"""Table test of the six checks over named evidence scenarios, and the walk over every report (C7, C10)."""

from __future__ import annotations

import copy
import json

import pytest

from rlark_tui.checks import evaluate, resolve, to_json_text, to_markdown, to_text
from rlark_tui.checks.evidence import evidence_from_dict, evidence_to_dict

from . import fixtures as fx
from .scenarios import NO_HAND_OVER, SCENARIOS, late

ALL = {**SCENARIOS, **NO_HAND_OVER}


def _judge(name, evidence):
    return evaluate(evidence, None if name in NO_HAND_OVER else fx.DECIDED)


@pytest.mark.parametrize("name", list(ALL))
def test_scenario_verdicts(name):
    evidence, expected, stage = ALL[name]
    report = _judge(name, evidence)
    assert [row.result for row in report.rows] == expected, [row.all_notes() for row in report.rows]
    assert report.earliest_failing_stage == stage
    assert report.exit_code == (1 if "fail" in expected else 3 if "pending" in expected else 0)


def _every_report():
    for name, (evidence, _, _) in ALL.items():
        yield name, evidence, _judge(name, evidence)
        yield name + " (late)", late(evidence), _judge(name, late(evidence))


def test_no_row_ever_passes_without_evidence():
    walked = 0
    for name, _, report in _every_report():
        for row in report.rows:
            walked += 1
            if row.result == "pass":
                assert row.evidence, f"{name}: check {row.id} passes with no evidence"
    assert walked == 6 * 2 * len(ALL)


def test_every_evidence_item_resolves_to_what_it_says():
    for name, evidence, report in _every_report():
        for row in report.rows:
            for item in row.evidence:
                if item.kind == "object" and item.value == "not found":
                    assert evidence.job is None
                    continue
                shown = resolve(evidence, item)
                if item.kind == "file":
                    assert shown == item.sha256, (name, item)
                else:
                    assert shown == item.value, (name, row.id, item)


def test_failing_and_pending_rows_say_why():
    for name, _, report in _every_report():
        for row in report.rows:
            if row.result != "pass":
                assert any(f.result == row.result for f in row.findings), (name, row.id)
            if row.result == "fail":
                assert row.stage, (name, row.id)


def test_no_secret_reaches_any_rendering():
    for name, _, report in _every_report():
        for text in (to_text(report), to_markdown(report), to_markdown(report, "zh"), to_json_text(report)):
            assert "hf_secretvalue" not in text, name
            assert "abcd1234secret" not in text, name


def test_a_secret_env_value_the_run_script_holds_reaches_no_rendering():
    """Issue 33 (secrets in another shape), found with issue 34's profile of the run check: the check masked the
    Job's own secret env values in its logs and events, but its evidence quotes the Job's spec itself (the run
    script, annotations), shown through redact_text, which masks only what looks like a secret. A run script that
    logs in with a WANDB_API_KEY's value showed it in the Markdown record (the header's run script and the
    evidence), in --format json and in the saved record. Every text of the report masks the Job's secret values."""
    value = "q8ZtX3vLmN0pR7sW"
    job = copy.deepcopy(fx.job())
    head = job["spec"]["tasks"][0]
    head["kubernetes"]["workload"]["template"]["spec"]["containers"][0]["env"].append(
        {"name": "WANDB_API_KEY", "value": value})
    head["runScript"] = f"wandb login {value}\n" + head["runScript"]
    evidence = fx.healthy(job=job, tasks=fx.tasks(job), submitted_spec=copy.deepcopy(job["spec"]))
    report = evaluate(evidence, fx.DECIDED)
    assert [row.result for row in report.rows] == ["pass"] * 6
    for text in (to_text(report), to_markdown(report), to_markdown(report, "zh"), to_json_text(report)):
        assert value not in text
    assert report.facts.run_script.startswith("wandb login ***\npython -m rlark_sandbox.demo_workload")
    assert all(resolve(evidence, item) == item.value for item in report.rows[0].evidence)


def test_the_headers_resolved_config_is_read_once_for_check_4(monkeypatch):
    """Issue 34 (bench checkeval): check 4 read RLinf's resolved config from the Header's log three times, once for
    each comparison that uses it (output prefix, config, env overrides), each a scan to the block and a bounded
    JSON parse of it (load_json, with its depth walk since issue 33); the record's header reads it once more."""
    from rlark_tui.checks import logscan

    calls = []
    read = logscan.resolved_config
    monkeypatch.setattr(logscan, "resolved_config", lambda lines, start=0: calls.append(start) or read(lines, start))
    report = evaluate(fx.healthy(), fx.DECIDED)
    assert [row.result for row in report.rows] == ["pass"] * 6
    assert len(calls) == 2
    assert any(item.kind == "log" and "{" == item.value for item in report.rows[3].evidence)


def test_evidence_round_trips_through_json_for_offline_judging():
    for name, (evidence, expected, _) in ALL.items():
        again = evidence_from_dict(json.loads(json.dumps(evidence_to_dict(evidence))))
        assert again == evidence, name
        assert [row.result for row in _judge(name, again).rows] == expected


def test_many_tasks_missing_from_the_submitted_spec_name_twenty_and_count_the_rest():
    """A Job's author sets how many tasks its spec and its submitted spec have: each submitted task missing from
    the live Job quoted both lists of names, so 3,000 of each were 6,000 evidence items of 3,000 names (14 s and
    155 MB of `rlark check` and of the run-check screen's worker; 15,000 were minutes and GBs), and the Ray row
    summed the replicas before each task again (8 s more). Here 300 of each, fifteen times MAX_NAMED."""
    from rlark_tui.checks.rules import MAX_NAMED

    evidence = fx.healthy()
    live = {**evidence.job, "spec": {**evidence.job["spec"], "tasks": [{"name": f"l{i}"} for i in range(300)]}}
    submitted = {"tasks": [{"name": f"s{i}"} for i in range(300)]}
    report = evaluate(fx.replace(evidence, job=live, submitted_spec=submitted), fx.DECIDED)
    row = report.rows[0]
    notes = row.all_notes()
    assert row.result == "fail" and len(row.evidence) < 100
    assert f"… and {300 - MAX_NAMED:,} more submitted tasks are missing from the live Job" in str(notes)
    assert f"… and {300 - MAX_NAMED:,} more tasks are in the live Job but were not submitted" in str(notes)


def test_a_pod_of_thousands_of_events_names_twenty_and_counts_the_rest():
    """Issue 33, an eleventh round, a hostile data plane's events: every Warning event of a Pod was an evidence item
    and a failure line (each BackOff scanning the log again), and the image-pull rule one more each: 40,000 events
    on each of three Pods were 120,000 lines, 29 MB of `rlark check`'s text, made again at every gather of the
    run-check screen (5.5 s). A failure among them still fails the row. Here 2,000 on each."""
    from rlark_tui.checks.evidence import PodEvent
    from rlark_tui.checks.rules import MAX_NAMED

    evidence = fx.healthy()
    names = [pod["spec"]["podName"] for pod in evidence.pods]
    events = tuple(PodEvent("Warning", "DNSConfigForming", f"nameserver {i}") for i in range(2_000)) + (
        PodEvent("Warning", "FailedMount", "no volume"), PodEvent("Warning", "Failed", "Failed to pull image x"))
    report = evaluate(fx.replace(evidence, events={name: events for name in names}), fx.DECIDED)
    pods, ray = report.rows[1], report.rows[2]
    assert pods.result == "fail" and "FailedMount: no volume" in str(pods.all_notes())
    assert ray.result == "fail" and "image pull error" in str(ray.all_notes())
    for row in (pods, ray):
        assert len(row.evidence) < 100 and len(str(row.all_notes())) < 20_000, (row.title, len(row.evidence))
    assert f"… and {2_002 - MAX_NAMED:,} more Warning events" in str([item.value for item in pods.evidence])
    assert len(to_text(report)) < 50_000


@pytest.mark.parametrize("count", ["9" * 5_000, "٣"])
def test_a_node_count_the_application_reports_that_is_no_number_fails_its_row(count):
    """Issue 33, round H33, a Job's code prints RLinf's start line: 'RLinf is running on a cluster with <5,000
    digits> nodes' was read with int() and raised ValueError, so `rlark check`, `rlark wait --for check=pass` and the
    run-check screen gave no answer for that Job, and '٣' (an Arabic-Indic 3) was read as the Job's 3 Pods and
    passed. The count is read as every number from the cluster is (text.parse.ascii_int); one that is not fails
    the application's row."""
    lines = [line.replace("cluster with 3 nodes", f"cluster with {count} nodes") for line in fx.head_lines()]
    report = evaluate(fx.with_log(fx.healthy(), "demo-ppo-actor-0", lines), fx.DECIDED)
    app = next(row for row in report.rows if row.id == 4)
    assert app.result == "fail" and "the application reports a node count that is no number" in str(app.all_notes())
    assert "4. FAIL" in to_text(report)


@pytest.mark.parametrize("where", ["live task", "submitted task", "live container", "submitted container"])
def test_a_task_or_container_named_by_no_text_fails_the_spec_row_and_raises_nothing(where):
    """Issue 33, round H33, a Job author's annotation (the submitted spec rlark compares with is
    rlark.io/submitted-spec, which whoever may edit the Job writes) or a hostile control plane's Job: a task or
    container whose name was a list or an object raised TypeError (unhashable) in the spec comparison, so `rlark
    check`, `rlark wait --for check=pass` and the run-check screen gave no answer for the Job. Such a name fails
    the row, and the rest is compared."""
    evidence = fx.healthy()
    job, submitted = copy.deepcopy(evidence.job), copy.deepcopy(evidence.submitted_spec)
    spec = job["spec"] if where.startswith("live") else submitted
    task = spec["tasks"][0]
    target = task["kubernetes"]["workload"]["template"]["spec"]["containers"][0] if "container" in where else task
    target["name"] = ["forged", {"x": 1}]
    report = evaluate(fx.replace(evidence, job=job, submitted_spec=submitted), fx.DECIDED)
    row = report.rows[0]
    assert row.result == "fail" and "a name that is not text" in str(row.all_notes()), row.all_notes()
    assert "1. FAIL" in to_text(report)


@pytest.mark.parametrize("spec", ["tasks", ["tasks"], 5])
def test_a_live_spec_that_is_no_mapping_fails_the_spec_row_and_raises_nothing(spec):
    """Issue 33, a twentieth round (generated answers through a mutating proxy), a hostile control plane's Job: a
    Job whose spec was a string, a list or a number raised AttributeError in the spec comparison (`live.get`), so
    `rlark check` and the TUI's run check of that Job gave no answer (the TUI's evidence read printed asyncio's
    traceback). The live spec is then no task: each submitted one is missing, and the row fails."""
    evidence = fx.healthy()
    job = {**copy.deepcopy(evidence.job), "spec": spec}
    report = evaluate(fx.replace(evidence, job=job), fx.DECIDED)
    row = report.rows[0]
    assert row.result == "fail" and "is missing from the live Job" in str(row.all_notes()), row.all_notes()
