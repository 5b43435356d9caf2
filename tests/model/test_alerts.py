"""The alert rules (alerting/rules.py) over recorded log text and platform objects, and the book that fires each
alert once, resolves it and keeps acknowledged ones silent."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from rlark_tui.alerting import rules as A
from rlark_tui.alerting import thresholds as T
from rlark_tui.telemetry.progress import latest_progress
from rlark_tui.telemetry.sample import gpu_mem_total_mib, gpu_percent, parse_nvidia_smi, usage_sample
from rlark_tui.text.sanitize import clean

DATA = Path(__file__).parent / "data"
T0 = datetime.fromisoformat("2026-12-01T03:00:00+00:00").timestamp()


def recorded(name: str) -> list[tuple[float, str]]:
    lines = []
    for raw in (DATA / name).read_text().splitlines():
        stamp, _, text = raw.partition(" ")
        lines.append((datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp(), text))
    return lines


def job(name="ppo", phase="Running", stopped=False, message="", uid="u-1"):
    return {"metadata": {"name": name, "uid": uid},
            "spec": {"stopped": stopped, "tasks": [{"name": "actor", "head": True, "replicas": 1},
                                                   {"name": "rollout", "replicas": 1}]},
            "status": {"phase": phase, "message": message}}


def task(name, phase, namespace="rlark-gpu-a"):
    return {"metadata": {"name": name, "namespace": namespace}, "status": {"phase": phase}}


def pod_cr(name, task_name, phase="Running", pod_name=None, namespace="rlark-gpu-a"):
    return {"metadata": {"name": name, "namespace": namespace, "labels": {"rlark.io/task-name": task_name}},
            "spec": {"podName": pod_name or f"{task_name}-0"}, "status": {"phase": phase}}


def plane_pod(restarts=0, waiting=None, last=None, phase="Running", reason=None, conditions=None, created=None):
    status = {"name": "main", "restartCount": restarts, "state": {"running": {}}}
    if waiting:
        status["state"] = {"waiting": {"reason": waiting, "message": "back-off 10s restarting failed container"}}
    if last:
        status["lastState"] = {"terminated": {"reason": last, "exitCode": 137,
                                              "finishedAt": "2026-12-01T03:09:00Z"}}
    pod = {"metadata": {"name": "x", "creationTimestamp": created or "2026-12-01T03:00:00Z"},
           "spec": {"nodeName": "" if phase == "Pending" else "n1"},
           "status": {"phase": phase, "containerStatuses": [status], "conditions": conditions or []}}
    if reason:
        pod["status"]["reason"] = reason
        pod["status"]["message"] = "The node was low on resource: memory."
    return pod


HEAD_KEY = "rlark-gpu-a/uid-head"


def inputs(**extra):
    base = dict(job=job(), tasks=(task("ppo-actor", "Running"), task("ppo-rollout", "Running")),
                pods=(pod_cr("uid-head", "ppo-actor"), pod_cr("uid-roll", "ppo-rollout")),
                header_pod=HEAD_KEY)
    base.update(extra)
    return A.JobInputs(**base)


def rules(evaluation):
    return sorted((f.rule, f.object) for f in evaluation.findings)


TH = T.Thresholds()


# -- the log --------------------------------------------------------------------------------------------------

def test_crash_chain_evidence_is_the_first_failure_not_the_ray_kill_echoes():
    facts = A.scan_log(recorded("rlinf-crash.log"), instance="p#0")
    assert facts.crash[1].startswith("Exception occurred while running EmbodiedFSDPActor's function run_training")
    assert "ray.kill" not in facts.crash[1]
    assert facts.oom[1].startswith("torch.OutOfMemoryError: CUDA out of memory")
    assert facts.run_started is not None and facts.progressed
    found = A.job_findings(inputs(log=facts), TH, T0 + 600)
    crashed = next(f for f in found.findings if f.rule == "run-crashed")
    assert crashed.evidence.startswith("2026-12-01T03:07:19Z Exception occurred while running EmbodiedFSDPActor")
    assert crashed.pod == HEAD_KEY
    assert ("run-oom", "ppo-actor-0") in rules(found)


def test_echoes_alone_still_say_crashed_and_later_reads_keep_the_first_failure():
    lines = recorded("rlinf-crash.log")
    echo_only = A.scan_log(lines[12:], instance="p#0")
    assert echo_only.crash[1].startswith("Exiting main process")
    assert "MultiStepRolloutWorker" in echo_only.crash_echo[1]
    facts = A.scan_log(lines[:12], instance="p#0")
    again = A.scan_log(lines[10:], facts, instance="p#0")
    assert "EmbodiedFSDPActor" in again.first_failure[1]
    assert A.scan_log(lines[12:], again, instance="p#1").crash[1].startswith("Exiting main process")
    assert A.scan_log([], again, instance=None).crash == again.crash


@pytest.mark.parametrize("line, fact", [
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB", "oom"),
    ("CUresult error result=2 file=csrc/torch_memory_saver.cpp func=cu_mem_create line=103", "oom"),
    ("ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.", "oom"),
    ("(raylet) 3 worker(s) were killed due to the node running low on memory.", "oom"),
    ("Error: Cluster did not become ready within 5 minutes (required 2 nodes).", "ray_not_ready"),
    ("Warning: Ray cluster check failed, proceeding anyway.", "ray_not_ready"),
    ("Step limit given by max_steps=40 reached. Stopping run", "finished"),
    ("Time limit given by run_timer=2:00:00 reached. Stopping run", "finished"),
])
def test_log_marks(line, fact):
    assert getattr(A.scan_log([(T0, line)]), fact) == (T0, line)


def test_start_stalled_waits_for_start_seconds_from_the_run_script_line():
    facts = A.scan_log([(T0, "Executing run script..."), (T0 + 1, "[INFO 03:00:01 RLinf] Waiting for 2 nodes")])
    found = A.job_findings(inputs(log=facts), TH, T0 + 10)
    stalled = next(f for f in found.findings if f.rule == "start-stalled")
    assert stalled.hold == 900 and stalled.since == T0
    book = A.step(A.Book(), found, T0 + 10)
    assert not book.alerts
    book = A.step(book, A.job_findings(inputs(log=facts), TH, T0 + 901), T0 + 901)
    assert [e.alert.rule for e in book.events] == ["start-stalled"]


# -- progress ---------------------------------------------------------------------------------------------------

def test_progress_stalled_uses_max_of_factor_times_step_time_and_the_minimum():
    row = latest_progress(recorded("rlinf-crash.log")[:8])
    assert row.step == 1 and row.step_seconds == 141.0
    limit = max(3 * 141.0, 300)
    at = row.at
    quiet = A.job_findings(inputs(progress=row, log=A.LogFacts(progressed=True)), TH, at + limit - 1)
    assert "progress-stalled" not in [f.rule for f in quiet.findings]
    late = A.job_findings(inputs(progress=row, log=A.LogFacts(progressed=True)), TH, at + limit + 1)
    assert ("progress-stalled", "ppo") in rules(late)
    small = T.Thresholds(stall_factor=0.1, stall_min_seconds=5)
    assert "progress-stalled" in [f.rule for f in A.job_findings(inputs(progress=row), small, at + 16).findings]


def test_a_stall_quotes_where_its_ranks_are_and_is_named_by_its_last_row():
    """The rounds take a stalled Job's stacks once per stall (flow/alertpoll.py): the stall is the Job's uid and its
    last row, and the stall's finding quotes the outliers line in its message and its evidence."""
    row = latest_progress(recorded("rlinf-crash.log")[:8])
    line = "ActorGroup:2 is elsewhere: next_batch (loader.py:88); 3 ranks wait in allreduce"
    stalled = inputs(progress=row, log=A.LogFacts(progressed=True), stacks=line)
    found = A.job_findings(stalled, TH, row.at + 1000)
    finding = next(f for f in found.findings if f.rule == "progress-stalled")
    assert A.stalled(found) and finding.message.endswith(f"at step 1/{row.total}; stacks: {line}")
    assert finding.evidence.endswith(f"step time 141.0 s; stacks: {line}")
    plain = next(f for f in A.job_findings(inputs(progress=row), TH, row.at + 1000).findings
                 if f.rule == "progress-stalled")
    assert "stacks" not in plain.message and "stacks" not in plain.evidence
    assert A.stall_key(stalled) == ("u-1", row.at, 1)
    assert A.stall_key(inputs(progress=row, job=job(uid="u-2"))) != A.stall_key(stalled)
    assert A.stall_key(inputs()) is None and not A.stalled(A.job_findings(stalled, TH, row.at + 1))


