"""Alert rules over the platform's state and the run's own log, and the book that turns what the rules find into
alerts that fire once and resolve (issue 27 item 1).

The platform's phases cannot be trusted alone (a StatefulSet Task never reports Failed, a crashed Ray head leaves
the Job Running), so the Header Pod's log speaks too: RLinf's crash chain, CUDA and Ray memory kills, the head
script's Ray check, the end-of-run lines, and the progress clock.

Pure: the reads live in polls.py, the acknowledgements file in acks.py. One firing alert per (Job, rule, object)
until it resolves; firing and resolving are events, numbered so that every consumer (the TUI's toasts,
`rlark watch`, hooks) can take the new ones.
"""

from __future__ import annotations

import hashlib
import time as _time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any, Protocol

from rlark_tui.alerting.thresholds import Thresholds
from rlark_tui.model.keys import RESTARTED_AT_ANNOTATION
from rlark_tui.model.objects import Job, Pod, Task, dig, main_container_status, restart_count
from rlark_tui.model.podstate import ended_with_job_restart, unschedulable
from rlark_tui.model.timefmt import parse_time
from rlark_tui.telemetry.progress import Line, Progress
from rlark_tui.telemetry.sample import GPU_INDEX, GPU_UTIL, GPUS, SOURCE, PodUsage, all_gpus_below
from rlark_tui.text import sinks
from rlark_tui.text.redact import KnownSecrets, redact_text, secret_values
from rlark_tui.text.sanitize import clean

CRITICAL, WARNING, INFO = "critical", "warning", "info"
SEVERITIES = (CRITICAL, WARNING, INFO)
MARKS: Mapping[str, str] = MappingProxyType({CRITICAL: "✗", WARNING: "⚠", INFO: "·"})
ALL_KEY = "all"
"""The scope of every Job: the alerts topic's key for the TUI (and `rlark watch` without Job names)."""
"""How the header, the job list and `rlark status` mark a severity."""
RULES: Mapping[str, str] = MappingProxyType({
    "job-unreadable": WARNING,
    "run-crashed": CRITICAL,
    "job-failed": CRITICAL,
    "run-oom": CRITICAL,
    "ray-not-ready": CRITICAL,
    "start-stalled": WARNING,
    "run-finished": INFO,
    "job-stopped": INFO,
    "phase-mismatch": WARNING,
    "pod-oomkilled": CRITICAL,
    "pod-backoff": CRITICAL,
    "pod-image": CRITICAL,
    "pod-evicted": WARNING,
    "pod-unschedulable": WARNING,
    "pod-restarted": WARNING,
    "progress-stalled": WARNING,
    "gpu-idle": WARNING,
    "ray-nodes-missing": WARNING,
    "source-unreachable": WARNING,
})
"""Every rule and its severity."""
LOG_RULES = ("run-crashed", "run-oom", "ray-not-ready", "start-stalled", "run-finished")
POD_RULES = ("pod-oomkilled", "pod-backoff", "pod-image", "pod-evicted", "pod-unschedulable", "pod-restarted")
STATE_RULES = ("job-failed", "job-stopped", "phase-mismatch")
MISMATCH_SECONDS = 30.0
"""A phase mismatch must last this long: Tasks and Pods trail the Job's phase for a moment at every change."""
RESTART_QUIET_SECONDS = 600.0
"""A pod-restarted alert resolves once the count has not risen again for this long."""
MAX_EVENTS = 500
MAX_HISTORY = 200
MAX_TEXT = 300
"""Messages and evidence are cut to this many characters (one line)."""

# -- the run's own log (rlinf-runtime.md §2, issue 27 "Facts") ------------------------------------------------
CRASH_MARKS = ("Exception occurred while running ", "Exiting main process due to a failure upon worker execution.")
RAY_KILL_ECHO = "ray.kill"
"""Later `Exception occurred …` lines about actors "killed by `ray.kill`" are the driver's clean-up, not the cause."""
OOM_MARKS = ("OutOfMemoryError", "CUDA out of memory", "CUresult error result=2 file=csrc/torch_memory_saver.cpp",
             "Task was killed due to the node running low on memory.",
             "were killed due to the node running low on memory.")
ECHO_LOOKAHEAD = 12
"""Lines after a crash line searched for the `ray.kill` that makes it an echo (the error text runs on)."""
RAY_NOT_READY_MARKS = ("Error: Cluster did not become ready within", "Warning: Ray cluster check failed")
RUN_STARTED_MARK = "Executing run script..."
FINISHED_MARKS = (("Step limit given by max_steps=", " reached. Stopping run"),
                  ("Time limit given by run_timer=", " reached. Stopping run"))


