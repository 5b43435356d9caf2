"""telemetry/diagnosis.py on Ray's recorded answers (tests/raydebug/recorded.py) and on made-up facts of each
cause class: the first failure of the run, named, classed and quoted, never the knock-on; total on junk."""

from __future__ import annotations

import json
import random

import pytest

from rlark_tui.telemetry import diagnosis as d
from rlark_tui.text import redact
from tests.raydebug.recorded import forwarded_inputs, recorded_inputs, sigsegv_inputs

SEGV = "Fatal Python error: Segmentation fault"


def test_the_recorded_sigsegv_run_names_rank_1_its_pod_node_and_stack():
    found = d.diagnose(sigsegv_inputs())
    failure = found.first_failure
    assert (failure.worker, failure.cause, failure.pod, failure.node) == ("ActorGroup:1", "signal", "segv-actor-0",
                                                                          "gpu-a3")
    assert d.iso(failure.at) == "2026-12-02T00:36:41Z"
    assert SEGV in failure.evidence and len(failure.evidence) <= d.MAX_EVIDENCE
    assert any('demo_workload.py", line 284 in step' in line for line in failure.evidence)
    assert failure.summary.startswith(f"ActorGroup:1 failed first (signal): {SEGV}")
    stamps = [event.at for event in found.timeline if event.at is not None]
    assert stamps == sorted(stamps)
    # the other ranks went because their references did, and the Header exited after: facts, not the cause
    assert {e.worker for e in found.timeline if e.source == "ray-actor" and not e.failure} == {
        "ActorGroup:0", "ActorGroup:2", "ActorGroup:3"}
    assert found.timeline[-1].what == "container main exited 1 (Error)"


def test_once_ray_is_gone_the_header_log_quotes_the_dead_ranks_stderr_as_ray_forwarded_it():
    """Ray's log API serves a dead rank's stderr only until the Header container exits, about a second after the
    crash; Ray also forwarded it to the driver, and the kubelet keeps the Header's previous container's log. From that
    log alone (no actors, workers or stderr): rank 1, its Pod and node, signal, its fatal error and stack, its PID
    (for the bundle's ray/stderr/<pid>.err)."""
    found = d.diagnose(forwarded_inputs())
    failure = found.first_failure
    assert (failure.worker, failure.cause, failure.pod, failure.node, failure.pid) == (
        "ActorGroup:1", "signal", "segv-actor-0", "gpu-a3", 16929)
    assert d.iso(failure.at) == "2026-12-06T09:20:59Z"  # Ray's SIGSEGV time, before the driver's lines
    assert SEGV in failure.evidence and len(failure.evidence) <= d.MAX_EVIDENCE
    assert any('demo_workload.py", line 346 in step' in line for line in failure.evidence)
    assert not any("pid=16929" in line or "\x1b" in line for line in failure.evidence)
    assert failure.summary.startswith(f"ActorGroup:1 failed first (signal): {SEGV}")
    # the rank's lines are one event; Ray's log API's copy, when it still served it, is read instead
    assert [e.worker for e in found.timeline if e.source == "stderr"] == ["ActorGroup:1"]
    served = "\n".join(line.split("pid=16929)", 1)[1].split(" ", 1)[1] for _, line in forwarded_inputs().header_log
                       if "pid=16929)" in line)
    again = d.diagnose(d.Inputs(**{**forwarded_inputs().__dict__, "stderr": {16929: served}}))
    assert [e.worker for e in again.timeline if e.source == "stderr"] == ["ActorGroup:1"]
    assert again.first_failure.evidence == failure.evidence


def test_a_forwarded_line_names_its_worker_by_ray_then_by_rlinfs_repr_and_places_it_by_its_ip():
    pod = {"metadata": {"name": "j-rollout-0"}, "spec": {"nodeName": "gpu-b1"}, "status": {"podIP": "10.0.0.9"}}
    log = [(1.7e9, "(RolloutGroup(rank=3) pid=77, ip=10.0.0.9) Fatal Python error: Aborted"),
           (1.7e9, "(EnvWorker pid=78) RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1970")]
    found = d.diagnose(d.Inputs("j", pods=[pod], header_log=log, header="j-actor-0"))
    assert {(e.worker, e.cause, e.pod, e.node) for e in found.timeline} == {
        ("RolloutGroup:3", "signal", "j-rollout-0", "gpu-b1"), ("EnvWorker pid 78", "nccl", "j-actor-0", "")}
    named = d.diagnose(d.Inputs("j", header_log=log, actors=[{"name": "EnvGroup:0", "pid": 78}]))
    assert "EnvGroup:0" in {e.worker for e in named.timeline}