def test_a_stall_after_a_step_that_no_round_saw_moving_resolves_the_first_alert_and_fires_its_own():
    """A loaded machine spaces the rounds: the run moved a step and stalled again between two of them. The first
    alert resolves (`rlark watch` prints it) and the new one fires at once, quoting the new step."""
    from rlark_tui.telemetry.progress import Progress
    first = Progress(2, 20, 2.0, 0, 1.0, T0)
    book = A.step(A.Book(), A.job_findings(inputs(progress=first), TH, T0 + 400), T0 + 400)
    again = A.step(book, A.job_findings(inputs(progress=first), TH, T0 + 410), T0 + 410)
    assert again is book
    moved = Progress(3, 20, 3.0, 0, 1.0, T0 + 405)
    book = A.step(book, A.job_findings(inputs(progress=moved), TH, T0 + 800), T0 + 800)
    assert [(e.state, e.alert.message.rpartition(" at ")[2]) for e in book.events] == [
        ("firing", "step 2/20"), ("resolved", "step 2/20"), ("firing", "step 3/20")]
    assert book.alerts["ppo", "progress-stalled", "ppo"].fired_at == T0 + 800
    assert book.history[-1].message.endswith("at step 2/20")


def test_last_step_is_finished_whatever_the_phase_and_never_stalled():
    from rlark_tui.telemetry.progress import Progress
    row = Progress(40, 40, 100.0, 0, 3.0, T0)
    found = A.job_findings(inputs(progress=row), TH, T0 + 10_000)
    assert rules(found) == [("run-finished", "ppo")]