def one_line(text: str, limit: int = MAX_TEXT) -> str:
    """Cluster text made safe for a terminal and a payload: secrets masked, no control characters, one line,
    bounded."""
    flat = " ".join(clean(redact_text(text[:8 * limit])).split())
    return flat if len(flat) <= limit else flat[:limit - 1] + "…"


# -- what the Header log says --------------------------------------------------------------------------------

Mark = tuple[float | None, str]
"""(epoch seconds of the log line or None, the line)."""


@dataclass(frozen=True)
class LogFacts:
    """What one Pod instance's log has said so far (kept across reads, reset when the instance changes)."""

    instance: str = ""
    """The Pod and its restart count the facts belong to (`<pod>#<restarts>`)."""
    crash: Mark | None = None
    crash_echo: Mark | None = None
    """The first crash line that is only a `ray.kill` echo (used when the first failure is out of reach)."""
    oom: Mark | None = None
    ray_not_ready: Mark | None = None
    run_started: Mark | None = None
    finished: Mark | None = None
    progressed: bool = False
    """A progress row was seen in this instance's log."""

    @property
    def first_failure(self) -> Mark | None:
        return self.crash or self.crash_echo


def _finished(text: str) -> bool:
    for start, end in FINISHED_MARKS:
        at = text.find(start)
        if at >= 0 and end in text[at:]:
            return True
    return False


def scan_log(lines: Iterable[Line], facts: LogFacts | None = None, instance: str | None = "") -> LogFacts:
    """Fold newly read lines into the facts of a Pod instance (new facts when `instance` differs; None: the same
    instance as before). The first of each kind stays: the first failure is the evidence, not what follows it."""
    if instance is None:
        instance = facts.instance if facts is not None else ""
    if facts is None or facts.instance != instance:
        facts = LogFacts(instance=instance)
    found = {name: getattr(facts, name) for name in ("crash", "crash_echo", "oom", "ray_not_ready", "run_started",
                                                      "finished")}
    progressed = facts.progressed
    candidate: Mark | None = None
    ahead = 0
    for at, raw in lines:
        text = raw.rsplit("\r", 1)[-1] if "\r" in raw else raw
        if "Global Step" in text:
            progressed = True
        crash = any(mark in text for mark in CRASH_MARKS)
        if candidate is not None:
            # the Ray error after `exception is` spans lines: an actor "killed by `ray.kill`" is an echo
            if RAY_KILL_ECHO in text and not crash:
                found["crash_echo"] = found["crash_echo"] or candidate
                candidate = None
            elif crash or ahead == 0:
                found["crash"], candidate = candidate, None
            else:
                ahead -= 1
        if found["crash"] is None and candidate is None and crash:
            if RAY_KILL_ECHO in text:
                found["crash_echo"] = found["crash_echo"] or (at, text)
            else:
                candidate, ahead = (at, text), ECHO_LOOKAHEAD
        if found["oom"] is None and any(mark in text for mark in OOM_MARKS):
            found["oom"] = (at, text)
        if found["ray_not_ready"] is None and any(mark in text for mark in RAY_NOT_READY_MARKS):
            found["ray_not_ready"] = (at, text)
        if found["run_started"] is None and RUN_STARTED_MARK in text:
            found["run_started"] = (at, text)
        if found["finished"] is None and _finished(text):
            found["finished"] = (at, text)
    if candidate is not None:
        found["crash"] = candidate
    return replace(facts, progressed=progressed, **found)


# -- the rules -----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Finding:
    """A rule's condition seen now. It fires once it has held for `hold` seconds, counted from `since` when the
    condition's own start is known (a Pod's creation, a log line's time), else from when it was first seen."""

    rule: str
    job: str
    object: str
    message: str
    evidence: str
    namespace: str = ""
    hold: float = 0.0
    since: float | None = None
    pod: str = ""
    """The Pod CR key (`namespace/name`) the evidence is in, for `enter` in `:alerts`."""
    previous: bool = False
    """The evidence is in the Pod's previous container instance (an OOMKilled one)."""
    job_uid: str = ""
    occurrence: str = ""
    """Which time the condition holds, where it can end and begin again between two rounds (a stall at step 2, then
    one at step 3): a finding of another occurrence than its firing alert's resolves that alert and fires anew."""

    @property
    def key(self) -> tuple[str, str, str]:
        """One alert per (Job, rule, object)."""
        return (self.job, self.rule, self.object)

    @property
    def severity(self) -> str:
        return RULES[self.rule]