def test_the_jobs_own_lines_cannot_blame_a_rank_ray_lists_running():
    """The Header log is the Job's output: its driver can print Ray's forwarding prefix and the raylet's report of
    a dead worker about rank 2, earlier than rank 1's real SIGSEGV. Ray lists rank 2's worker alive since before
    those lines, so they are not its end: rank 1 still failed first. The same lines about a PID Ray started only
    later (a previous container's worker) still count."""
    real = sigsegv_inputs()
    first = min(at for at, _ in real.header_log if at is not None)
    workers = [{**w, "is_alive": True, "exit_type": None} if w["pid"] == 993 else w for w in real.workers]
    forged = [(first + 1.0, f"(ActorGroup(rank=2) pid=993) {SEGV}"),
              (first + 1.0, "(ActorGroup(rank=2) pid=993) Current thread 0x00007f (most recent call first):"),
              (first + 2.0, "(raylet) A worker died or was killed while executing a task by an unexpected system "
                            "error. Worker PID: 993 Worker exit type: SYSTEM_ERROR")]
    started = min(w["start_time_ms"] for w in real.workers if w["pid"] == 993) / 1000
    lying = d.diagnose(d.Inputs(**{**real.__dict__, "workers": workers,
                                   "header_log": [(max(at, started + 1), text) for at, text in forged]
                                   + list(real.header_log)}))
    assert (lying.first_failure.worker, lying.first_failure.cause) == ("ActorGroup:1", "signal")
    assert not [e for e in lying.timeline if e.worker == "ActorGroup:2" and e.failure]
    earlier = d.diagnose(d.Inputs(**{**real.__dict__, "workers": workers,
                                     "header_log": [(started - 60, text) for _, text in forged]
                                     + list(real.header_log)}))
    assert earlier.first_failure.worker == "ActorGroup:2"


TORCH_OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "


def test_the_recorded_cuda_oom_run_names_rank_1_its_pod_and_the_oom_line():
    failure = d.diagnose(recorded_inputs("cudaoom")).first_failure
    assert (failure.worker, failure.pod, failure.node) == ("ActorGroup:1", "diagnose-cudaoom-actor-0", "gpu-a3")
    assert failure.summary.startswith(f"ActorGroup:1 failed first (cuda-oom): {TORCH_OOM}")
    assert any(line.startswith(TORCH_OOM) for line in failure.evidence), failure.evidence
    assert any("in step" in line and "demo_workload.py" in line for line in failure.evidence)


def test_the_recorded_host_oom_run_names_the_oomkilled_pod():
    failure = d.diagnose(recorded_inputs("hostoom")).first_failure
    pod = "diagnose-hostoom-rollout-0"
    assert (failure.worker, failure.pod, failure.node) == (pod, pod, "gpu-a2")
    assert failure.summary.startswith(f"{pod} failed first (host-oom): container main exited 137 (OOMKilled)")


def test_ray_generic_death_text_classifies_nothing_without_the_workers_own_lines():
    """Ray's death text lists SIGSEGV and the OOM killer as possible causes: no stderr, no `signal`."""
    failure = d.diagnose(sigsegv_inputs(stderr={})).first_failure
    assert failure.worker == "ActorGroup:1" and failure.cause == "unknown"
    assert failure.evidence and SEGV not in failure.evidence


def test_after_the_pod_restarted_the_header_log_still_names_the_dead_rank():
    """Ray started afresh: no actors, workers or stderr; the raylet's PID and Ray's `pid:`/`name:` lines say
    which rank died, before the Header container exited."""
    failure = d.diagnose(sigsegv_inputs(actors=[], workers=[], stderr={}, node_ips={})).first_failure
    assert failure.worker == "ActorGroup:1"
    assert "A worker died or was killed" in failure.summary


def test_the_kept_first_failure_stands_when_the_facts_are_gone_and_a_later_crash_comes():
    kept = d.from_json(json.loads(json.dumps(d.to_json(d.diagnose(sigsegv_inputs())))))
    assert kept.first_failure.cause == "signal" and SEGV in kept.first_failure.evidence
    later = d.diagnose(d.Inputs("segv", header_log=[(1796172000.0, "Traceback (most recent call last):"),
                                                   (1796172000.0, "ValueError: again")]))
    merged = d.merge(kept, later)
    assert merged.first_failure == kept.first_failure
    assert merged.timeline[-1].what == "ValueError: again"
    assert d.merge(None, later) == later
    assert d.merge(d.Diagnosis("another", None), later) == later


