"""The run check's progress row confirms a resume (issue 35 item 4): with runner.resume_dir on the Header's run
command, it passes on RLinf's resume line and a first progress row of N+1 (the sandbox demo's own output: its
resume line and metric tables), and otherwise fails quoting the line it saw."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from rlark_sandbox.demo_workload import metric_table, resume, write_checkpoint
from rlark_tui.checks import PodEvent, PodLog, evaluate, logscan, to_text
from rlark_tui.jobspec.resume import resume_dir_of

from . import fixtures as fx
from .scenarios import EMBODIED_RESUME, REASONING, REASONING_RESUME, SCENARIOS, _resumed, _tables


def _progress_row(evidence):
    report = evaluate(evidence, fx.DECIDED)
    return report, report.rows[4]


def test_the_demo_workloads_own_resume_passes(tmp_path, capsys):
    actor = write_checkpoint(tmp_path, 20, [0.5] * 8)
    resume(str(actor.parent))
    said = capsys.readouterr().out.splitlines()
    tables = [line for step in (21, 22) for line in metric_table(step, 40, 2.0, {"time/step": 1.0},
                                                                   start_step=20).splitlines()]
    report, row = _progress_row(_resumed(said + tables, resume_dir=str(actor.parent)))
    assert row.result == "pass", row.findings
    assert "resume confirmed: from step 20, the first progress row is step 21" in row.notes
    assert f"Resuming training from checkpoint directory {actor.parent}." in [e.value.split("] ")[-1]
                                                                               for e in row.evidence]


def test_a_resume_that_did_not_happen_fails_quoting_the_line_seen():
    _, row = _progress_row(SCENARIOS["resume dir set, run started from scratch"][0])
    assert row.result == "fail" and row.stage == "progress"
    message = next(f.message for f in row.findings if f.result == "fail")
    assert message.startswith("runner.resume_dir is set but RLinf printed no 'Resuming training from checkpoint "
                              "directory …' or 'Setting global step to N' before its first progress row: ")
    assert message.endswith("│ Global Step: 1/10 │ Progress: ████░░░░░░░░░░░░░░░░░░░░░░░░░░░░░░░░░░░░ │ 10.0% │")
    _, wrong = _progress_row(SCENARIOS["resume line, then step 1"][0])
    assert any(f.message.startswith("resumed from step 2 but the first progress row after it is step 1, not 3: "
                                    "│ Global Step: 1/10 │") for f in wrong.findings)
    _, other = _progress_row(SCENARIOS["resumed at another step"][0])
    assert [f.message for f in other.findings if f.result == "fail"] == [
        "resumed at the wrong step: runner.resume_dir names step 2, the log says: Setting global step to 3"]
    report, _ = _progress_row(SCENARIOS["resume dir not a global_step_N"][0])
    assert ("runner.resume_dir=/out/ppo-demo-1/latest is not a global_step_<N> directory: RLinf takes N from the "
            "text after global_step_") in to_text(report)


def test_a_reasoning_bar_redrawn_on_one_line_counts_each_redraw():
    bar = ("Global Step:  20%|██        | 2/10 [00:00<?, ?it/s]\rGlobal Step:  30%|███       | 3/10 "
           "[00:05<00:35,  5.00s/it, step_time=5.0]")
    hit, step, text = logscan.first_step([bar], skip=2)
    assert (hit.line, step) == (1, 3) and text.startswith("Global Step: 30%|")
    report, row = _progress_row(_resumed(REASONING_RESUME + [bar], launch_record=REASONING))
    assert "resume confirmed: from step 2, the first progress row is step 3" in row.notes
    jumped = bar.replace("3/10", "5/10")
    _, row = _progress_row(_resumed(REASONING_RESUME + [jumped], launch_record=REASONING))
    assert any("first progress row after it is step 5, not 3: Global Step: 30%|███ | 5/10" in f.message
               for f in row.findings)


def test_the_run_commands_resume_dir_as_the_shell_reads_it():
    assert resume_dir_of("python t.py runner.resume_dir='/o/x y/global_step_2' a=1") == "/o/x y/global_step_2"
    assert resume_dir_of("python t.py a=1") is None
    assert resume_dir_of("python t.py xrunner.resume_dir=/a") is None


RESTARTED = fx.START + timedelta(seconds=60)


def _workers_restarted_with_the_job(exit_code: int = 0, ended: timedelta = timedelta(seconds=8),
                                    exited: str = "Ray worker process exited with code 1",
                                    started: timedelta = -timedelta(seconds=50)):
    """The resumed demo after an Edit & Restart of the running Job: the Header Pod was replaced, and each worker's
    previous instance ended as the sandbox's (and the platform's) worker sequence does when its head goes."""
    evidence = _resumed([EMBODIED_RESUME] + _tables(3, 4))
    job = dict(evidence.job, metadata=dict(evidence.job["metadata"], annotations={
        "rlark.io/restarted-at": RESTARTED.isoformat().replace("+00:00", "Z")}))
    workers = ("demo-ppo-rollout-0", "demo-ppo-env-0")
    previous = tuple(PodLog(pod, tuple(fx.worker_lines(rank) + [
        "2026-11-29 12:01:05,289\tERR scripts.py:1315 -- Remaining processes will be killed.", exited,
        "Stopping Ray worker..."]), instance=0, current=False, source="data-plane")
        for rank, pod in enumerate(workers, 1))
    containers = tuple(replace(c, restart_count=1, last_exit_code=exit_code,
                               last_reason="Completed" if exit_code == 0 else "Error",
                               last_started=(RESTARTED + started).isoformat(),
                               last_finished=(RESTARTED + ended).isoformat()) if c.pod in workers else c
                       for c in evidence.containers)
    events = {pod: (PodEvent("Warning", "BackOff", f"Back-off restarting failed container main in pod {pod}"),)
              for pod in workers}
    return replace(evidence, job=job, logs=evidence.logs + previous, containers=containers, events=events)


def test_workers_that_restarted_with_the_jobs_own_restart_pass_the_pods_row():
    """Done-when: `rlark check` passes the resume of the running demo. rlark resume replaces the Header Pod; each
    worker's Ray node ends with its head and the platform's worker sequence exits 0 and runs again (restartPolicy
    Always): one restart and a BackOff event per worker that are the resume's own, not a crash."""
    report = evaluate(_workers_restarted_with_the_job(), fx.DECIDED)
    assert [row.result for row in report.rows] == ["pass"] * 6, to_text(report)
    assert ("Pod demo-ppo-env-0: main container restarted 1 time(s), the last with the Job's restart at "
            "2026-11-29T12:01:00Z: its Ray head was replaced, 'Ray worker process exited with code 1', exit 0, and "
            "the worker sequence ran again") in report.row(2).notes
    assert "resume confirmed: from step 2, the first progress row is step 3" in report.row(5).notes