@dataclass(frozen=True)
class JobInputs:
    """What is known of one Job now. None means unknown (not read, or its source failed): the rules that need it
    neither fire nor resolve."""

    job: Mapping
    tasks: tuple[Mapping, ...] = ()
    pods: tuple[Mapping, ...] = ()
    """Pod CRs of the Job's Tasks."""
    plane_pods: Mapping[str, Mapping] | None = None
    """Pod CR key -> its data-plane pod (core/v1)."""
    log: LogFacts | None = None
    """The Header Pod's log facts."""
    header_pod: str = ""
    """The Pod CR key of the Header Pod the log was read from."""
    worker_logs: Mapping[str, LogFacts] = field(default_factory=lambda: MappingProxyType({}))
    """Pod CR key -> the log facts of the Job's other Pods (run-oom in any Pod's log), as far as read."""
    progress: Progress | None = None
    ray: Mapping | None = None
    """`ClusterAccess.ray_status` of the Job (alive_nodes, expected, error)."""
    usage: Mapping[str, PodUsage] | None = None
    """Pod CR key -> its newest resource sample."""
    known: frozenset[str] = frozenset()
    """Values masked in what the rules quote of the logs besides the Job's own secret-looking env values: those of
    the Secrets its Pods reference and its Ray token (cluster/secrets.py reads them)."""
    stacks: str | None = None
    """Where the ranks were when this stall began (telemetry.stacks.summary: the outliers line), or why no stack was
    taken; None when none was asked for (the rounds take them once per stall: stall_key)."""


@dataclass(frozen=True)
class Evaluation:
    """Findings of one round, and which (Job, rule) pairs the round could judge (only those resolve when their
    finding is absent); `jobs`: every Job that exists (alerts of the others resolve)."""

    findings: tuple[Finding, ...] = ()
    covered: frozenset[tuple[str, str]] = frozenset()
    jobs: frozenset[str] | None = None


class Add(Protocol):
    """How a rule reports a finding: rule, object, message, evidence and Finding's other fields (pod, hold, …)."""

    def __call__(self, rule: str, obj: str, message: str, evidence: str, **extra: Any) -> None: ...


def _stamp(text: object) -> float | None:
    """An API timestamp as epoch seconds, None when model.timefmt.parse_time reads none in it: a data plane's
    creationTimestamp of 5 raised AttributeError (the Job's every finding became job-unreadable), and one past the
    calendar in UTC was a time no reader can turn back into a date."""
    stamp = parse_time(text if isinstance(text, str) else None)
    return stamp.timestamp() if stamp else None


def _evidence(mark: Mark) -> str:
    at, text = mark
    prefix = datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ ") if at is not None else ""
    return one_line(prefix + text.strip())


def _masked(mark: Mark, mask: Callable[[str], str]) -> Mark:
    """A log line as the rules may quote it: the Job's known secret values masked (before one_line bounds it, so
    no part of a value survives a cut)."""
    return mark[0], mask(mark[1])


def _job_namespace(job: Job, tasks: Iterable[Mapping], pods: Iterable[Mapping]) -> str:
    head = job.head_task_name
    for raw in tasks:
        task = Task(raw)
        if task.name == head and task.namespace:
            return task.namespace
    return next((pod.namespace for pod in map(Pod, pods) if pod.namespace), "")


def job_findings(inputs: JobInputs, thresholds: Thresholds, now: float) -> Evaluation:
    """Every rule over one Job, except pod-restarted (which needs memory: RestartMemory)."""
    job = Job(inputs.job)
    name, phase = job.name, job.phase
    namespace = _job_namespace(job, inputs.tasks, inputs.pods)
    found: list[Finding] = []
    covered = {(name, rule) for rule in (*STATE_RULES, "job-unreadable")}

    def add(rule: str, obj: str, message: str, evidence: str, **extra) -> None:
        found.append(Finding(rule, name, obj, one_line(message), one_line(evidence), namespace,
                             job_uid=job.uid, **extra))

    status_message = job.message
    if phase == "Failed":
        add("job-failed", name, f"Job {name} failed" + (f": {status_message}" if status_message else ""),
            "phase Failed" + (f" ({status_message})" if status_message else ""))
    if job.stopped or phase == "Stopped":
        add("job-stopped", name, f"Job {name} was stopped", f"phase {phase or '-'}, spec.stopped {job.stopped}")
    _mismatch(job, inputs, add)
    if inputs.log is not None:
        covered.update((name, rule) for rule in LOG_RULES)
        _log_rules(job, inputs, inputs.log, thresholds, add)
    if inputs.progress is not None or inputs.log is not None:
        covered.add((name, "progress-stalled"))
        covered.add((name, "run-finished"))
        _progress_rules(job, inputs, thresholds, now, add)
    if inputs.plane_pods is not None:
        covered.update((name, rule) for rule in POD_RULES if rule != "pod-restarted")
        _pod_rules(inputs, inputs.plane_pods, thresholds, add)
    if inputs.usage is not None:
        covered.add((name, "gpu-idle"))
        _gpu_rule(inputs, inputs.usage, thresholds, add)
    if inputs.ray is not None and not inputs.ray.get("error"):
        covered.add((name, "ray-nodes-missing"))
        alive, expected = inputs.ray.get("alive_nodes"), inputs.ray.get("expected")
        if phase == "Running" and isinstance(alive, int) and isinstance(expected, int) and alive < expected:
            add("ray-nodes-missing", name, f"Ray has {alive} of {expected} nodes alive",
                f"Ray dashboard: {alive} alive nodes, {expected} expected", hold=thresholds.ray_missing_seconds)
    elif phase != "Running":
        covered.add((name, "ray-nodes-missing"))
    # one finding per (Job, rule, object): the first wins (run-finished may come from the log and the table)
    unique = {finding.key: finding for finding in reversed(found)}
    return Evaluation(tuple(reversed(list(unique.values()))), frozenset(covered))