# -- platform state ---------------------------------------------------------------------------------------------

def test_job_failed_and_stopped():
    assert ("job-failed", "ppo") in rules(A.job_findings(inputs(job=job(phase="Failed", message="x")), TH, T0))
    assert rules(A.job_findings(inputs(job=job(phase="Stopped", stopped=True)), TH, T0)) == [("job-stopped", "ppo")]


def test_phase_mismatch_running_job_with_pending_header_task_or_no_running_pod():
    pending = inputs(tasks=(task("ppo-actor", "Pending"),))
    assert ("phase-mismatch", "ppo-actor") in rules(A.job_findings(pending, TH, T0))
    no_pod = inputs(pods=(pod_cr("uid-head", "ppo-actor", phase="Pending"),))
    finding = next(f for f in A.job_findings(no_pod, TH, T0).findings if f.rule == "phase-mismatch")
    assert "no Running Pod" in finding.message and finding.hold == A.MISMATCH_SECONDS
    failed = inputs(job=job(phase="Pending"), tasks=(task("ppo-actor", "Failed"),))
    assert ("phase-mismatch", "ppo-actor") in rules(A.job_findings(failed, TH, T0))
    assert "phase-mismatch" not in [f.rule for f in A.job_findings(inputs(), TH, T0).findings]


def test_pod_rules():
    planes = {HEAD_KEY: plane_pod(restarts=2, waiting="CrashLoopBackOff", last="OOMKilled"),
              "rlark-gpu-a/uid-roll": plane_pod(waiting="ImagePullBackOff")}
    found = A.job_findings(inputs(plane_pods=planes), TH, T0)
    assert rules(found) == [("pod-backoff", "ppo-actor-0"), ("pod-image", "ppo-rollout-0"),
                            ("pod-oomkilled", "ppo-actor-0")]
    oom = next(f for f in found.findings if f.rule == "pod-oomkilled")
    assert oom.previous and oom.pod == HEAD_KEY and "exit 137" in oom.message
    evicted = A.job_findings(inputs(plane_pods={HEAD_KEY: plane_pod(phase="Failed", reason="Evicted")}), TH, T0)
    assert ("pod-evicted", "ppo-actor-0") in rules(evicted)