def test_json_shape():
    data = d.to_json(d.diagnose(sigsegv_inputs()))
    assert set(data) == {"job", "first_failure", "timeline"}
    assert set(data["first_failure"]) == {"worker", "pod", "node", "at", "cause", "summary", "evidence"}
    assert all(set(row) == {"at", "source", "worker", "what"} for row in data["timeline"])
    assert d.to_json(d.diagnose(d.Inputs("idle")))["first_failure"] is None


def _stderr_run(text: str, **actor) -> d.Inputs:
    return d.Inputs("j", actors=[{"name": "ActorGroup:3", "state": "DEAD", "pid": 7, "node_id": "n", **actor}],
                    node_ips={"n": "10.0.0.3"}, stderr={7: text},
                    pods=[{"metadata": {"name": "j-actor-1"}, "spec": {"nodeName": "gpu-3"},
                           "status": {"podIP": "10.0.0.3"}}])


@pytest.mark.parametrize(("text", "cause", "quoted"), [
    ("Traceback (most recent call last):\n  File \"a.py\", line 1, in f\n    x()\n"
     "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", "cuda-oom", "CUDA out of memory"),
    ("[rank3]:[E ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation timeout: "
     "WorkNCCL(SeqNum=9, OpType=ALLREDUCE) ran for 1800000 milliseconds before timing out.", "nccl", "Watchdog"),
    ("Failed to load checkpoint from /ckpt/global_step_10: no such file", "checkpoint", "Failed to load checkpoint"),
    ("Traceback (most recent call last):\n  File \"t.py\", line 3, in run\n    1/0\n"
     "ZeroDivisionError: division by zero", "python", "ZeroDivisionError: division by zero"),
])
def test_a_workers_stderr_gives_the_cause_class(text, cause, quoted):
    failure = d.diagnose(_stderr_run(text)).first_failure
    assert (failure.worker, failure.pod, failure.node, failure.cause) == ("ActorGroup:3", "j-actor-1", "gpu-3", cause)
    assert any(quoted in line for line in failure.evidence) and quoted in failure.summary


def _pod(name: str, **status) -> dict:
    return {"metadata": {"name": name}, "spec": {"nodeName": "gpu-1"}, "status": status}


@pytest.mark.parametrize(("pod", "cause"), [
    (_pod("p-0", containerStatuses=[{"name": "main", "lastState": {"terminated": {
        "exitCode": 137, "reason": "OOMKilled", "finishedAt": "2026-12-01T10:00:00Z"}}}]), "host-oom"),
    (_pod("p-0", containerStatuses=[{"name": "main", "state": {"terminated": {"exitCode": 134}}}]), "signal"),
    (_pod("p-0", containerStatuses=[{"name": "main", "state": {"waiting": {"reason": "ImagePullBackOff"}}}]),
     "image"),
    (_pod("p-0", phase="Pending", conditions=[{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                              "message": "0/4 nodes: Insufficient nvidia.com/gpu"}]), "schedule"),
])
def test_pod_reasons_give_the_cause_class(pod, cause):
    failure = d.diagnose(d.Inputs("j", pods=[pod])).first_failure
    assert (failure.worker, failure.node, failure.cause) == ("p-0", "gpu-1", cause)


def test_a_worker_the_node_killed_for_memory_is_host_oom():
    workers = [{"pid": 7, "node_id": "n", "worker_type": "WORKER", "exit_type": "NODE_OUT_OF_MEMORY",
                "exit_detail": "Task was killed due to the node running low on memory.", "end_time_ms": 1.7e12}]
    failure = d.diagnose(d.Inputs("j", workers=workers, actors=[{"name": "RolloutGroup:0", "pid": 7}])).first_failure
    assert (failure.worker, failure.cause) == ("RolloutGroup:0", "host-oom")


def test_the_earliest_root_failure_wins_over_a_knock_on_printed_first():
    """The driver's ActorDiedError about rank 2 comes first in the log, rank 2's own NCCL error later in time
    order of the read: rank 2 with `nccl` is the answer, whatever the order of the inputs."""
    log = [(100.0, "Traceback (most recent call last):"),
           (100.0, "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task."),
           (100.0, "\tpid: 9"), (100.0, "\tname: ActorGroup:2"),
           (101.0, "(ActorGroup pid=5) RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error")]
    actors = [{"name": "ActorGroup:2", "pid": 9, "state": "DEAD"}, {"name": "ActorGroup:0", "pid": 5}]
    workers = [{"pid": 9, "exit_type": "SYSTEM_ERROR", "exit_detail": "NCCL error: remote process exited",
                "end_time_ms": 99_500}]
    failure = d.diagnose(d.Inputs("j", actors=actors, workers=workers, header_log=log)).first_failure
    assert (failure.worker, failure.cause) == ("ActorGroup:2", "nccl")