def _mismatch(job: Job, inputs: JobInputs, add: Add) -> None:
    if job.stopped:
        return
    head = job.head_task_name
    task_phase = {task.name: task.phase for task in map(Task, inputs.tasks)}
    for entry in job.status_tasks:
        task_phase.setdefault(entry["name"], entry["phase"])
    if job.phase == "Running" and head:
        head_pods = [pod for pod in map(Pod, inputs.pods) if pod.task_name == head]
        if task_phase.get(head) == "Pending":
            add("phase-mismatch", head, f"Job {job.name} is Running but its Header Task {head} is Pending",
                f"Job phase Running, Task {head} phase Pending", hold=MISMATCH_SECONDS)
        elif head in task_phase and not any(pod.phase == "Running" for pod in head_pods):
            add("phase-mismatch", head, f"Job {job.name} is Running but its Header Task {head} has no Running Pod",
                f"Job phase Running, Pods of {head}: "
                + (", ".join(f"{pod.pod_name or pod.name} {pod.phase or '-'}" for pod in head_pods) or "none"),
                hold=MISMATCH_SECONDS)
    elif job.phase == "Pending":
        failed = sorted(task for task, phase in task_phase.items() if phase == "Failed")
        if failed:
            add("phase-mismatch", failed[0], f"Job {job.name} is Pending but its Task {failed[0]} Failed",
                f"Job phase Pending, Task {failed[0]} phase Failed", hold=MISMATCH_SECONDS)


def _log_rules(job: Job, inputs: JobInputs, facts: LogFacts, thresholds: Thresholds, add: Add) -> None:
    pod = inputs.header_pod
    pods = [(f"{cr.namespace}/{cr.name}", cr) for cr in map(Pod, inputs.pods)]
    where = next((cr.pod_name for key, cr in pods if key == pod and cr.pod_name), "") or "the Header Pod"
    masked = KnownSecrets(secret_values([inputs.job, list(inputs.tasks)]) | inputs.known).mask
    failure = _masked(facts.first_failure, masked) if facts.first_failure is not None else None
    if failure is not None:
        add("run-crashed", job.name, f"the run crashed: {failure[1].strip()}", _evidence(failure), pod=pod)
    shown = {key: cr.pod_name or cr.name for key, cr in pods}
    for key, pod_facts in ((pod, facts), *sorted(inputs.worker_logs.items())):
        if pod_facts.oom is not None and (key == pod or key in shown):
            name = where if key == pod else shown[key]
            oom = _masked(pod_facts.oom, masked)
            add("run-oom", name, f"out of memory in {name}: {oom[1].strip()}", _evidence(oom), pod=key)
    if facts.ray_not_ready is not None:
        not_ready = _masked(facts.ray_not_ready, masked)
        add("ray-not-ready", job.name, f"the Ray cluster did not become ready: {not_ready[1].strip()}",
            _evidence(not_ready), pod=pod)
    started = facts.run_started
    if started is not None and not facts.progressed and inputs.progress is None and job.phase == "Running" \
            and failure is None:
        add("start-stalled", job.name,
            f"the run script started but no progress row came within {thresholds.start_seconds:.0f} s",
            _evidence(_masked(started, masked)), hold=thresholds.start_seconds, since=started[0], pod=pod)
    if facts.finished is not None:
        finished = _masked(facts.finished, masked)
        add("run-finished", job.name, f"the run finished: {finished[1].strip()}", _evidence(finished), pod=pod)