def test_pod_unschedulable_counts_from_the_pods_creation():
    cond = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
             "message": "0/2 nodes are available: 2 Insufficient nvidia.com/gpu."}]
    planes = {HEAD_KEY: plane_pod(phase="Pending", conditions=cond, created="2026-12-01T03:00:00Z")}
    evaluation = A.job_findings(inputs(plane_pods=planes), TH, T0 + 30)
    assert not A.step(A.Book(), evaluation, T0 + 30).alerts
    book = A.step(A.Book(), A.job_findings(inputs(plane_pods=planes), TH, T0 + 121), T0 + 121)
    (alert,) = book.alerts.values()
    assert alert.rule == "pod-unschedulable" and "Insufficient nvidia.com/gpu" in alert.message


def test_pod_restarted_when_the_count_rises_and_resolves_after_quiet():
    memory = A.RestartMemory()

    def round_(restarts, now):
        nonlocal memory
        found, updates = A.restart_findings(inputs(plane_pods={HEAD_KEY: plane_pod(restarts=restarts)}), memory, now)
        memory = A.RestartMemory({**memory.counts, **updates})
        return found
    assert not round_(1, T0).findings
    rose = round_(2, T0 + 5)
    assert [(f.rule, f.message) for f in rose.findings] == [("pod-restarted", "Pod ppo-actor-0 restarted (2 "
                                                                              "restarts, was 1)")]
    assert not round_(2, T0 + 5 + A.RESTART_QUIET_SECONDS).findings


def test_gpu_idle_needs_every_gpu_below_the_percent_for_the_hold():
    idle = usage_sample(HEAD_KEY, T0, parse_nvidia_smi("0, GPU-a, 1, 500, 81920\n1, GPU-b, 3, 500, 81920\n"))
    busy = usage_sample(HEAD_KEY, T0, ((0, "GPU-a", 1, 1, 2), (1, "GPU-b", 60, 1, 2)))
    none = usage_sample(HEAD_KEY, T0, None)
    assert ("gpu-idle", "ppo-actor-0") in rules(A.job_findings(inputs(usage={HEAD_KEY: idle}), TH, T0))
    assert not A.job_findings(inputs(usage={HEAD_KEY: busy}), TH, T0).findings
    assert not A.job_findings(inputs(usage={HEAD_KEY: none}), TH, T0).findings
    assert gpu_percent(idle) == 2.0 and gpu_mem_total_mib(idle) == 163840


def test_ray_nodes_missing_and_sources():
    found = A.job_findings(inputs(ray={"alive_nodes": 1, "expected": 2, "error": None}), TH, T0)
    assert ("ray-nodes-missing", "ppo") in rules(found)
    failed_read = A.job_findings(inputs(ray={"alive_nodes": None, "expected": 2, "error": "ray: 502"}), TH, T0)
    assert ("ppo", "ray-nodes-missing") not in failed_read.covered

    from rlark_tui.flow.snapshot import SourceState
    sources = {"data plane rlark-gpu-a": SourceState("data plane rlark-gpu-a", "disconnected", "timed out"),
               "ray ppo": SourceState("ray ppo", "disconnected", "x"),
               "gateway": SourceState("gateway", "connected")}
    (finding,) = A.source_findings(sources, TH).findings
    assert finding.object == "data plane rlark-gpu-a" and finding.hold == 60


# -- the book ---------------------------------------------------------------------------------------------------

def test_one_alert_per_job_rule_object_until_it_resolves_and_resolving_is_an_event():
    failed = A.job_findings(inputs(job=job(phase="Failed")), TH, T0)
    book = A.step(A.Book(), failed, T0)
    book = A.step(book, failed, T0 + 2)
    assert [(e.seq, e.state, e.alert.rule) for e in book.events] == [(1, "firing", "job-failed")]
    assert book.counts() == {"critical": 1, "warning": 0, "info": 0} and book.jobs_firing() == {"ppo": "critical"}
    book = A.step(book, A.merge([A.job_findings(inputs(), TH, T0 + 4)], jobs=["ppo"]), T0 + 4)
    assert [(e.seq, e.state) for e in book.events_after(1)] == [(2, "resolved")]
    assert book.history[-1].state == "resolved" and not book.alerts
    record = book.events[-1].record()
    assert set(record) == {"time", "severity", "rule", "job", "namespace", "object", "message", "state"}
    assert record["namespace"] == "rlark-gpu-a" and record["state"] == "resolved"