def test_secrets_are_masked_in_the_evidence_and_the_timeline():
    text = ("Traceback (most recent call last):\n  File \"t.py\", line 3, in run\n"
            "    login(token='hunter2-very-secret')\nRuntimeError: bad login HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz123456")
    inputs = _stderr_run(text)
    found = d.diagnose(d.Inputs(**{**inputs.__dict__, "known": ["hunter2-very-secret"]}))
    dumped = json.dumps(d.to_json(found))
    assert "hunter2-very-secret" not in dumped and "hf_abcdefghijklmnopqrstuvwxyz123456" not in dumped
    assert "RuntimeError: bad login" in dumped


SCALARS = (None, True, 0, -1, 10**30, 1e308, float("nan"), float("inf"), "", "x" * 5000, "\x1b[2J\u202e",
           "2026-13-45T99:99:99Z", "9" * 40, b"bytes", ("tuple",), {1: 2})
KEYS = ("name", "pid", "state", "node_id", "death_cause", "actor_died_error_context", "error_message", "status",
        "containerStatuses", "terminated", "exitCode", "finishedAt", "spec", "metadata", "exit_type", "end_time_ms",
        "conditions", "reason")


def _junk(rng: random.Random, depth: int = 0):
    kind = rng.randrange(len(SCALARS) + (2 if depth < 3 else 0))
    if kind < len(SCALARS):
        return SCALARS[kind]
    if kind == len(SCALARS):
        return [_junk(rng, depth + 1) for _ in range(rng.randrange(3))]
    return {key: _junk(rng, depth + 1) for key in rng.sample(KEYS, 4)}


def test_hostile_input_never_raises():
    rng = random.Random(34)
    for _ in range(100):
        inputs = d.Inputs(_junk(rng), pods=_junk(rng), actors=_junk(rng), workers=_junk(rng), node_ips=_junk(rng),
                          stderr=rng.choice([_junk(rng), {7: _junk(rng), "x": "y", 8: "Fatal Python error: Aborted"}]),
                          header_log=rng.choice([_junk(rng), [(_junk(rng), _junk(rng)), (1e300, "OOMKilled"),
                                                                 (10**400, SEGV)]]),
                          known=_junk(rng))
        found = d.diagnose(inputs)
        json.dumps(d.to_json(found))
        d.render(found)
        assert d.from_json(_junk(rng)) is None or isinstance(d.from_json(_junk(rng)), d.Diagnosis)
    assert d.diagnose("not inputs").first_failure is None


def test_a_header_log_of_thousands_of_forwarded_workers_builds_the_secrets_shapes_once(monkeypatch):
    """Issue 33, a ninth round: the Job's own code prints what Ray's forwarding looks like, a fatal error of
    another worker on each line. Each such worker's evidence was masked by a masking built anew, and with it every
    shape of every secret value: 20 two-line values of 400 characters took 14.3 s for 5,000 lines, and a Header
    log's tail is 20,000 lines per container. The masking is made once per diagnosis: each value's shapes once.
    100 forged workers, five quoting each value, stand for the thousands: what is asserted is how many times a
    value's shapes are built (20 values, 20 builds; a masking per worker's evidence builds them per worker)."""
    built = []
    shapes = redact._shapes
    monkeypatch.setattr(redact, "_shapes", lambda value: built.append(value) or shapes(value))
    known = [f"secret-value-{n}-" + "k" * 400 + "\nline two" for n in range(20)]
    lines = [(1.0 + n, f"(ActorGroup(rank={n}) pid={n + 1}) {SEGV} {known[n % 20]}") for n in range(100)]
    found = d.diagnose(d.Inputs("j", header_log=lines, known=known))
    assert sorted(built) == sorted(known)
    assert found.first_failure.worker == "ActorGroup:0" and found.first_failure.summary.endswith("*** [1970-01-01T00:00:01Z]")
    assert not any(value in d.render(found) for value in known)


def test_a_crash_loop_round_that_caught_the_ranks_own_stderr_tells_more_than_the_kept_log_line():
    from_log = d.diagnose(sigsegv_inputs(actors=[], workers=[], stderr={}, node_ips={}))
    assert from_log.first_failure.cause == "unknown"
    later = d.diagnose(sigsegv_inputs())
    later = d.Diagnosis(later.job, d.Failure(**{**later.first_failure.__dict__, "at": later.first_failure.at + 100}),
                        later.timeline)
    merged = d.merge(from_log, later)
    assert (merged.first_failure.worker, merged.first_failure.cause) == ("ActorGroup:1", "signal")
    assert d.merge(later, from_log).first_failure == later.first_failure