def _progress_rules(job: Job, inputs: JobInputs, thresholds: Thresholds, now: float, add: Add) -> None:
    row = inputs.progress
    if row is None:
        return
    if row.total and row.step >= row.total:
        add("run-finished", job.name, f"the run reached its last step {row.step}/{row.total}",
            f"progress row {row.step}/{row.total}", pod=inputs.header_pod)
        return
    if job.phase != "Running" or row.at is None:
        return
    if inputs.log is not None and inputs.log.first_failure is not None:
        return  # a crashed run is reported as that, not as a stall as well
    limit = max(thresholds.stall_factor * (row.step_seconds or 0.0), thresholds.stall_min_seconds)
    age = now - row.at
    if age > limit:
        stacks = f"; stacks: {inputs.stacks}" if inputs.stacks else ""
        add("progress-stalled", job.name,
            f"no new progress row for {age:.0f} s (limit {limit:.0f} s) at step {row.step}/{row.total}{stacks}",
            _evidence((row.at, f"Global Step {row.step}/{row.total}"
                       + (f", step time {row.step_seconds:.1f} s" if row.step_seconds else "") + stacks)),
            pod=inputs.header_pod, occurrence=stall_occurrence((job.uid, row.at, row.step)))


def stall_key(inputs: JobInputs) -> tuple | None:
    """What names one stall of a Job (its uid, the last progress row's time and step), so that its stacks are
    taken once; None when the Job has no progress row with a time."""
    row = inputs.progress
    if row is None or row.at is None:
        return None
    return Job(inputs.job).uid, row.at, row.step


def stall_occurrence(stall: tuple) -> str:
    """The progress-stalled finding's occurrence of a stall (stall_key): the last progress row's step and time."""
    _uid, at, step = stall
    return f"step {step} at {at}"


def stalled(evaluation: Evaluation) -> bool:
    """The Job's findings hold a progress-stalled one."""
    return any(finding.rule == "progress-stalled" for finding in evaluation.findings)


BACKOFF = ("CrashLoopBackOff", "BackOff")
IMAGE = ("ErrImagePull", "ImagePullBackOff")


def _with_job_restart(inputs: JobInputs, cr: Pod, status: Mapping) -> bool:
    """A worker Pod in its restart that came with the Job's own Edit & Restart (model.podstate.ended_with_job_restart):
    the Header Pod was replaced, and this worker's Ray node ended with it; no pod-backoff nor pod-restarted for that."""
    job = Job(inputs.job)
    return cr.task_name != job.head_task_name and ended_with_job_restart(
        status, dig(inputs.job, "metadata", "annotations", RESTARTED_AT_ANNOTATION))


def _pod_rules(inputs: JobInputs, plane_pods: Mapping[str, Mapping], thresholds: Thresholds, add: Add) -> None:
    for raw in inputs.pods:
        cr = Pod(raw)
        key = f"{cr.namespace}/{cr.name}"
        shown = cr.pod_name or cr.name
        real = plane_pods.get(key)
        if real is None:
            continue
        status = main_container_status(real)
        waiting = dig(status, "state", "waiting", "reason", default="")
        waiting_message = dig(status, "state", "waiting", "message", default="")
        for where, previous in ((("state", "terminated"), False), (("lastState", "terminated"), True)):
            if dig(status, *where, "reason") == "OOMKilled":
                code = dig(status, *where, "exitCode")
                finished = dig(status, *where, "finishedAt", default="")
                add("pod-oomkilled", shown, f"Pod {shown} was OOMKilled" + (f" (exit {code})" if code else ""),
                    f"{'lastState' if previous else 'state'}.terminated OOMKilled"
                    + (f" at {finished}" if finished else ""), pod=key, previous=previous)
                break
        if waiting in BACKOFF and not _with_job_restart(inputs, cr, status):
            add("pod-backoff", shown, f"Pod {shown} is in {waiting}", f"state.waiting {waiting} {waiting_message}",
                pod=key, previous=True)
        if waiting in IMAGE:
            add("pod-image", shown, f"Pod {shown} cannot pull its image ({waiting})",
                f"state.waiting {waiting} {waiting_message}", pod=key)
        if dig(real, "status", "reason") == "Evicted":
            add("pod-evicted", shown, f"Pod {shown} was evicted",
                f"Evicted: {dig(real, 'status', 'message', default='')}", pod=key)
        reason = unschedulable(real)
        if reason or (dig(real, "status", "phase") == "Pending" and not dig(real, "spec", "nodeName")):
            created = _stamp(dig(real, "metadata", "creationTimestamp", default="") or cr.creation_timestamp)
            add("pod-unschedulable", shown,
                f"Pod {shown} is not scheduled after {thresholds.unschedulable_seconds:.0f} s"
                + (f": {reason}" if reason else ""), reason or "phase Pending, no node",
                hold=thresholds.unschedulable_seconds, since=created, pod=key)