def test_unknown_data_neither_fires_nor_resolves():
    planes = {HEAD_KEY: plane_pod(waiting="CrashLoopBackOff")}
    book = A.step(A.Book(), A.job_findings(inputs(plane_pods=planes), TH, T0), T0)
    assert [a.rule for a in book.alerts.values()] == ["pod-backoff"]
    book = A.step(book, A.merge([A.job_findings(inputs(plane_pods=None), TH, T0 + 5)], jobs=["ppo"]), T0 + 5)
    assert [a.rule for a in book.alerts.values()] == ["pod-backoff"]
    book = A.step(book, A.merge([], jobs=[]), T0 + 6)
    assert not book.alerts and book.events[-1].state == "resolved"


def test_acknowledged_alerts_fire_silently_after_a_restart():
    failed = A.job_findings(inputs(job=job(phase="Failed")), TH, T0)
    first = A.step(A.Book(), failed, T0)
    (alert,) = first.alerts.values()
    assert alert.ack_key == "u-1/job-failed/ppo"
    acked = A.step(first, failed, T0 + 1, acks={alert.ack_key})
    assert acked.counts()["critical"] == 0 and list(acked.alerts.values())[0].state == "acknowledged"
    restarted = A.step(A.Book(), failed, T0 + 10, acks={alert.ack_key})
    assert not restarted.events and list(restarted.alerts.values())[0].state == "acknowledged"


def test_held_finding_that_goes_away_starts_over():
    facts = A.LogFacts()
    ray = {"alive_nodes": 1, "expected": 2, "error": None}
    book = A.step(A.Book(), A.job_findings(inputs(ray=ray, log=facts), TH, T0), T0)
    book = A.step(book, A.job_findings(inputs(ray={**ray, "alive_nodes": 2}, log=facts), TH, T0 + 30), T0 + 30)
    book = A.step(book, A.job_findings(inputs(ray=ray, log=facts), TH, T0 + 70), T0 + 70)
    assert not book.alerts
    book = A.step(book, A.job_findings(inputs(ray=ray, log=facts), TH, T0 + 131), T0 + 131)
    assert [a.rule for a in book.alerts.values()] == ["ray-nodes-missing"]


def test_cluster_text_is_one_clean_line():
    facts = A.scan_log([(T0, "Exception occurred while running X's function f: exception is "
                              "\x1b]52;c;aGk=\x07 boom\t!")])
    (finding,) = [f for f in A.job_findings(inputs(log=facts), TH, T0).findings if f.rule == "run-crashed"]
    assert "\x1b" not in finding.message and "\x07" not in finding.message and "\t" not in finding.message


def test_thresholds_from_config():
    assert T.thresholds_from({"stall_min_seconds": 5, "gpu-idle-seconds": 30, "bell": False}) == T.Thresholds(
        stall_min_seconds=5.0, gpu_idle_seconds=30.0, bell=False)
    assert T.FLAGS["stall_min_seconds"] == "--stall-min-seconds"
    for bad in ({"stall_min_seconds": "x"}, {"bell": 1}, {"nope": 1}, [1], {"start_seconds": -1}):
        with pytest.raises(ValueError):
            T.thresholds_from(bad)


def test_the_config_files_alerts_section(tmp_path):
    from rlark_tui.errors import UsageError
    from rlark_tui.local.config import EXAMPLE, load_config
    path = tmp_path / "config.yaml"
    path.write_text(EXAMPLE)
    assert load_config(path).alerts == T.Thresholds()
    path.write_text("alerts:\n  stall_min_seconds: 5\n  bell: false\n")
    assert load_config(path).alerts == T.Thresholds(stall_min_seconds=5.0, bell=False)
    path.write_text("alerts:\n  stall_min_seconds: soon\n")
    with pytest.raises(UsageError, match="alerts.stall_min_seconds"):
        load_config(path)


