"""Fault jobs judged from evidence recorded once on the live sandbox with real Ray (record_faults.py).

Each recording is replayed as a pure function; output-probe variants are derived from the recorded tag-image run.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from rlark_tui.checks import OutputFile, OutputProbe, evaluate, resolve, to_text
from rlark_tui.checks.evidence import evidence_from_dict, latest_start, max_wait_seconds

DATA = Path(__file__).resolve().parent / "data"


def recorded(name: str):
    return evidence_from_dict(json.loads((DATA / f"{name}.json").read_text()))


def _late(evidence):
    return replace(evidence, now=latest_start(evidence) + timedelta(seconds=max_wait_seconds(evidence) + 1))


def _notes(row) -> str:
    return "\n".join(row.all_notes())


def test_image_without_ray_cli():
    report = evaluate(recorded("no-ray"))
    ray = report.row(3)
    assert ray.result == "fail"
    assert "no-ray-actor-0: Ray CLI missing error in the log" in _notes(ray)
    assert any(i.kind == "log" and i.value == "Error: Ray CLI is not found. Please ensure Ray is installed."
               for i in ray.evidence)
    assert "Pod no-ray-actor-0: main container restarted" in _notes(report.row(2))
    assert report.earliest_failing_stage == "ray"
    assert report.exit_code == 1


def test_worker_whose_prepare_script_exits_1():
    report = evaluate(recorded("worker-prepare-exit"))
    pods = report.row(2)
    assert pods.result == "fail"
    assert "worker-prepare-exit-rollout-0: main container restarted" in _notes(pods)
    assert "last Error (exit code 1)" in _notes(pods)
    assert any(i.kind == "log" and i.value == "installing deps" and i.ref == "worker-prepare-exit-rollout-0"
               for i in pods.evidence)
    assert report.earliest_failing_stage == "ray"
    assert report.row(1).result == "pass"


def test_worker_that_cannot_reach_the_head():
    report = evaluate(recorded("unreachable-head"))
    ray = report.row(3)
    assert ray.result == "fail"
    assert "the Header's Ray cluster check failed and the start script went on anyway" in _notes(ray)
    assert any(i.value == "Warning: Ray cluster check failed, proceeding anyway." for i in ray.evidence)
    assert report.earliest_failing_stage == "ray"


def test_run_script_that_never_prints_progress():
    evidence = recorded("no-progress")
    report = evaluate(evidence)
    assert [row.result for row in report.rows[:3]] == ["pass"] * 3
    assert "imageID) is not known yet" in _notes(report.row(4))  # recorded before the sandbox reported imageID
    assert report.row(5).result == "pending"
    late = evaluate(_late(evidence))
    assert late.row(5).result == "fail"
    assert late.earliest_failing_stage == "progress"


def test_tag_image_is_pending_on_check_4_only():
    report = evaluate(recorded("tag-image"))
    assert [row.result for row in report.rows] == ["pass", "pass", "pass", "pending", "pending", "pending"]
    assert "a tag cannot prove what ran" in _notes(report.row(4))
    assert "does not name run tag-image-001: checkpoints must use a per-run prefix" in _notes(report.row(5))
    assert report.exit_code == 3


def test_no_output_written_is_not_pass():
    evidence = recorded("tag-image")
    empty = replace(evidence, outputs=OutputProbe(evidence.outputs.location))
    assert evaluate(empty).row(5).result == "pending"
    assert evaluate(_late(empty)).row(5).result == "fail"


def test_outputs_older_than_the_jobs_start_are_not_pass():
    evidence = recorded("tag-image")
    before = latest_start(evidence) - timedelta(minutes=10)
    old = tuple(OutputFile(f.path, f.size, before, f.sha256) for f in evidence.outputs.files)
    stale = replace(evidence, outputs=OutputProbe(evidence.outputs.location, old))
    row = evaluate(stale).row(5)
    assert row.result == "pending"
    assert "older than the Job's latest start" in _notes(row)
    assert evaluate(_late(stale)).row(5).result == "fail"


@pytest.mark.parametrize("name", sorted(p.stem for p in DATA.glob("*.json")))
def test_recorded_reports_pass_only_on_evidence_that_resolves(name):
    evidence = recorded(name)
    for variant in (evidence, _late(evidence)):
        for row in evaluate(variant).rows:
            if row.result == "pass":
                assert row.evidence
            for item in row.evidence:
                expected = item.sha256 if item.kind == "file" else item.value
                assert resolve(variant, item) == expected, (name, row.id, item)


def test_the_demo_resumed_while_running_passes_with_its_workers_restarted_by_the_resume():
    """Recorded by hand on the Ray sandbox (issue 35 Done-when): `rlark resume demo-ppo --from global_step_20 --yes`
    on the running demo; the Header Pod was replaced, and both workers' Ray nodes ended with their head, exited 0 and
    ran the worker sequence again (their fifth restart: four resumes came before, each restart's instance started
    before the Job's restart and ended after it). The Header log is kept up to step 22, the rest as gathered."""
    evidence = recorded("resumed-demo")
    report = evaluate(evidence)
    assert [row.result for row in report.rows][:5] == ["pass"] * 5, to_text(report)
    notes = _notes(report.row(2))
    for pod, started, ended in (("demo-ppo-rollout-0", "03:46:14", "03:49:29"),
                                ("demo-ppo-env-0", "03:47:00", "03:50:10")):
        container = evidence.container_of(pod)
        assert (container.last_started, container.last_finished) == (f"2026-12-06T{started}Z", f"2026-12-06T{ended}Z")
        assert (f"Pod {pod}: main container restarted 5 time(s), the last with the Job's restart at "
                "2026-12-06T03:49:09Z: its Ray head was replaced, 'Ray worker process exited with code 1', exit 0, "
                "and the worker sequence ran again") in notes
    assert "resume confirmed: from step 20, the first progress row is step 21" in report.row(5).notes