def _gpu_rule(inputs: JobInputs, usage: Mapping[str, PodUsage], thresholds: Thresholds, add: Add) -> None:
    for raw in inputs.pods:
        cr = Pod(raw)
        key = f"{cr.namespace}/{cr.name}"
        sample = usage.get(key)
        if cr.phase != "Running" or sample is None or not all_gpus_below(sample, thresholds.gpu_idle_percent):
            continue
        shown = cr.pod_name or cr.name
        utils = ", ".join(f"GPU {gpu[GPU_INDEX]} {gpu[GPU_UTIL]:.0f}%" for gpu in sample[GPUS] or ())
        add("gpu-idle", shown, f"Pod {shown}'s GPUs idle below {thresholds.gpu_idle_percent:g}% for "
                               f"{thresholds.gpu_idle_seconds:.0f} s", f"{sample[SOURCE]}: {utils}",
            hold=thresholds.gpu_idle_seconds, pod=key)


def source_findings(sources: Mapping[str, object], thresholds: Thresholds) -> Evaluation:
    """source-unreachable for the control plane, each data plane and the gateway (platform-wide: job '')."""
    found = []
    for name, state in sources.items():
        if not (name.startswith("data plane ") or name in ("gateway", "control plane")):
            continue
        if getattr(state, "status", "") == "disconnected":
            reason = getattr(state, "reason", "")
            found.append(Finding("source-unreachable", "", name, one_line(f"{name} unreachable: {reason}"),
                                 one_line(reason or "disconnected"), hold=thresholds.source_seconds))
    return Evaluation(tuple(found), frozenset({("", "source-unreachable")}))


@dataclass(frozen=True)
class RestartMemory:
    """Per Pod CR key: (restart count it is compared with, the last count seen, when it last rose)."""

    counts: Mapping[str, tuple[int, int, float]] = field(default_factory=lambda: MappingProxyType({}))


def restart_findings(inputs: JobInputs, memory: RestartMemory, now: float
                     ) -> tuple[Evaluation, dict[str, tuple[int, int, float]]]:
    """pod-restarted: a Pod's `main` restart count rose above the count first seen; it resolves after
    RESTART_QUIET_SECONDS without a further rise (the new count becomes the baseline). Returns the Job's
    findings and its Pods' new memory entries (the caller folds those of every Job into the next RestartMemory)."""
    job = Job(inputs.job)
    if inputs.plane_pods is None:
        return Evaluation(), {}
    updates: dict[str, tuple[int, int, float]] = {}
    found = []
    namespace = ""
    for raw in inputs.pods:
        cr = Pod(raw)
        key = f"{cr.namespace}/{cr.name}"
        real = inputs.plane_pods.get(key)
        status = main_container_status(real) if real is not None else {}
        count = restart_count(status) if real is not None else None
        if count is None:
            continue
        base, last, rose = memory.counts.get(key, (count, count, now))
        if count > last and count == last + 1 and _with_job_restart(inputs, cr, status):
            base = count
        elif count > last:
            rose = now
        elif count > base and now - rose >= RESTART_QUIET_SECONDS:
            base = count
        updates[key] = (base, count, rose)
        if count > base:
            shown = cr.pod_name or cr.name
            namespace = namespace or _job_namespace(job, inputs.tasks, inputs.pods)
            found.append(Finding("pod-restarted", job.name, shown,
                                 one_line(f"Pod {shown} restarted ({count} restarts, was {base})"),
                                 f"restartCount {base} -> {count}", namespace, pod=key, previous=True,
                                 job_uid=job.uid))
    return Evaluation(tuple(found), frozenset({(job.name, "pod-restarted")})), updates


UNREADABLE = (RecursionError, ValueError, TypeError, AttributeError, KeyError, IndexError, OverflowError)
"""What judging a hostile object can raise: that Job gets a job-unreadable finding, the other Jobs are judged."""


def unreadable(job: Job, error: BaseException) -> Evaluation:
    """The finding of a Job whose objects the rules could not read (`unreadable: <why>`), and nothing else judged."""
    name = job.name
    why = f"{type(error).__name__} judging its objects"
    return Evaluation((Finding("job-unreadable", name, name, one_line(f"Job {name} is unreadable: {why}"),
                               f"unreadable: {why}", job.namespace, job_uid=job.uid),),
                      frozenset({(name, "job-unreadable")}))


def merge(evaluations: Iterable[Evaluation], jobs: Iterable[str] | None = None) -> Evaluation:
    findings: list[Finding] = []
    covered: set[tuple[str, str]] = set()
    for evaluation in evaluations:
        findings.extend(evaluation.findings)
        covered |= evaluation.covered
    return Evaluation(tuple(findings), frozenset(covered), frozenset(jobs) if jobs is not None else None)


# -- the book: fire once, resolve, acknowledge ---------------------------------------------------------------

FIRING, RESOLVED, ACKNOWLEDGED = "firing", "resolved", "acknowledged"