def test_secrets_in_log_lines_never_reach_an_alert():
    line = ("Exception occurred while running X's function f: exception is auth failed for "
            "HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz123456")
    (finding,) = [f for f in A.job_findings(inputs(log=A.scan_log([(T0, line)])), TH, T0).findings
                  if f.rule == "run-crashed"]
    assert "hf_abcdefghijklmnopqrstuvwxyz123456" not in finding.message + finding.evidence



def test_a_known_secret_a_log_line_splits_with_an_escape_sequence_never_reaches_an_alert():
    # issue 33: a Secret's value the Pod references, printed split by an SGR sequence, was not found by the
    # masking and showed whole once the message was cleaned for the toast, the webhook and `rlark watch`
    line = "Exception occurred while running X's function f: exception is auth failed for hunter2-\x1b[0msecret-value"
    (finding,) = [f for f in A.job_findings(inputs(log=A.scan_log([(T0, line)]), known=frozenset({
        "hunter2-secret-value"})), TH, T0).findings if f.rule == "run-crashed"]
    assert "secret-value" not in clean(finding.message + finding.evidence)
    assert finding.message.endswith("auth failed for ***")


def test_a_secret_env_value_the_job_shows_under_another_name_never_reaches_an_alert():
    """Issue 33, a secret renamed by a hostile control plane: the run-crashed alert masked what the Job's own env
    names a secret, so a Job whose WANDB_API_KEY entry the control plane renamed `0` had its value quoted from the
    crash line in the toast, `rlark watch` and the webhook; the Task the Pods run from still names it."""
    value = "zqRenamedKey8842x"
    renamed = job()
    renamed["spec"]["tasks"][0]["env"] = [{"name": "0", "value": value}]
    named = {**task("ppo-actor", "Running"), "spec": {"env": [{"name": "WANDB_API_KEY", "value": value}]}}
    line = f"Exception occurred while running X's function f: exception is wandb login {value} failed"
    (finding,) = [f for f in A.job_findings(inputs(job=renamed, tasks=(named, task("ppo-rollout", "Running")),
                                                   log=A.scan_log([(T0, line)])), TH, T0).findings
                  if f.rule == "run-crashed"]
    assert value not in finding.message + finding.evidence and finding.message.endswith("wandb login *** failed")


def test_run_oom_in_a_worker_pods_log():
    worker = A.scan_log([(T0, "(raylet) 2 worker(s) were killed due to the node running low on memory.")])
    found = A.job_findings(inputs(log=A.LogFacts(), worker_logs={"rlark-gpu-a/uid-roll": worker}), TH, T0)
    (oom,) = [f for f in found.findings if f.rule == "run-oom"]
    assert oom.object == "ppo-rollout-0" and oom.pod == "rlark-gpu-a/uid-roll"
    assert "ppo-rollout-0" in oom.message and "low on memory" in oom.message


