"""view/overview.py's lines (issue 36 item 5) for what the sandbox does not make: an image pull under way on a
Pending Task (`pullProgress`), a Node offline and under disk pressure, and check summaries that fail, are stale or
were not written by rlark; cluster text in them is cleaned and masked, and the lines come in their order."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from rlark_tui.commands.nodeinfo import listed_index
from rlark_tui.model.check_summary import CheckSummary, annotation_value
from rlark_tui.model.keys import CHECK_SUMMARY_ANNOTATION
from rlark_tui.view.overview import attention_lines, target_of
from tests.tui.tui_factories import job_dict, task_dict

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def _summary(job: dict, at: datetime, results: tuple[str, ...], decision: str = "continue", by: str = "rlark"):
    job["metadata"]["annotations"] = {CHECK_SUMMARY_ANNOTATION: annotation_value(
        CheckSummary(at, "alice", results, decision, by))}
    job["status"]["startTime"] = "2026-11-29T08:00:00Z"
    return job


def _index():
    pulling = job_dict("pulling", phase="Pending", roles=(("actor", "Actor", "Actor", "gpu-a1", "rlark-gpu-a"),))
    task = task_dict("pulling", "actor", "rlark-gpu-a", phase="Pending")
    task["spec"]["role"] = "Actor"
    task["status"]["pullProgress"] = [{"image": "registry.example/rlinf:v2", "downloaded": 3 << 29,
                                       "total": 4 << 30, "speed": 12 << 20, "status": "Downloading",
                                       "message": "layer 3/7 \x1b[2J token=hf_abcdefghijklmnopqrstuvwx"}]
    jobs = [pulling,
            _summary(job_dict("failing"), NOW - timedelta(hours=1), ("pass", "fail", "pass")),
            _summary(job_dict("stale"), NOW - timedelta(hours=5), ("pass", "pass")),
            _summary(job_dict("fresh"), NOW - timedelta(hours=1), ("pass", "pass")),
            _summary(job_dict("claimed"), NOW - timedelta(hours=1), ("pass",), by="someone")]
    node = {"metadata": {"name": "gpu-a9", "namespace": "rlark-gpu-a"}, "spec": {},
            "status": {"phase": "Offline", "diskPressure": True,
                       "events": [{"type": "Warning", "reason": "NodeNotReady", "message": "kubelet stopped posting"}]}}
    healthy = {"metadata": {"name": "gpu-a1", "namespace": "rlark-gpu-a"}, "status": {"phase": "Online"}}
    return listed_index(jobs=jobs, tasks=[task], nodes=[node, healthy])


def test_lines_say_why_and_come_in_order():
    lines = attention_lines(_index(), NOW, [])
    shown = {line.cells[1]: line.cells for line in lines}
    assert [target_of(line.key) for line in lines] == [
        ("node", "", "rlark-gpu-a/gpu-a9"), ("job", "", "pulling"), ("check", "", "claimed"), ("check", "", "failing"),
        ("check", "", "stale")]
    assert shown["rlark-gpu-a/gpu-a9"][2:4] == ("offline, disk pressure", "NodeNotReady: kubelet stopped posting")
    kind, _, state, why, _ = shown["pulling"]
    assert (kind, state) == ("Job", "pulling image")
    assert why.startswith("Actor: Downloading registry.example/rlinf:v2 1.5 GiB/4.0 GiB at 12.0 MiB/s: layer 3/7 token=***")
    assert "\x1b" not in why and "hf_abcdefghijklmnopqrstuvwx" not in why
    assert shown["failing"][2:4] == ("failing", "2/3 continue 60m ago alice; failed C2")
    assert shown["stale"][2:4] == ("stale", "2/2 continue 5h ago alice; recorded before the Job started")
    assert shown["claimed"][2] == "not rlark's" and shown["claimed"][3].startswith("claim? ")


def test_a_summary_that_is_no_summary_is_flagged_not_left_out():
    """Issue 33, a twenty-third round (check summaries shown as claims, by generated annotations): a Running Job
    whose rlark.io/check-summary rlark cannot read (no JSON, a field of the wrong type, a date with no meaning) was
    left out of `rlark status --long` and :overview, where a claim not rlark's is listed; it is listed as malformed,
    as the CHECK column shows it."""
    jobs = []
    for name, value in (("garbled", "{6/6 continue"), ("typed", '{"at": 5, "results": ["pass"], "by": "rlark"}'),
                        ("dated", '{"at": "2026-13-45T99:00:00Z", "results": ["pass"], "by": "rlark"}')):
        job = job_dict(name)
        job["metadata"]["annotations"] = {CHECK_SUMMARY_ANNOTATION: value}
        jobs.append(job)
    lines = attention_lines(listed_index(jobs=jobs, tasks=[], nodes=[]), NOW, [])
    assert sorted(line.cells[1:4] for line in lines) == [
        ("dated", "malformed", "malformed?"), ("garbled", "malformed", "malformed?"), ("typed", "malformed", "malformed?")]