@dataclass(frozen=True)
class Alert(Finding):
    """A finding that fired: what the rule saw (its key, message, evidence, where to open it) and when it began
    (`since`: as far as known, else when first seen), fired and resolved."""

    fired_at: float = 0.0
    state: str = FIRING
    resolved_at: float | None = None

    @classmethod
    def fired(cls, finding: Finding, since: float, now: float) -> Alert:
        return cls(**{f.name: getattr(finding, f.name) for f in fields(Finding)} | {"since": since}, fired_at=now)

    @property
    def ack_key(self) -> str:
        """What an acknowledgement names: the Job's uid (a new Job of the same name is a new run), rule, object; a
        key past ACK_KEY_CHARS (cluster text: a Pod CR's podName is free text) is named by its digest, so a few
        acknowledgements of one Job's long alerts cannot take the acknowledgements file past what is read back
        (local/acks.MAX_FILE_BYTES), and every other Job's with it."""
        key = f"{self.job_uid or self.job}/{self.rule}/{self.object}"
        if len(key) <= ACK_KEY_CHARS:
            return key
        return "sha256:" + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


ACK_KEY_CHARS = 512
"""The longest acknowledgement key kept as it is (a longer one is named by its digest: Alert.ack_key)."""


@dataclass(frozen=True)
class Event:
    """An alert fired or resolved; `seq` rises by one per event of a book."""

    seq: int
    time: float
    alert: Alert
    state: str

    def record(self) -> dict:
        """The JSON line of `rlark watch -o json` and the hooks' payload."""
        return {"time": iso(self.time), "severity": self.alert.severity, "rule": self.alert.rule,
                "job": self.alert.job, "namespace": self.alert.namespace, "object": self.alert.object,
                "message": self.alert.message, "state": self.state}

    def line(self) -> str:
        """`2026-12-01T10:31:02Z critical run-crashed demo-ppo firing: the run crashed: …`"""
        a = self.alert
        return f"{iso(self.time)} {a.severity:<8} {a.rule} {a.job or '-'} {self.state}: {a.message}"


def toast(alerts: list[Alert]) -> tuple[str, str, bool]:
    """(title, message, critical) of the one toast that announces these new alerts: the alert itself when it is
    alone, else their count by severity and the most severe of them, the Job's name on its one line."""
    first = min(alerts, key=lambda a: SEVERITIES.index(a.severity))
    critical = any(a.severity == CRITICAL for a in alerts)
    # as the control plane gave it: a line break forged a line, and 100 KB filled the screen
    name = sinks.one_line(sinks.cut(first.job or first.object, sinks.NAME_CHARS))
    if len(alerts) == 1:
        return f"{first.severity} {first.rule}", f"{name}: {first.message}", critical
    counts = [f"{n} {severity}" for severity in SEVERITIES
              if (n := sum(1 for a in alerts if a.severity == severity))]
    return (f"{len(alerts)} new alerts ({', '.join(counts)})",
            f"{first.rule} {name}: {first.message} … see :alerts", critical)