def test_a_workers_restart_with_the_jobs_own_restart_is_no_backoff_nor_restart_alert():
    """rlark resume's Edit & Restart replaces the Header Pod; each worker's Ray node ends with its head and the
    platform's worker sequence exits 0 and runs again (restartPolicy Always), through CrashLoopBackOff. That instance
    was started before the Job's rlark.io/restarted-at and ended after it: no pod-backoff, no pod-restarted. An
    instance started after it, a non-zero exit or the Header Pod itself still alerts."""
    resumed = {**job(), "metadata": {**job()["metadata"], "annotations": {"rlark.io/restarted-at": "2026-12-01T03:10:00Z"}}}

    def worker(started="2026-12-01T03:01:00Z", code=0, restarts=1, waiting="CrashLoopBackOff"):
        pod = plane_pod(restarts=restarts, waiting=waiting)
        pod["status"]["containerStatuses"][0]["lastState"] = {"terminated": {
            "reason": "Completed" if code == 0 else "Error", "exitCode": code, "startedAt": started,
            "finishedAt": "2026-12-01T03:10:05Z"}}
        return pod
    roll = "rlark-gpu-a/uid-roll"

    def backoff(plane, key=roll, the_job=resumed):
        return [f.object for f in A.job_findings(inputs(job=the_job, plane_pods={key: plane}), TH, T0).findings
                if f.rule == "pod-backoff"]
    assert backoff(worker()) == []
    assert backoff(worker(), the_job=job()) == ["ppo-rollout-0"], "no restart of the Job"
    assert backoff(worker(started="2026-12-01T03:10:02Z")) == ["ppo-rollout-0"], "a worker failing again"
    assert backoff(worker(code=1)) == ["ppo-rollout-0"]
    assert backoff(worker(), key=HEAD_KEY) == ["ppo-actor-0"], "the Header Pod is replaced, never restarted"

    def restarts(after, the_job=resumed):
        seen = A.RestartMemory({roll: (0, 0, T0)})
        found, _ = A.restart_findings(inputs(job=the_job, plane_pods={roll: after}), seen, T0 + 5)
        return [f.message for f in found.findings]
    assert restarts(worker(waiting=None)) == []
    assert restarts(worker(waiting=None), the_job=job()) == ["Pod ppo-rollout-0 restarted (1 restarts, was 0)"]
    assert restarts(worker(restarts=2, waiting=None)) == ["Pod ppo-rollout-0 restarted (2 restarts, was 0)"], \
        "two restarts are more than the Job's one"


def test_an_alert_toast_shows_a_jobs_name_on_its_one_line():
    """Issue 33 item 4, a sixth round: the toast quoted the Job's name as the control plane gave it, through the
    app's clean (which keeps a line break), so a Job named 'evil\\nrun-finished ok: all green' showed a forged
    second line under its alert."""
    forged = "evil\nrun-finished ok: all green\u202e"
    alert = A.Alert("job-failed", forged, forged, "Job failed", "phase Failed")
    for alerts in ([alert], [alert, A.Alert("job-failed", "other", "other", "m", "e")]):
        title, text, _ = A.toast(alerts)
        assert "\n" not in title + text and "\u202e" not in text
        assert "evil\\nrun-finished ok: all green\\u202e" in text


def test_acknowledging_a_hostile_jobs_long_alerts_keeps_every_other_acknowledgement(tmp_path):
    """issue 33, a twelfth round: an acknowledgement names the alert's object as the cluster gave it (a Pod CR's
    podName is free text, an object may hold 1.5 MB), and the acknowledgements file is read back to
    acks.MAX_FILE_BYTES: three acks of such a Job's alerts made the file too large to read, so every Job's
    acknowledged alerts fired again. A long object is named in the key by its digest."""
    from rlark_tui.local import acks

    def alert(job_uid: str, obj: str) -> A.Alert:
        return A.Alert.fired(A.Finding("pod-backoff", "j", obj, "m", "e", job_uid=job_uid), 0.0, 0.0)

    hostile = [alert("evil", str(n) * 1_400_000) for n in range(3)]
    keys = [a.ack_key for a in hostile]
    assert len(set(keys)) == 3 and all(len(key) < 200 for key in keys), [len(k) for k in keys]
    kept = alert("other", "pod-0").ack_key
    book = acks.AckFile()
    book.acknowledge(tmp_path, kept)
    book.acknowledge(tmp_path, *keys)
    assert acks.AckFile().load(tmp_path) == {kept, *keys}


def test_two_rlark_acknowledging_at_once_lose_no_acknowledgement(tmp_path):
    """Issue 33, a seventeenth round (two rlark on one state dir: two TUIs, a TUI and rlark watch): each wrote back
    the acknowledgements it had read before the other's write, so of three processes acknowledging 60 alerts each
    77 of 180 were kept, and the others fired again at the next start. The read, change and write are held by one
    lock across processes (fsutil.updating: two AckFiles here, each with its own descriptor, as two processes)."""
    import threading

    from rlark_tui.local.acks import AckFile

    state = tmp_path / "state"
    state.mkdir(mode=0o700)

    def acknowledge(who: str) -> None:
        own = AckFile()
        for i in range(25):
            own.acknowledge(state, f"{who}-{i}")

    threads = [threading.Thread(target=acknowledge, args=(who,)) for who in "ab"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(AckFile().load(state)) == 50