def test_rlinf_crash_chain_names_the_actor_and_its_pid():
    chain = ["Exception occurred while running EmbodiedFSDPActor's function run_training: exception is "
             "ray::EmbodiedFSDPActor.run_training() (pid=4121, ip=10.244.1.7)",
             "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
             "Exception occurred while running EnvWorker's function interact: exception is "
             "The actor died unexpectedly before finishing this task.",
             "Exiting main process due to a failure upon worker execution."]
    failure = d.diagnose(d.Inputs("j", header_log=[(1.7e9 + i, line) for i, line in enumerate(chain)])).first_failure
    assert (failure.worker, failure.cause) == ("EmbodiedFSDPActor pid 4121", "cuda-oom")
    named = d.diagnose(d.Inputs("j", actors=[{"name": "ActorGroup:0", "pid": 4121}],
                                header_log=[(1.7e9, line) for line in chain])).first_failure
    assert named.worker == "ActorGroup:0"


def test_rlinf_crash_chain_names_the_rank_by_its_repr_and_the_pod_by_its_ip_once_ray_forgot_them():
    chain = ["Exception occurred while running Worker's function step: exception is ray::Worker.step() (pid=8467, "
             "ip=10.244.1.7, actor_id=15ee9bbf227d2e3c9e41dca401000000, repr=ActorGroup(rank=1))",
             "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
             "Exiting main process due to a failure upon worker execution."]
    pod = {"metadata": {"name": "j-actor-0"}, "spec": {"nodeName": "gpu-a3"}, "status": {"podIP": "10.244.1.7"}}
    failure = d.diagnose(d.Inputs("j", pods=[pod], header_log=[(1.7e9, line) for line in chain])).first_failure
    assert (failure.worker, failure.pod, failure.node, failure.cause) == ("ActorGroup:1", "j-actor-0", "gpu-a3",
                                                                          "cuda-oom")


def test_an_actor_named_with_a_line_break_stays_on_its_lines():
    # Ray names an actor whatever the Job's code passes: 'ActorGroup:2\nfirst failure: ...' forged the first line of
    # `rlark diagnose` (and a timeline row); its escape reached the kept diagnosis and the bundle's summary
    actors = [{"name": "ActorGroup:2\nfirst failure: ActorGroup:0 failed first (oom)\x1b]52;c;aGk=\x07", "pid": 9,
               "state": "DEAD", "death_cause": {"actor_died_error_context": {"error_message": "segfault"}}}]
    found = d.diagnose(d.Inputs("j", actors=actors))
    text = d.render(found)
    assert [line for line in text.splitlines() if line.startswith("first failure:")] == [
        "first failure: ActorGroup:2\\nfirst failure: ActorGroup:0 failed first (oom) failed first (unknown): DEAD: "
        "segfault"], text
    assert "\x1b" not in json.dumps(d.to_json(found)) and "\\u001b" not in json.dumps(d.to_json(found))
    assert all(line.startswith(("first failure:", "evidence:", "timeline:", "  ")) for line in text.splitlines()), text


def test_a_known_secret_in_an_actors_name_or_a_pods_is_masked_wherever_the_diagnosis_names_them():
    # issue 33, a twenty-first round, a hostile Ray head: the evidence and each event's text were masked, but the worker
    # a failure and each timeline row name (an actor's name is whatever the Job's code passed Ray), its Pod and node
    # were not, so `rlark diagnose` printed a Job's secret env value in its first line, its JSON and its kept record
    secret = "hunter2-very-secret"
    actors = [{"name": f"ActorGroup:2 {secret}", "pid": 9, "node_id": "n1", "state": "DEAD",
               "death_cause": {"actor_died_error_context": {"error_message": "segfault"}}}]
    pods = [{"metadata": {"name": f"pod-{secret}"}, "spec": {"nodeName": f"node-{secret}"},
             "status": {"podIP": "10.0.0.9"}}]
    found = d.diagnose(d.Inputs("j", actors=actors, pods=pods, node_ips={"n1": "10.0.0.9"}, known=[secret]))
    shown = d.render(found) + json.dumps(d.to_json(found))
    assert found.first_failure is not None and found.first_failure.worker == "ActorGroup:2 ***", shown
    assert secret not in shown, shown