def iso(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Book:
    """The alerts now (firing or acknowledged), conditions waiting out their hold, the resolved ones (newest
    last, bounded) and the newest events."""

    alerts: Mapping[tuple[str, str, str], Alert] = field(default_factory=lambda: MappingProxyType({}))
    pending: Mapping[tuple[str, str, str], float] = field(default_factory=lambda: MappingProxyType({}))
    history: tuple[Alert, ...] = ()
    events: tuple[Event, ...] = ()
    seq: int = 0

    def firing(self) -> list[Alert]:
        """Firing (not acknowledged) alerts, most severe first."""
        return sorted((a for a in self.alerts.values() if a.state == FIRING),
                      key=lambda a: (SEVERITIES.index(a.severity), a.fired_at))

    def counts(self) -> dict[str, int]:
        """Firing alerts per severity."""
        found = dict.fromkeys(SEVERITIES, 0)
        for alert in self.alerts.values():
            if alert.state == FIRING:
                found[alert.severity] += 1
        return found

    def jobs_firing(self) -> dict[str, str]:
        """Job name -> the most severe severity among its firing alerts."""
        found: dict[str, str] = {}
        for alert in self.firing():
            found.setdefault(alert.job, alert.severity)
        return found

    def listing(self) -> list[Alert]:
        """Current alerts then the resolved ones, newest first (the `:alerts` view)."""
        current = sorted(self.alerts.values(), key=lambda a: -a.fired_at)
        return current + sorted(self.history, key=lambda a: -(a.resolved_at or 0.0))

    def events_after(self, seq: int) -> list[Event]:
        return [event for event in self.events if event.seq > seq]


def step(book: Book, evaluation: Evaluation, now: float | None = None,
         acks: Iterable[str] = ()) -> Book:
    """The next book: findings that held long enough fire (acknowledged ones fire silently, as acknowledged);
    alerts whose finding is gone resolve where the round covered their rule, or when their Job is gone. When
    nothing changed, `book` itself (so that a quiet round publishes nothing)."""
    now = _time.time() if now is None else now
    acked = set(acks)
    alerts = dict(book.alerts)
    pending = dict(book.pending)
    history = list(book.history)
    events = list(book.events)
    seq = book.seq
    seen = set()
    for finding in evaluation.findings:
        key = finding.key
        seen.add(key)
        current = alerts.get(key)
        if current is not None and current.occurrence == finding.occurrence:
            state = ACKNOWLEDGED if current.ack_key in acked else FIRING
            if current.state != state:
                alerts[key] = replace(current, state=state)
            continue
        if current is not None:  # its condition ended and began again since the last round: resolved, then anew
            seq = _resolve(alerts, key, now, history, events, seq)
        first = pending.get(key, now)
        if finding.since is not None:
            first = min(first, finding.since)
        if now - first < finding.hold:
            pending[key] = first
            continue
        pending.pop(key, None)
        alert = Alert.fired(finding, first, now)
        if alert.ack_key in acked:
            alerts[key] = replace(alert, state=ACKNOWLEDGED)
            continue
        alerts[key] = alert
        seq += 1
        events.append(Event(seq, now, alert, FIRING))

    def judged(key: tuple[str, str, str]) -> bool:
        job, rule, _ = key
        gone = evaluation.jobs is not None and job and job not in evaluation.jobs
        return bool(gone) or (job, rule) in evaluation.covered

    for key in [k for k in pending if k not in seen and judged(k)]:
        del pending[key]
    for key in [k for k in alerts if k not in seen and judged(k)]:
        seq = _resolve(alerts, key, now, history, events, seq)
    if seq == book.seq and pending == book.pending and alerts == book.alerts:
        return book  # nothing fired, resolved, changed state or began to wait: the very same book
    return Book(MappingProxyType(alerts), MappingProxyType(pending), tuple(history[-MAX_HISTORY:]),
                tuple(events[-MAX_EVENTS:]), seq)


def _resolve(alerts: dict[tuple[str, str, str], Alert], key: tuple[str, str, str], now: float,
             history: list[Alert], events: list[Event], seq: int) -> int:
    """Move the alert of `key` to the history as resolved, with its event; the book's next seq."""
    alert = replace(alerts.pop(key), state=RESOLVED, resolved_at=now)
    history.append(alert)
    events.append(Event(seq + 1, now, alert, RESOLVED))
    return seq + 1


def header_instance(plane_pod: Mapping | None, pod_key: str) -> str | None:
    """The identity log facts belong to: the Pod and its `main` restart count (a restart is a new instance);
    None when the data-plane pod is unknown (the facts stay with the instance they were read from)."""
    count = restart_count(main_container_status(plane_pod)) if plane_pod is not None else None
    return f"{pod_key}#{count}" if count is not None else None


def frozen(mapping=None) -> Mapping:
    return MappingProxyType(dict(mapping or {}))


@dataclass(frozen=True)
class Evaluated:
    """One Job's last judgement: the next round judges the Job again only when one of its inputs changed, or at
    `wake_at` (epoch seconds), when a rule that reads the clock may change its mind."""

    found: Evaluation
    restarts: Evaluation
    updates: Mapping[str, tuple[int, int, float]]
    wake_at: float = float("inf")
    stall: tuple | None = None
    """A progress-stalled finding's stall (stall_key) whose stacks are still to be taken, else None."""


def wake_at(inputs: JobInputs, thresholds: Thresholds, updates: Mapping[str, tuple[int, int, float]],
            now: float) -> float:
    """The next time after `now` when the clock alone may change a Job's findings: its progress row turns stalled,
    or a risen restart count has been quiet for RESTART_QUIET_SECONDS (inf: never; every other rule's waiting is a
    hold the book keeps)."""
    times = [rose + RESTART_QUIET_SECONDS for base, count, rose in updates.values() if count > base]
    row = inputs.progress
    if (row is not None and row.at is not None and Job(inputs.job).phase == "Running"
            and not (row.total and row.step >= row.total)
            and not (inputs.log is not None and inputs.log.first_failure is not None)):
        limit = max(thresholds.stall_factor * (row.step_seconds or 0.0), thresholds.stall_min_seconds)
        times.append(row.at + limit + 0.001)  # the rule wants the age past the limit
    return min((at for at in times if at > now), default=float("inf"))


@dataclass(frozen=True)
class AlertsState:
    """What the `alerts` topic publishes for a scope: the book of alerts, the restart counts the pod-restarted rule
    compares with (a new Reconciler goes on from them), and what could not be read in the round (one line each).
    The rounds' own bookkeeping stays with them (alertpoll.AlertRounds)."""

    book: Book = field(default_factory=Book)
    restarts: RestartMemory = field(default_factory=RestartMemory)
    errors: tuple[str, ...] = ()
