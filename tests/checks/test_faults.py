"""Issue 8's fault cases as pure functions on evidence written from the specs' log lines: verdict, stage, evidence."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from rlark_tui.checks import MainContainer, OutputProbe, PodLog, RayStatus, evaluate

from . import fixtures as fx

LATE = fx.START + timedelta(minutes=11)
"""After the fixtures' launch-record max wait (600 s)."""


def _results(report) -> list[str]:
    return [row.result for row in report.rows]


def test_healthy_demo_passes_all_six_with_exit_0():
    report = evaluate(fx.healthy(), fx.DECIDED)
    assert _results(report) == ["pass"] * 6
    assert report.exit_code == 0
    assert report.earliest_failing_stage is None


def test_worker_prepare_script_exiting_1_fails_in_the_start_sequence():
    current = ["RLINF_NODE_RANK: 2", "Executing prepare script..."]
    previous = PodLog("demo-ppo-env-0", ("RLINF_NODE_RANK: 2", "Executing prepare script...",
                                         "install step failed"), instance=1, current=False, source="data-plane")
    evidence = fx.with_log(fx.healthy(), "demo-ppo-env-0", current, instance=2)
    containers = tuple(c if c.pod != "demo-ppo-env-0" else
                       MainContainer("demo-ppo-env-0", 2, "waiting", "CrashLoopBackOff", last_exit_code=1)
                       for c in evidence.containers)
    head = fx.head_lines()[:5] + ["Found 3 total nodes, 2 of which are alive.", "Current node count: 2",
                                  "Time remaining: 880s"]
    evidence = fx.with_log(evidence, "demo-ppo-actor-0", head)
    evidence = replace(evidence, containers=containers, logs=evidence.logs + (previous,),
                       ray=RayStatus(alive_nodes=2))
    report = evaluate(evidence)
    pods = report.row(2)
    assert pods.result == "fail"
    assert any("demo-ppo-env-0: main container restarted 2 time(s), last exit (exit code 1)" in n for n in pods.all_notes())
    assert any(i.kind == "log" and i.value == "install step failed" and i.instance == 1 for i in pods.evidence)
    assert report.earliest_failing_stage == "ray"
    assert report.exit_code == 1
    assert report.row(3).result == "pending"  # within the max wait the missing node is not yet a timeout


def test_run_script_without_progress_is_pending_then_fails_at_the_max_wait():
    lines = fx.head_lines()
    lines = lines[:lines.index("Executing run script...") + 3]
    evidence = fx.with_log(fx.healthy(), "demo-ppo-actor-0", lines)
    early = evaluate(evidence)
    assert early.row(5).result == "pending"
    assert early.exit_code == 3
    late = evaluate(replace(evidence, now=LATE))
    assert late.row(5).result == "fail"
    assert late.earliest_failing_stage == "progress"
    assert any("no progress matching" in n and "max wait passed" in n for n in late.row(5).all_notes())


def test_image_without_ray_cli_fails_check_3_with_the_log_line():
    image = "registry.example.com/rlinf-no-ray@sha256:" + "cd" * 32
    job = fx.job(image=image)
    lines = ["RLINF_NODE_RANK: 0", "Executing prepare script...", "preparing",
             "Error: Ray CLI is not found. Please ensure Ray is installed."]
    evidence = fx.healthy(job=job, tasks=fx.tasks(job), submitted_spec=job["spec"], ray=RayStatus(error="refused"))
    evidence = fx.with_log(evidence, "demo-ppo-actor-0", lines)
    report = evaluate(evidence)
    ray = report.row(3)
    assert ray.result == "fail"
    hit = [i for i in ray.evidence if i.kind == "log" and "Ray CLI is not found" in i.value]
    assert hit and hit[0].ref == "demo-ppo-actor-0" and hit[0].line == 4
    assert report.earliest_failing_stage == "ray"


def test_worker_that_cannot_reach_the_head_fails_on_the_ignored_cluster_check():
    lines = fx.head_lines()
    start = lines.index("Found 3 total nodes, 3 of which are alive.")
    lines[start:start + 4] = ["Found 1 total nodes, 1 of which are alive.", "Current node count: 1",
                              "Error: Cluster did not become ready within 15 minutes (required 3 nodes).",
                              "Ray cluster check failed.", "Warning: Ray cluster check failed, proceeding anyway."]
    worker = fx.worker_lines(1)[:4] + [
        f"Waiting for head to be reachable at demo-ppo-actor-ray-head:6379... (attempt {n})" for n in range(1, 4)]
    evidence = fx.with_log(fx.healthy(ray=RayStatus(alive_nodes=1)), "demo-ppo-actor-0", lines)
    evidence = fx.with_log(evidence, "demo-ppo-rollout-0", worker)
    report = evaluate(evidence)
    ray = report.row(3)
    assert ray.result == "fail"
    assert any(i.value == "Warning: Ray cluster check failed, proceeding anyway." for i in ray.evidence)
    assert report.earliest_failing_stage == "ray"


def test_tag_image_leaves_check_4_pending_not_pass():
    job = fx.job(image="registry.example.com/rlinf:v0.9")
    evidence = fx.healthy(job=job, tasks=fx.tasks(job), submitted_spec=job["spec"])
    report = evaluate(evidence)
    assert report.row(4).result == "pending"
    assert any("a tag cannot prove what ran without a build record naming the pulled digest "
               f"({fx.DIGEST})" in n for n in report.row(4).all_notes())
    assert any(i.kind == "container" and i.path == "imageID" and i.value == fx.DIGEST for i in report.row(4).evidence)
    assert report.row(6).result == "pending"
    assert report.exit_code == 3
    assert report.earliest_failing_stage is None


def test_no_output_written_never_passes_check_5():
    evidence = fx.healthy(outputs=OutputProbe("/out/ppo-demo-1"))
    assert evaluate(evidence).row(5).result == "pending"
    late = evaluate(replace(evidence, now=LATE))
    assert late.row(5).result == "fail"
    assert late.earliest_failing_stage == "outputs"


def test_a_checkpoint_log_line_alone_is_pending_not_pass():
    report = evaluate(fx.healthy(outputs=OutputProbe("/out/ppo-demo-1")))
    row = report.row(5)
    assert row.result == "pending"
    assert any(i.kind == "log" and i.value == "Saving checkpoint at step 1." for i in row.evidence)
    assert any("a log line is not an output" in n for n in row.all_notes())


def test_outputs_older_than_the_jobs_start_do_not_pass():
    evidence = fx.healthy(outputs=fx.outputs(mtime=fx.START - timedelta(hours=1)))
    row = evaluate(evidence).row(5)
    assert row.result == "pending"
    assert any("older than the Job's latest start" in n for n in row.all_notes())
    assert evaluate(replace(evidence, now=LATE)).row(5).result == "fail"


def test_output_path_not_visible_from_here_is_pending_for_an_admin():
    row = evaluate(fx.healthy(outputs=OutputProbe("s3://bucket/run", error="object storage: not listed"))).row(5)
    assert row.result == "pending"
    assert any("to confirm: a platform admin" in n for n in row.all_notes())