def test_a_worker_restart_not_of_the_jobs_restart_still_fails():
    """A non-zero exit; an instance that ended before the Job's restart; one started after it (a worker failing again
    and again with exit 0 after the resume); no worker exit line; no restart of the Job; a container still waiting."""
    for evidence, said in (
            (_workers_restarted_with_the_job(exit_code=1), "restarted 1 time(s), last Error (exit code 1)"),
            (_workers_restarted_with_the_job(ended=-timedelta(seconds=30)), "restarted 1 time(s), last Completed"),
            (_workers_restarted_with_the_job(started=timedelta(seconds=5)), "restarted 1 time(s), last Completed"),
            (_workers_restarted_with_the_job(exited="Stopping Ray worker..."), "restarted 1 time(s), last Completed")):
        pods = evaluate(evidence).row(2)
        assert pods.result == "fail"
        assert any(f"Pod demo-ppo-env-0: main container {said}" in f.message for f in pods.findings), pods.findings
        assert any("Pod demo-ppo-env-0: BackOff" in f.message for f in pods.findings)
    unrestarted = _workers_restarted_with_the_job()
    unrestarted = replace(unrestarted, job=dict(unrestarted.job, metadata=dict(unrestarted.job["metadata"],
                                                                              annotations={})))
    assert evaluate(unrestarted).row(2).result == "fail"
    crashing = _workers_restarted_with_the_job()
    crashing = replace(crashing, containers=tuple(replace(c, state="waiting", reason="CrashLoopBackOff")
                                                  for c in crashing.containers))
    assert evaluate(crashing).row(2).result == "fail"
