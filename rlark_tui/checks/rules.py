"""The six checks of the run-check record (C1–C6) as pure functions of RunEvidence.

Each check returns a CheckRow; a row only passes on evidence items it can show (never on absence).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rlark_tui.checks import logscan
from rlark_tui.checks.evidence import (
    MainContainer,
    PodEvent,
    PodLog,
    RunEvidence,
    deadline_passed,
    latest_start,
    max_wait_seconds,
)
from rlark_tui.checks.refs import dig_path, show
from rlark_tui.checks.report import TITLES, CheckRow, EvidenceItem, Reason, Result
from rlark_tui.jobspec.resume import OVERRIDE, resume_dir_of, resume_step
from rlark_tui.model import keys
from rlark_tui.model.objects import Job, Pod, Task, TaskSpec, dig
from rlark_tui.model.placement import matching_nodes, rank_starts, task_namespace
from rlark_tui.model.podstate import FAILURE_EVENTS
from rlark_tui.model.storage import under
from rlark_tui.model.timefmt import parse_time
from rlark_tui.text import patterns
from rlark_tui.text.parse import ascii_int

MISSING_SHOWN = 20
"""The most unheld ranks a finding names (a Job may expect any number of nodes)."""
JOB_OWNER = "the Job's owner"
ADMIN = "a platform admin with data-plane access"
IMAGE_OWNER = "the image maintainer (build record or digest)"


@dataclass
class _Row:
    """A row under construction: findings and evidence accumulate, the result follows from them."""

    id: int
    evidence: list[EvidenceItem] = field(default_factory=list)
    findings: list[Reason] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def fail(self, message: str, stage: str) -> None:
        self.findings.append(Reason("fail", message, stage))

    def pending(self, message: str, owner: str | None = None) -> None:
        self.findings.append(Reason("pending", message, owner=owner))

    def late(self, late: bool, message: str, stage: str, owner: str | None = None) -> None:
        """Something expected is not there yet: pending within the max wait, a fail once it has passed."""
        if late:
            self.fail(message + " (max wait passed)", stage)
        else:
            self.pending(message, owner)

    def build(self, evidence: RunEvidence) -> CheckRow:
        self.findings = list(dict.fromkeys(self.findings))
        results = {f.result for f in self.findings}
        result: Result = "fail" if "fail" in results else "pending" if "pending" in results else "pass"
        if result == "pass" and not self.evidence:
            self.findings.append(Reason("pending", "no evidence found yet"))
            result = "pending"
        return CheckRow(self.id, TITLES[self.id], result, evidence.now, tuple(self.evidence),
                        tuple(self.findings), tuple(self.notes))


def _obj(ref: str, path: str, value: object, expected: object = None) -> EvidenceItem:
    return EvidenceItem("object", ref, show(path, value), path=path,
                        expected=None if expected is None else show(path, expected))


def _log(log: PodLog, hit: logscan.Hit) -> EvidenceItem:
    return EvidenceItem("log", log.pod, show("", hit.text), container=log.container,
                        instance=log.instance, line=hit.line)


def _record(ref: str, path: str, value: object) -> EvidenceItem:
    return EvidenceItem("record", ref, show(path, value), path=path)


def _ref(kind: str, obj: Mapping[str, Any]) -> str:
    namespace, name = dig(obj, "metadata", "namespace", default=""), dig(obj, "metadata", "name", default="")
    namespace, name = (value if isinstance(value, str) else "" for value in (namespace, name))
    return f"{kind}/{namespace}/{name}" if kind != "Job" else f"Job/{name}"


# ---------------------------------------------------------------- shared facts


@dataclass(frozen=True)
class _Facts:
    """What several checks derive from the same evidence."""

    job: Job
    specs: tuple[TaskSpec, ...]
    tasks: dict[str, Task]
    pods: dict[str, list[Pod]]
    """Per Task name, its Pod CRs in ordinal order."""
    head_task: str
    expected_nodes: int
    expected_source: str
    late: bool


def _facts(evidence: RunEvidence) -> _Facts:
    job = Job(evidence.job or {})
    specs = tuple(job.tasks)
    tasks = {task.name: task for task in map(Task, evidence.tasks)}
    pods: dict[str, list[Pod]] = {}
    for raw in evidence.pods:
        pod = Pod(raw)
        pods.setdefault(pod.task_name, []).append(pod)
    for group in pods.values():
        group.sort(key=lambda p: (p.ordinal is None, p.ordinal or 0, p.pod_name))
    record = evidence.launch_record or {}
    expected = record.get("expectedNumNodes")
    if isinstance(expected, int) and not isinstance(expected, bool) and expected > 0:
        expected_nodes, source = expected, "launch record expectedNumNodes"
    else:
        expected_nodes, source = sum(s.replicas for s in specs), "Σ replicas of the Job's tasks"
    return _Facts(job, specs, tasks, pods, job.head_task_name, expected_nodes, source, deadline_passed(evidence))


def _planned(plan: dict[str, Any] | None, task_name: str, short_name: str) -> tuple[str | None, list[str] | None]:
    """(cluster namespace, Node names) the deployment plan gives a task, or (None, None) without a plan."""
    if not isinstance(plan, dict):
        return None, None
    entries = plan.get("roles") if isinstance(plan.get("roles"), (list, dict)) else plan
    if isinstance(entries, dict):
        entries = [dict(v, task=v.get("task", k)) for k, v in entries.items() if isinstance(v, dict)]
    for entry in entries if isinstance(entries, list) else ():
        if not isinstance(entry, dict):
            continue
        if task_name in (entry.get("task"), entry.get("taskName")) or short_name in (
                entry.get("task"), entry.get("taskName"), entry.get("name")):
            namespace = entry.get("namespace") or entry.get("cluster")
            nodes = entry.get("nodes") or entry.get("matchedNodes")
            names = [n.get("name") if isinstance(n, dict) else n for n in nodes] if isinstance(nodes, list) else None
            return (namespace if isinstance(namespace, str) else None,
                    [n for n in names if isinstance(n, str)] if names is not None else None)
    return None, None


# ---------------------------------------------------------------- check 1


_COMPARED_TASK_FIELDS = (
    ("selector", "nodeSelector"),
    ("replicas", "kubernetes.workload.replicas"),
    ("Header", "head"),
    ("run script", "runScript"),
    ("prepare script", "prepareScript"),
    ("storage map", "kubernetes.workload.pvcStorageMap"),
    ("volumes", "kubernetes.workload.template.spec.volumes"),
)
_COMPARED_CONTAINER_FIELDS = (
    ("image", "image"), ("GPU/devices", "resources"), ("mounts", "volumeMounts"), ("env", "env"))


def _normal(path: str, value: object) -> object:
    """Values the platform treats as equal compare equal: nil replicas = 1, absent head = false, {} = absent."""
    if path.endswith("workload.replicas"):
        return 1 if value is None else value
    if path == "head":
        return bool(value)
    return value if value not in ({}, [], "") else None


def check_job(evidence: RunEvidence) -> CheckRow:
    row = _Row(1)
    job = evidence.job
    if job is None:
        row.evidence.append(EvidenceItem("object", f"Job/{evidence.job_name}", "not found"))
        row.fail(f"Job {evidence.job_name} does not exist", "job")
        return row.build(evidence)
    view = Job(job)
    ref = f"Job/{view.name}"
    row.evidence.append(_obj(ref, "status.phase", dig(job, "status", "phase")))
    row.evidence.append(_obj(ref, "metadata.creationTimestamp", view.creation_timestamp))
    if view.stopped:
        row.evidence.append(_obj(ref, "spec.stopped", True))
        row.fail("the Job is stopped (spec.stopped: true)", "job")
    if view.phase in ("Failed", "Stopped"):
        row.fail(f"the Job's phase is {view.phase}", "job")
    submitted = evidence.submitted_spec
    if not isinstance(submitted, dict):
        row.pending("no submitted spec is stored on the Job (made elsewhere?): nothing to compare with", JOB_OWNER)
        return row.build(evidence)
    if evidence.submitted_sha256:
        row.evidence.append(EvidenceItem("record", "submission", evidence.submitted_sha256, path="sha256"))
        if not evidence.submitted_intact:
            row.fail("the submitted spec stored on the Job does not hash to its stored sha256", "job")
    live = job.get("spec")
    _compare_spec(row, ref, live if isinstance(live, dict) else {}, submitted)
    return row.build(evidence)


MAX_NAMED = 20
"""Tasks or containers named one finding each; the rest are counted in one. A Job's author sets how many: 3,000
submitted tasks missing from 3,000 live ones each quoted the two lists (14 s and 155 MB of `rlark check`; 15,000
were some 6 minutes and GBs)."""


def _more(row: _Row, count: int, what: str) -> None:
    if count > MAX_NAMED:
        row.fail(f"… and {count - MAX_NAMED:,} more {what} (the first {MAX_NAMED} named)", "job")


def _named(items: Any, row: _Row, what: str) -> list[tuple[int, dict[str, Any]]]:
    """(index, item) of each mapping among `items` whose `name` is text; one without a name or with another value (a
    list, an object: no key to pair it by) fails the row, counted."""
    found, odd = [], 0
    for index, item in enumerate(items if isinstance(items, list) else []):
        if isinstance(item, dict):
            if isinstance(item.get("name"), str):
                found.append((index, item))
            else:
                odd += 1
    if odd:
        row.fail(f"{odd} {what} {'has' if odd == 1 else 'have'} a name that is not text (or none)", "job")
    return found


def _compare_spec(row: _Row, ref: str, live: dict[str, Any], submitted: dict[str, Any]) -> None:
    live_tasks = {t["name"]: (i, t) for i, t in _named(live.get("tasks"), row, "tasks of the live Job")}
    sub_tasks = [t for _, t in _named(submitted.get("tasks"), row, "submitted tasks")]
    submitted_names = {t.get("name") for t in sub_tasks}
    extra = [name for name in live_tasks if name not in submitted_names]
    for name in extra[:MAX_NAMED]:
        row.evidence.append(_obj(ref, f"spec.tasks[{live_tasks[name][0]}].name", name))
        row.fail(f"task {name} is in the live Job but was not submitted", "job")
    _more(row, len(extra), "tasks are in the live Job but were not submitted")
    missing = [t.get("name") for t in sub_tasks if t.get("name") not in live_tasks]
    if missing:  # the two lists once, however many are missing
        row.evidence.append(_obj(ref, "spec.tasks", [t.get("name") for _, t in live_tasks.values()],
                                 expected=[t.get("name") for t in sub_tasks]))
    for name in missing[:MAX_NAMED]:
        row.fail(f"submitted task {name} is missing from the live Job", "job")
    _more(row, len(missing), "submitted tasks are missing from the live Job")
    mismatches = []
    for sub in sub_tasks:
        name = sub.get("name")
        if name not in live_tasks:
            continue
        index, task = live_tasks[name]
        pairs = [(label, f"spec.tasks[{index}].{path}", dig_path(task, path), dig_path(sub, path))
                 for label, path in _COMPARED_TASK_FIELDS]
        live_containers = _named(dig_path(task, "kubernetes.workload.template.spec.containers"), row,
                                 f"containers of task {name} in the live Job")
        sub_containers = [c for _, c in _named(dig_path(sub, "kubernetes.workload.template.spec.containers"), row,
                                               f"submitted containers of task {name}")]
        by_name = {c["name"]: (j, c) for j, c in live_containers}
        gone = [c["name"] for c in sub_containers if c["name"] not in by_name]
        if gone:
            row.evidence.append(_obj(ref, f"spec.tasks[{index}].kubernetes.workload.template.spec.containers",
                                     [c["name"] for _, c in live_containers]))
        for container_name in gone[:MAX_NAMED]:
            row.fail(f"task {name}: container {container_name} is missing", "job")
        _more(row, len(gone), f"containers of task {name} are missing")
        for container in sub_containers:
            if container["name"] not in by_name:
                continue
            j, live_container = by_name[container["name"]]
            base = f"spec.tasks[{index}].kubernetes.workload.template.spec.containers[{j}]"
            pairs += [(label, f"{base}.{path}", live_container.get(path), container.get(path))
                      for label, path in _COMPARED_CONTAINER_FIELDS]
        for label, path, live_value, sub_value in pairs:
            short = path.rsplit(".", 1)[-1]
            if _normal(short if short == "head" else path, live_value) == _normal(
                    short if short == "head" else path, sub_value):
                row.evidence.append(_obj(ref, path, live_value))
            else:
                row.evidence.append(_obj(ref, path, live_value, expected=sub_value))
                mismatches.append(f"task {name}: {label} differs from the submitted spec")
    for key, label in (("domain", "network domain"),):
        if _normal(key, live.get(key)) != _normal(key, submitted.get(key)):
            row.evidence.append(_obj(ref, f"spec.{key}", live.get(key), expected=submitted.get(key)))
            mismatches.append(f"{label} differs from the submitted spec")
    for message in mismatches:
        row.fail(message, "job")


# ---------------------------------------------------------------- check 2


def check_pods(evidence: RunEvidence, facts: _Facts) -> CheckRow:
    row = _Row(2)
    if evidence.job is None:
        row.fail("no Job, so no Pods", "job")
        return row.build(evidence)
    if facts.job.stopped:
        row.fail("the Job is stopped: its Pods are scaled to 0", "pods")
        return row.build(evidence)
    total = 0
    planned_source = "the deployment plan" if evidence.plan else "the Nodes each selector matches now"
    if not evidence.plan:
        row.notes.append("no deployment plan stored: Pods compared with the Nodes each selector matches now")
    for spec in facts.specs:
        task_name = facts.job.task_name(spec)
        planned_ns, planned_nodes = _planned(evidence.plan, task_name, spec.name)
        if planned_nodes is None:
            planned_nodes = [_node_name(n) for n in matching_nodes(spec.node_selector, evidence.nodes)]
        if planned_ns is None:
            planned_ns = task_namespace(spec.node_selector, evidence.nodes)
        task = facts.tasks.get(task_name)
        if task is None:
            row.late(facts.late, f"Task {task_name} does not exist yet", "pods")
            continue
        task_ref = _ref("Task", task.raw)
        row.evidence.append(_obj(task_ref, "metadata.namespace", task.namespace))
        if task.namespace == "default":
            row.fail(f"Task {task_name} is in namespace default, which no agent watches: it never runs", "pods")
            continue
        if planned_ns and task.namespace != planned_ns:
            row.evidence[-1] = _obj(task_ref, "metadata.namespace", task.namespace, expected=planned_ns)
            row.fail(f"Task {task_name} is in {task.namespace}, planned {planned_ns}", "pods")
        pods = facts.pods.get(task_name, [])
        total += len(pods)
        wanted = spec.replicas
        if spec.head and wanted != 1:
            row.fail(f"the Header task {task_name} has {wanted} replicas: each would run its own Ray head",
                     "pods")
        if len(pods) < wanted:
            row.evidence.append(_obj(task_ref, "spec.kubernetes.workload.replicas",
                                     dig_path(task.raw.get("spec"), "kubernetes.workload.replicas")))
            if not pods:
                row.late(facts.late, f"no Pod details yet for {task_name} — waiting for task sync", "pods")
            else:
                row.late(facts.late, f"{task_name}: {len(pods)} of {wanted} Pods exist", "pods")
        elif len(pods) > wanted:
            row.fail(f"{task_name}: {len(pods)} Pods for {wanted} replicas", "pods")
        for pod in pods:
            _check_pod(row, evidence, facts, pod, planned_nodes, planned_source, spec.head)
    head_pods = facts.pods.get(facts.head_task, [])
    if facts.head_task and len(head_pods) > 1:
        row.fail(f"the Header task has {len(head_pods)} Pods; it must have exactly 1", "pods")
    if total > facts.expected_nodes:
        row.fail(f"{total} Pods, expected {facts.expected_nodes} ({facts.expected_source})", "pods")
    elif total < facts.expected_nodes and not row.findings:
        row.late(facts.late, f"{total} Pods, expected {facts.expected_nodes} ({facts.expected_source})", "pods")
    if evidence.containers is None:
        row.notes.append("restart counts and exit codes need a data plane: "
                         + evidence.sources.get("data-plane", "none configured"))
    return row.build(evidence)


_POD_FAILURE_EVENTS = tuple(r for r in FAILURE_EVENTS if r != "Failed")
"""Events that fail check 2 (an image pull's `Failed` is check 3's)."""


def _node_name(node: dict[str, Any]) -> str:
    name = dig(node, "metadata", "name")
    return name if isinstance(name, str) else ""


def _check_pod(row: _Row, evidence: RunEvidence, facts: _Facts, pod: Pod, planned_nodes: list[str],
               planned_source: str, head: bool) -> None:
    ref = _ref("Pod", pod.raw)
    name = pod.pod_name or pod.name
    container = evidence.container_of(name)
    followed = None if head or container is None else _followed_job_restart(evidence, name, container)
    row.evidence.append(_obj(ref, "status.phase", pod.phase))
    if pod.phase == "Running":
        pass
    elif pod.phase == "Pending" or not pod.phase:
        row.late(facts.late, f"Pod {name} is Pending", "pods")
    else:
        row.fail(f"Pod {name} is {pod.phase}: its main container ended", "pods")
    if pod.node:
        if pod.node in planned_nodes:
            row.evidence.append(_obj(ref, "status.node", pod.node))
        else:
            row.evidence.append(_obj(ref, "status.node", pod.node, expected=",".join(planned_nodes)))
            row.fail(f"Pod {name} runs on {pod.node}, not on a Node of {planned_source}", "pods")
    if pod.ip:
        row.evidence.append(_obj(ref, "status.ip", pod.ip))
    elif pod.phase == "Running":
        row.late(facts.late, f"Pod {name} is Running but has no IP yet", "pods")
    failing = [event.reason in _POD_FAILURE_EVENTS and not (followed and event.reason == "BackOff")
               for event in evidence.events.get(name, ())]
    crash_stage = ""
    for event, fails in _named_events(row, name, evidence.events.get(name, ()), failing):
        row.evidence.append(EvidenceItem("event", name, show("", f"{event.type} {event.reason}: {event.message}")))
        if fails:
            if event.reason == "BackOff" and not crash_stage:
                crash_stage = _crash_stage(evidence.log_of(name, current=False) or evidence.log_of(name))
            row.fail(f"Pod {name}: {event.reason}: {event.message}", crash_stage if event.reason == "BackOff"
                     else "pods")
    if name in evidence.unread_containers:
        row.pending(f"Pod {name}: restart count and exit code unknown — "
                    + evidence.sources.get("data-plane", "its data plane did not answer"), ADMIN)
        return
    if container is None:
        return
    problem = None
    if followed:
        row.notes.append(f"Pod {name}: {followed}")
    elif container.restart_count > 0:
        problem = f"restarted {container.restart_count} time(s)"
        if container.last_exit_code is not None or container.last_reason:
            problem += f", last {container.last_reason or 'exit'}"
            if container.last_exit_code is not None:
                problem += f" (exit code {container.last_exit_code})"
    elif container.state == "terminated" and container.exit_code not in (None, 0):
        problem = f"{container.reason or 'exited'} (exit code {container.exit_code})"
    elif container.state == "waiting" and container.reason:
        problem = f"is waiting ({container.reason})"
    if problem:
        previous = evidence.log_of(name, current=False) or evidence.log_of(name)
        row.fail(f"Pod {name}: main container {problem}", _crash_stage(previous))
        if previous:
            for offset, text in enumerate(previous.lines[-5:]):
                hit = logscan.Hit(len(previous.lines) - min(5, len(previous.lines)) + offset + 1, text)
                row.evidence.append(_log(previous, hit))


def _followed_job_restart(evidence: RunEvidence, name: str, container: MainContainer) -> str | None:
    """Why a worker Pod's restart is the Job's own, or None: an Edit & Restart (rlark resume) replaces the Header
    Pod, its Ray head goes, and each worker's `ray start --block` ends; the platform's worker sequence then exits 0
    and, restartPolicy Always, runs again against the new head (rlark-platform.md §2.4). So a worker whose previous
    instance was started before the Job's rlark.io/restarted-at and ended after it that way (exit 0 after `Ray worker
    process exited with code N`), and which runs again, restarted with the Job. An instance started after the
    Job's restart that ended so is a worker failing on its own (a crash loop of exit 0s), as is any earlier one."""
    restarted = parse_time(dig(evidence.job or {}, "metadata", "annotations", keys.RESTARTED_AT_ANNOTATION))
    started, ended = parse_time(container.last_started), parse_time(container.last_finished)
    if (restarted is None or started is None or ended is None or not started < restarted <= ended
            or container.restart_count < 1 or container.last_exit_code != 0 or container.state != "running"):
        return None
    previous = evidence.log_of(name, current=False)
    lines = previous.lines if previous else ()
    exited = next((line for line in reversed(lines) if logscan.WORKER_EXITED in line), None)
    if exited is None:
        return None
    return (f"main container restarted {container.restart_count} time(s), the last with the Job's restart at "
            f"{dig(evidence.job or {}, 'metadata', 'annotations', keys.RESTARTED_AT_ANNOTATION)}: its Ray head was replaced, "
            f"'{exited.strip()}', exit 0, and the worker sequence ran again")


def _named_events(row: _Row, pod: str, events: Sequence[PodEvent], failing: Sequence[bool]
                  ) -> list[tuple[PodEvent, bool]]:
    """A Pod's Warning events the row names, each with whether it fails the row: all of them up to MAX_NAMED, else
    the failing ones first, and the rest counted in one evidence item. A data plane sets how many events a Pod has:
    each was an evidence item and a failure line, so 40,000 on each of three Pods were 29 MB of `rlark check`."""
    warnings = [(event, fails) for event, fails in zip(events, failing, strict=True) if event.type == "Warning"]
    if len(warnings) <= MAX_NAMED:
        return warnings
    row.evidence.append(EvidenceItem("event", pod, f"… and {len(warnings) - MAX_NAMED:,} more Warning events "
                                                   f"(the first {MAX_NAMED} named, failures first)"))
    return sorted(warnings, key=lambda pair: not pair[1])[:MAX_NAMED]


def _crash_stage(log: PodLog | None) -> str:
    """Where a crashing container broke: in its run script (app), in the start sequence (ray), or before."""
    lines = log.lines if log else ()
    if logscan.find(lines, logscan.RUN_SCRIPT_STARTED):
        return "app"
    return "ray" if logscan.rank_line(lines) else "pods"


# ---------------------------------------------------------------- check 3


def check_ray(evidence: RunEvidence, facts: _Facts, slow: patterns.SlowPatterns | None = None) -> CheckRow:
    row = _Row(3)
    if evidence.job is None:
        row.fail("no Job, so no Ray cluster", "job")
        return row.build(evidence)
    ranks: dict[int, str] = {}
    nodes = facts.expected_nodes  # a count from the cluster: ranks are compared with it, never enumerated up to it
    all_pods = [p for spec in facts.specs for p in facts.pods.get(facts.job.task_name(spec), [])]
    starts = rank_starts(facts.specs)
    for index, spec in enumerate(facts.specs):
        task_name = facts.job.task_name(spec)
        task = facts.tasks.get(task_name)
        start = task.rank_start if task and task.rank_start is not None else starts[index]
        for pod in facts.pods.get(task_name, []):
            name = pod.pod_name
            log = evidence.log_of(name)
            if log is None or log.error or not log.lines:
                why = log.error if log and log.error else "no log lines yet"
                row.late(facts.late, f"{name}: {why}", "ray", ADMIN if log and log.error else None)
                continue
            found = logscan.rank_line(log.lines)
            if found is None:
                row.late(facts.late, f"{name}: no RLINF_NODE_RANK line yet", "ray")
                continue
            hit, rank = found
            expected = start + pod.ordinal if pod.ordinal is not None else None
            row.evidence.append(_log(log, hit))
            if expected is not None and rank != expected:
                row.fail(f"{name}: RLINF_NODE_RANK {rank}, expected {expected} (rank start {start} + ordinal "
                         f"{pod.ordinal})", "ray")
            if rank in ranks:
                row.fail(f"RLINF_NODE_RANK {rank} is used by both {ranks[rank]} and {name}", "ray")
            ranks[rank] = name
            if not 0 <= rank < nodes:
                row.fail(f"{name}: RLINF_NODE_RANK {rank} is outside 0..{nodes - 1}", "ray")
    if all_pods and len(ranks) == len(all_pods) and (len(ranks) != nodes
                                                     or not all(0 <= rank < nodes for rank in ranks)):
        missing = list(itertools.islice((rank for rank in range(nodes) if rank not in ranks), MISSING_SHOWN + 1))
        shown = ", ".join(map(str, missing[:MISSING_SHOWN])) + (", …" if len(missing) > MISSING_SHOWN else "")
        row.late(facts.late, f"ranks [{shown}] are not held by any Pod", "ray")
    _read_notes(row, evidence.logs)
    _check_head_log(row, evidence, facts)
    _check_startup_marker(row, evidence, facts, slow)
    _check_alive_nodes(row, evidence, facts)
    row.notes.append(stacks_note(evidence, facts))
    for log in evidence.logs:
        for what, hit in logscan.error_hits(log.lines):
            row.evidence.append(_log(log, hit))
            row.fail(f"{log.pod}: {what} error in the log", "ray")
    for pod_name, events in evidence.events.items():
        pulls = [event for event in events
                 if re.search(r"ErrImagePull|ImagePullBackOff|Failed to pull", f"{event.reason} {event.message}")]
        for event in pulls[:MAX_NAMED]:
            row.evidence.append(EvidenceItem("event", pod_name, show("", f"{event.type} {event.reason}: "
                                                                         f"{event.message}")))
        if pulls:
            row.fail(f"{pod_name}: image pull error" + (f" ({len(pulls):,} events, the first {MAX_NAMED} named)"
                                                        if len(pulls) > MAX_NAMED else ""), "pods")
    return row.build(evidence)


def _read_notes(row: _Row, logs: Iterable[PodLog]) -> None:
    """Which part of each log the row looked at (the whole log, or its start up to the read budget and its end)."""
    for log in logs:
        if log.read and not log.error:
            row.notes.append(f"{log.pod}{'' if log.current else ' (previous instance)'}: read {log.read}")


def _head_log(evidence: RunEvidence, facts: _Facts) -> PodLog | None:
    pods = facts.pods.get(facts.head_task, [])
    if not pods:
        return None
    log = evidence.log_of(pods[0].pod_name)
    return log if log and log.lines else None


def _check_head_log(row: _Row, evidence: RunEvidence, facts: _Facts) -> None:
    if not facts.head_task:
        row.fail("the Job has no Header task (head: true)", "job")
        return
    log = _head_log(evidence, facts)
    if log is None:
        row.late(facts.late, "no Header log yet", "ray")
        return
    failed = logscan.find_last(log.lines, logscan.CHECK_FAILED_IGNORED)
    passed = logscan.find_last(log.lines, logscan.CHECK_PASSED)
    if failed:
        row.evidence.append(_log(log, failed))
        row.fail("the Header's Ray cluster check failed and the start script went on anyway", "ray")
    elif passed:
        row.evidence.append(_log(log, passed))
    else:
        row.late(facts.late, "the Header has not printed `Ray cluster check passed.` yet", "ray")
    started = logscan.find_last(log.lines, logscan.RUN_SCRIPT_STARTED)
    no_script = logscan.find_last(log.lines, logscan.NO_RUN_SCRIPT)
    if started:
        row.evidence.append(_log(log, started))
    elif no_script:
        row.evidence.append(_log(log, no_script))
        row.fail("the Header has no run script to execute", "ray")
    else:
        row.late(facts.late, "the Header has not printed `Executing run script...` yet", "ray")


def _check_startup_marker(row: _Row, evidence: RunEvidence, facts: _Facts,
                          slow: patterns.SlowPatterns | None = None) -> None:
    """The user-agreed startup marker (`record.startupMarker`, a regex) in the Header's run script output."""
    marker = (evidence.launch_record or {}).get("startupMarker")
    if not isinstance(marker, str) or not marker:
        row.notes.append("no startup marker agreed (record.startupMarker): the run script's own start not checked")
        return
    log = _head_log(evidence, facts)
    started = logscan.find_last(log.lines, logscan.RUN_SCRIPT_STARTED) if log else None
    if log is None or started is None:
        row.late(facts.late, f"startup marker {marker!r}: the run script has not started yet", "ray")
        return
    try:
        hit = logscan.search(log.lines, patterns.compile_pattern(marker), started.line,
                             patterns.Deadline(known=slow))
    except patterns.PatternError as exc:
        row.fail(f"the launch record's startupMarker {exc}", "ray")
        return
    except patterns.PatternTooSlow as exc:
        row.fail(f"the launch record's startupMarker: {exc}; agree a simpler one", "ray")
        return
    row.evidence.append(_record("launch-record", "startupMarker", marker))
    if hit:
        row.evidence.append(_log(log, hit[0]))
    else:
        row.late(facts.late, f"the Header has not printed the startup marker {marker!r} yet", "app")


ENABLE_STACKS = ("make the Job debuggable (`debuggable: true` in its draft, or Debuggable in the wizard's step 3; "
                 f"`rlark edit`): {keys.PTRACE_CAPABILITY} on every container, {keys.PROFILING_ENV}=1 on the Header")


def stacks_note(evidence: RunEvidence, facts: _Facts) -> str:
    """Whether `rlark stacks` can take the ranks' stacks: through Ray's dashboard (profiling on), else with py-spy
    in the Pods (SYS_PTRACE on every container), else how to enable it."""
    ray = evidence.ray
    profiling = ray.profiling if ray is not None and ray.error is None else None
    if profiling:
        return "stacks: can be taken, from Ray's dashboard (/api/profiling_enabled: true)"
    off = "Ray's profiling is off" if profiling is False else "Ray's profiling is unknown (its dashboard not read)"
    if facts.specs and all(spec.ptrace for spec in facts.specs):
        return f"stacks: can be taken, with py-spy in the Pods ({keys.PTRACE_CAPABILITY} on every container; {off})"
    lacking = f"the containers lack {keys.PTRACE_CAPABILITY}, which py-spy in the Pods needs"
    if profiling is None:
        return f"stacks: only if Ray's dashboard has profiling on (not read): {lacking}; {ENABLE_STACKS}"
    return f"stacks: cannot be taken: {off} and {lacking}; {ENABLE_STACKS}"


def _check_alive_nodes(row: _Row, evidence: RunEvidence, facts: _Facts) -> None:
    want = facts.expected_nodes
    ray = evidence.ray
    if ray is not None and ray.error is None and ray.alive_nodes is not None:
        row.evidence.append(EvidenceItem("ray", ray.route, str(ray.alive_nodes), path="aliveNodes",
                                         expected=None if ray.alive_nodes == want else str(want)))
        if ray.alive_nodes > want:
            row.fail(f"the Ray dashboard shows {ray.alive_nodes} alive nodes, expected {want}", "ray")
        elif ray.alive_nodes < want:
            row.late(facts.late, f"the Ray dashboard shows {ray.alive_nodes} of {want} alive nodes", "ray")
        return
    reason = ray.error if ray is not None and ray.error else "no Ray dashboard status"
    log = _head_log(evidence, facts)
    found = None
    if log is not None:
        for index in range(len(log.lines) - 1, -1, -1):
            match = logscan.CLUSTER_READY_RE.search(log.lines[index])
            if match and (alive := ascii_int(match.group(1))) is not None:
                found = logscan.Hit(index + 1, log.lines[index]), alive
                break
    if found is None or log is None:
        row.pending(f"alive Ray nodes unknown: {reason}", ADMIN)
        return
    hit, alive = found
    row.evidence.append(_log(log, hit))
    row.notes.append(f"alive Ray nodes from the Header's cluster check line ({reason})")
    if alive != want:
        row.fail(f"the Header's cluster check saw {alive} nodes, expected {want}", "ray")


# ---------------------------------------------------------------- check 4

_C4_FIELDS = (
    ("runId", "run ID"), ("codeRef", "code repo and commit"), ("configRef", "resolved config and checksum"),
    ("dataVersion", "data version"), ("outputPath", "output/checkpoint prefix"),
    ("expectedNumNodes", "worker count (cluster.num_nodes)"), ("componentPlacement", "component_placement"),
    ("nodeGroups", "node_groups"), ("placementMode", "placement mode"), ("runtimeVersions", "runtime versions"),
)


_SHA256 = re.compile(r"sha256:([0-9a-f]{64})")
_FULL_SHA = re.compile(r"(?<![0-9a-f])([0-9a-f]{40})(?![0-9a-f])")


def _digest(text: str) -> str | None:
    """The `sha256:` digest a reference, an imageID or a build record names, or None."""
    match = _SHA256.search(text or "")
    return match.group(1) if match else None


def check_app(evidence: RunEvidence, facts: _Facts) -> CheckRow:
    row = _Row(4)
    record = evidence.launch_record or {}
    _check_images(row, evidence, facts, record)
    if not record:
        row.pending("no launch record stored with the Job: nothing to compare the application with", JOB_OWNER)
    for key, label in _C4_FIELDS:
        if record.get(key) in (None, "", [], {}):
            row.notes.append(f"not compared: {label} (not in the launch record)")
    log = _head_log(evidence, facts)
    started = logscan.find_last(log.lines, logscan.RUN_SCRIPT_STARTED) if log else None
    if log is None or started is None:
        if record:
            row.late(facts.late, "the run script has not started in the Header yet", "app")
        return row.build(evidence)
    _read_notes(row, [log])
    after = started.line
    compared = 0
    if isinstance(record.get("runId"), str) and record["runId"]:
        compared += 1
        _compare_reported(row, facts, log, after, record, "runId", "run ID", logscan.RUN_ID_RE)
    compared += _check_code_ref(row, facts, log, after, record)
    if isinstance(record.get("dataVersion"), str) and record["dataVersion"]:
        compared += 1
        _compare_reported(row, facts, log, after, record, "dataVersion", "data version", logscan.DATA_VERSION_RE)
    versions = record.get("runtimeVersions")
    for name, want in (versions.items() if isinstance(versions, dict) else ()):
        if isinstance(name, str) and re.fullmatch(r"[\w-]+", name) and isinstance(want, (str, int, float)):
            compared += 1
            _compare_reported(row, facts, log, after, record, f"runtimeVersions.{name}", f"{name} version",
                              logscan.version_re(name))
    compared += _check_reported_nodes(row, facts, log, after)
    block = logscan.resolved_config(log.lines, after)  # read once for the three comparisons that use it
    compared += _check_output_prefix(row, log, after, record, block)
    compared += _check_config(row, evidence, facts, log, after, record, block)
    _check_env_overrides(row, facts, block)
    if record and not compared:
        row.pending("the launch record names nothing the application reports (run ID, code ref, config)",
                    JOB_OWNER)
    return row.build(evidence)


def _check_images(row: _Row, evidence: RunEvidence, facts: _Facts, record: dict[str, Any]) -> None:
    """Each role's image against the digest its Pods pulled (`imageID`): a digest reference must match it; a tag
    passes only when the launch record's build record names that same digest."""
    raw_build = record.get("buildRecord")
    build = raw_build if isinstance(raw_build, str) else ""
    built = _digest(build)
    if build:
        row.evidence.append(_record("launch-record", "buildRecord", build))
    for index, spec in enumerate(facts.specs):
        if not spec.image:
            continue
        containers = spec.pod_spec.get("containers")
        containers = containers if isinstance(containers, list) else []
        j = next((k for k, c in enumerate(containers) if isinstance(c, dict) and c.get("name") == "main"), 0)
        if evidence.job:
            path = f"spec.tasks[{index}].kubernetes.workload.template.spec.containers[{j}].image"
            row.evidence.append(_obj(f"Job/{facts.job.name}", path, spec.image))
        wanted = _digest(spec.image) if "@sha256:" in spec.image else built
        pulled = [(pod.pod_name, container.image_id) for pod in facts.pods.get(facts.job.task_name(spec), [])
                  for container in [evidence.container_of(pod.pod_name)] if container and container.image_id]
        for pod_name, image_id in pulled:
            row.evidence.append(EvidenceItem("container", pod_name, image_id, path="imageID",
                                             expected=None if wanted is None or _digest(image_id) == wanted
                                             else f"sha256:{wanted}"))
        tag = "@sha256:" not in spec.image
        if any(wanted and _digest(image_id) != wanted for _, image_id in pulled):
            source = "the build record's digest" if tag else "the image reference's digest"
            row.fail(f"{spec.name}: the pulled image digest (imageID) differs from {source}", "app")
        elif tag and not wanted:
            shown = pulled[0][1] if pulled else "not read yet"
            row.pending(f"image {spec.image} is a tag: a tag cannot prove what ran without a build record naming "
                        f"the pulled digest ({shown})", IMAGE_OWNER)
        elif not pulled:
            row.pending(f"{spec.name}: the digest its Pods pulled (imageID) is not known yet: image {spec.image} "
                        f"not compared with {'the build record' if tag else 'its digest'}",
                        ADMIN if evidence.containers is None else IMAGE_OWNER)
        elif tag:
            row.notes.append(f"tagged image {spec.image}: the build record's digest is the pulled one")


def _compare_reported(row: _Row, facts: _Facts, log: PodLog, after: int, record: dict[str, Any], key: str, label: str,
                      pattern: re.Pattern[str]) -> None:
    """The value the application prints for `key` (pattern group 1, or the record's value anywhere) against the
    launch record's."""
    want = str(dig_path(record, key))
    row.evidence.append(_record("launch-record", key, dig_path(record, key)))
    found = logscan.search(log.lines, pattern, after)
    if found and found[1].group(1) != want:
        row.evidence.append(_log(log, found[0]))
        row.fail(f"the application reports {label} {found[1].group(1)}, the launch record says {want}", "app")
        return
    hit = found[0] if found else _value_hit(log.lines, want, after)
    if hit:
        row.evidence.append(_log(log, hit))
    else:
        row.late(facts.late, f"the application has not printed the {label} {want} yet", "app")


def _check_code_ref(row: _Row, facts: _Facts, log: PodLog, after: int, record: dict[str, Any]) -> int:
    """The code ref must name a full commit SHA (a tag only as resolved and recorded, `<tag>@<sha>`), and the
    application must report that same full SHA."""
    ref = record.get("codeRef")
    if not isinstance(ref, str) or not ref:
        return 0
    row.evidence.append(_record("launch-record", "codeRef", ref))
    full = _FULL_SHA.search(ref)
    if not full:
        row.pending(f"code ref {ref} is not a full commit SHA (a tag counts only resolved and recorded as "
                    "<tag>@<40-hex SHA>)", JOB_OWNER)
        return 1
    want = full.group(1)
    found = logscan.search(log.lines, logscan.CODE_REF_RE, after)
    if found is None:
        hit = _value_hit(log.lines, want, after)
        if hit:
            row.evidence.append(_log(log, hit))
        else:
            row.late(facts.late, f"the application has not printed the code ref {want} yet", "app")
        return 1
    row.evidence.append(_log(log, found[0]))
    got = found[1].group(1)
    if got == want:
        return 1
    if len(got) < 40 and want.startswith(got):
        row.pending(f"the application reports only a short SHA {got}: a short SHA does not prove the commit",
                    JOB_OWNER)
    else:
        row.fail(f"the application reports code ref {got}, the launch record says {want}", "app")
    return 1


def _check_reported_nodes(row: _Row, facts: _Facts, log: PodLog, after: int) -> int:
    """The node count the application itself reports (RLinf's start line) against the Job's Pods."""
    found = logscan.search(log.lines, logscan.RUNNING_ON_RE, after)
    if not found:
        return 0
    row.evidence.append(_log(log, found[0]))
    reported = ascii_int(found[1].group(1))  # the Job's code prints the line: '٣' or 5,000 digits is no count
    pods = sum(len(group) for group in facts.pods.values())
    if reported is None:
        row.fail("the application reports a node count that is no number", "app")
    elif reported != pods:
        row.fail(f"the application reports {reported} nodes, the Job has {pods} Pods", "app")
    return 1


def _check_output_prefix(row: _Row, log: PodLog, after: int, record: dict[str, Any],
                         block: logscan.ConfigBlock | None) -> int:
    """The output path the application reports (RLinf's runner.logger.log_path, or an `output_dir:` line) must lie
    under the launch record's outputPath."""
    want = record.get("outputPath")
    if not isinstance(want, str) or not want:
        return 0
    reported = dig_path(block.config, "runner.logger.log_path") if block else None
    hit = None
    if isinstance(reported, str) and block is not None:
        hit = _value_hit(log.lines, '"log_path"', block.first_line - 1)
    else:
        found = logscan.search(log.lines, logscan.OUTPUT_RE, after)
        if found:
            hit, reported = found[0], found[1].group(1)
    if not isinstance(reported, str) or hit is None:
        row.notes.append("the application reports no output path: output prefix not compared")
        return 0
    row.evidence.append(_record("launch-record", "outputPath", want))
    row.evidence.append(_log(log, hit))
    if not under(reported, want):
        row.fail(f"the application writes to {reported}, outside the launch record's output prefix {want}", "app")
    return 1


def _check_env_overrides(row: _Row, facts: _Facts, block: logscan.ConfigBlock | None) -> None:
    """Env vars whose names spell a key of the printed config (`RUNNER__MAX_STEPS` = runner.max_steps): a
    warning with the env entry as evidence, since the printed config may not be what the record names."""
    if block is None:
        return
    for index, spec in enumerate(facts.specs):
        containers = spec.pod_spec.get("containers")
        for j, container in enumerate(containers if isinstance(containers, list) else []):
            env = container.get("env") if isinstance(container, dict) else None
            for k, entry in enumerate(env if isinstance(env, list) else []):
                name = entry.get("name") if isinstance(entry, dict) else None
                if not isinstance(name, str) or "__" not in name:
                    continue
                key = name.lower().replace("__", ".")
                if dig_path(block.config, key) is None:
                    continue
                path = f"spec.tasks[{index}].kubernetes.workload.template.spec.containers[{j}].env[{k}].name"
                row.evidence.append(_obj(f"Job/{facts.job.name}", path, name))
                row.notes.append(f"warning: config key {key} is overridden by env var {name} in role {spec.name}; "
                                 "the printed config shows the value in effect")


def _value_hit(lines: Sequence[str], value: str, start: int) -> logscan.Hit | None:
    for index in range(start, len(lines)):
        if value in lines[index]:
            return logscan.Hit(index + 1, lines[index])
    return None


def _check_config(row: _Row, evidence: RunEvidence, facts: _Facts, log: PodLog, after: int, record: dict[str, Any],
                  block: logscan.ConfigBlock | None) -> int:
    """Compare RLinf's resolved config block (`block`), when printed, with the record and the Job; count
    comparisons."""
    config_ref = record.get("configRef") if isinstance(record.get("configRef"), str) else ""
    ref_sum = re.fullmatch(r"(?:sha256:)?([0-9a-f]{64})", config_ref.strip()) if config_ref else None
    compared = 0
    if block is None:
        row.notes.append("RLinf's resolved config block was not printed: cluster.num_nodes, component_placement, "
                         "node_groups not compared")
        if ref_sum:
            printed = logscan.search(log.lines, logscan.CONFIG_SUM_RE, after)
            if printed:
                compared += 1
                row.evidence.append(_record("launch-record", "configRef", config_ref))
                row.evidence.append(_log(log, printed[0]))
                if printed[1].group(1) != ref_sum.group(1):
                    row.fail("the application's config checksum differs from the launch record's configRef", "app")
        return compared
    cluster = block.config.get("cluster") or {}
    row.evidence.append(_log(log, logscan.Hit(block.first_line, log.lines[block.first_line - 1])))
    num_nodes = cluster.get("num_nodes")
    compared += 1
    if num_nodes != facts.expected_nodes:
        row.fail(f"RLinf cluster.num_nodes is {num_nodes}, expected {facts.expected_nodes} "
                 f"({facts.expected_source})", "app")
    else:
        row.notes.append(f"cluster.num_nodes = {num_nodes} matches {facts.expected_source}")
    mode = logscan.placement_mode(cluster.get("component_placement"))
    if mode:
        row.notes.append(f"placement mode (derived from component_placement): {mode}")
    if record.get("placementMode") and mode and record["placementMode"] != mode:
        row.fail(f"placement mode is {mode}, the launch record says {record['placementMode']}", "app")
    for key, config_key in (("componentPlacement", "component_placement"), ("nodeGroups", "node_groups")):
        if record.get(key) not in (None, "", [], {}):
            compared += 1
            if record[key] != cluster.get(config_key):
                row.fail(f"cluster.{config_key} differs from the launch record", "app")
    for group in cluster.get("node_groups") or []:
        ranks = logscan.parse_ranks(group.get("node_ranks")) if isinstance(group, dict) else None
        if ranks and not all(0 <= rank < facts.expected_nodes for rank in ranks):
            row.fail(f"node_groups {group.get('label')} names ranks outside 0..{facts.expected_nodes - 1}", "app")
    if ref_sum:
        compared += 1
        printed = logscan.search(log.lines, logscan.CONFIG_SUM_RE, after)
        if printed:
            actual, source = printed[1].group(1), "printed config checksum"
            row.evidence.append(_log(log, printed[0]))
        else:
            canonical = json.dumps(block.config, sort_keys=True, separators=(",", ":"))
            actual, source = hashlib.sha256(canonical.encode()).hexdigest(), "sha256 of the printed config"
        row.evidence.append(_record("launch-record", "configRef", config_ref))
        if actual != ref_sum.group(1):
            row.fail(f"{source} {actual[:12]}… differs from configRef", "app")
    elif config_ref:
        row.notes.append(f"configRef {config_ref} is not a checksum: compared by hand only")
    return compared


# ---------------------------------------------------------------- check 5


def check_outputs(evidence: RunEvidence, facts: _Facts, slow: patterns.SlowPatterns | None = None) -> CheckRow:
    row = _Row(5)
    record = evidence.launch_record or {}
    pattern = record.get("progressPattern") if isinstance(record.get("progressPattern"), str) else None
    log = _head_log(evidence, facts)
    started = logscan.find_last(log.lines, logscan.RUN_SCRIPT_STARTED) if log else None
    if not pattern:
        row.pending("no agreed progress signal (record.progressPattern): progress is not judged by a generic "
                    "pattern", JOB_OWNER)
    elif log is None or started is None:
        row.late(facts.late, "no run script output yet to look for progress in", "progress")
    else:
        try:
            hit = logscan.first_progress(log.lines, pattern, started.line, slow)
        except patterns.PatternError as exc:
            hit = None
            row.fail(f"the launch record's progressPattern {exc}", "progress")
        except patterns.PatternTooSlow as exc:
            hit = None
            row.fail(f"the launch record's progressPattern: {exc}; agree a simpler one", "progress")
        if hit:
            row.evidence.append(_record("launch-record", "progressPattern", pattern))
            row.evidence.append(_log(log, hit))
        elif not row.findings:
            row.late(facts.late, f"no progress matching {pattern!r} within the max wait "
                                 f"({max_wait_seconds(evidence):.0f} s) yet", "progress")
    if log is not None and started is not None:
        failure = logscan.search(log.lines, logscan.HARD_FAILURES, started.line)
        if failure:
            row.evidence.append(_log(log, failure[0]))
            row.fail("the workload reports a failure", "progress")
    _check_resume(row, facts, log, started)
    _check_output_files(row, evidence, facts, log)
    return row.build(evidence)


def _check_resume(row: _Row, facts: _Facts, log: PodLog | None, started: logscan.Hit | None) -> None:
    """When the Header's run command passes `runner.resume_dir` (rlinf-runtime.md §3.3): the log shows RLinf's
    resume line (`Resuming training from checkpoint directory <dir>.` or `Setting global step to N`) and the
    first progress row after it is N+1; otherwise a fail quoting the line seen."""
    tasks = dig(facts.job.raw, "spec", "tasks")
    heads = [(i, t) for i, t in enumerate(tasks) if TaskSpec(t).head] if isinstance(tasks, list) else []
    script = TaskSpec(heads[0][1]).run_script if heads else ""
    resume_dir = resume_dir_of(script)
    if resume_dir is None:
        return
    expected = resume_step(resume_dir)
    row.evidence.append(_obj(_ref("Job", facts.job.raw), f"spec.tasks[{heads[0][0]}].runScript", script))
    if expected is None and resume_dir != "auto":
        row.fail(f"{OVERRIDE}={resume_dir} is not a global_step_<N> directory: RLinf takes N from the text after "
                 "global_step_", "progress")
        return
    if log is None or started is None:
        row.late(facts.late, f"no run script output yet to confirm the resume from {resume_dir} in", "progress")
        return
    said = logscan.resume_line(log.lines, started.line)
    if said is None:
        seen = logscan.first_step(log.lines, started.line)
        if seen is None:
            row.late(facts.late, f"no resume line for {resume_dir} yet", "progress")
            return
        row.evidence.append(_log(log, seen[0]))
        row.fail(f"{OVERRIDE} is set but RLinf printed no 'Resuming training from checkpoint directory …' or "
                 f"'Setting global step to N' before its first progress row: {show('', seen[2])}", "progress")
        return
    hit, match = said
    row.evidence.append(_log(log, hit))
    if match.re is logscan.GLOBAL_STEP_SET_RE:
        read = ascii_int(match.group(1))  # 5,000 digits: no step (int() raises)
        step = read if read is not None else -1
        if expected is not None and step != expected:
            row.fail(f"resumed at the wrong step: {OVERRIDE} names step {expected}, the log says: "
                     f"{show('', hit.text.strip())}", "progress")
            return
    else:
        step = expected if expected is not None else 0
        if match.group(1).rstrip("/") != resume_dir.rstrip("/") and resume_dir != "auto":
            row.fail(f"resumed from another directory than {OVERRIDE}={resume_dir}: {show('', hit.text.strip())}",
                     "progress")
            return
    seen = logscan.first_step(log.lines, hit.line, skip=step)
    if seen is None:
        row.late(facts.late, f"resumed from step {step}; no progress row after it yet", "progress")
        return
    row.evidence.append(_log(log, seen[0]))
    if seen[1] != step + 1:
        row.fail(f"resumed from step {step} but the first progress row after it is step {seen[1]}, not "
                 f"{step + 1}: {show('', seen[2])}", "progress")
        return
    row.notes.append(f"resume confirmed: from step {step}, the first progress row is step {step + 1}")


def _check_output_files(row: _Row, evidence: RunEvidence, facts: _Facts, log: PodLog | None) -> None:
    probe = evidence.outputs
    record = evidence.launch_record or {}
    if probe is None:
        if record.get("outputPath"):
            row.pending(f"output path {record['outputPath']} was not probed", JOB_OWNER)
        else:
            row.pending("no output path in the launch record: nothing to read back", JOB_OWNER)
        return
    if probe.source:
        row.notes.append(f"outputs read {probe.source}")
    if probe.error:
        row.pending(f"output path {probe.location}: {probe.error}", ADMIN)
        return
    run_id = record.get("runId")
    output_path = record.get("outputPath")
    prefix = output_path if isinstance(output_path, str) else probe.location
    if isinstance(run_id, str) and run_id and run_id not in prefix.split("/"):
        row.pending(f"output prefix {prefix} does not name run {run_id}: checkpoints must use a per-run prefix, "
                    "or another run's outputs could be taken for this one's", JOB_OWNER)
    outside = [f for f in probe.files if not under(f.path, prefix)]
    if outside:
        row.notes.append(f"{len(outside)} file(s) outside the run's prefix {prefix} ignored, e.g. {outside[0].path}")
    files = [f for f in probe.files if f not in outside]
    start = latest_start(evidence)
    if start is None:
        row.pending("the Job's start time is unknown: no output can be shown to come from this run", JOB_OWNER)
    fresh = [f for f in files if f.size > 0 and start is not None and f.mtime > start]
    stale = [f for f in files if f.size > 0 and start is not None and f.mtime <= start]
    for item in fresh[:20]:
        row.evidence.append(EvidenceItem("file", item.path, size=item.size, mtime=item.mtime.isoformat(),
                                         sha256=item.sha256))
    if len(fresh) > 20:
        row.notes.append(f"{len(fresh) - 20} more fresh files not listed")
    if not fresh and start is not None:
        saving = logscan.search(log.lines, logscan.SAVING_CHECKPOINT_RE) if log is not None else None
        if saving and log is not None:
            row.evidence.append(_log(log, saving[0]))
            row.notes.append("the log says a checkpoint was saved, but no file shows it: a log line is not an "
                             "output")
        if stale:
            for item in stale[:5]:
                row.evidence.append(EvidenceItem("file", item.path, size=item.size, mtime=item.mtime.isoformat(),
                                                 sha256=item.sha256))
            message = (f"output files under {probe.location} are all older than the Job's latest start "
                       f"({start.isoformat() if start else '?'})")
        elif files:
            message = f"output files under {probe.location} are all empty"
        else:
            message = f"no output files under {probe.location}"
        row.late(facts.late, message, "outputs")
    elif fresh:
        unread = [f for f in fresh if not f.sha256]
        if len(unread) == len(fresh):
            row.pending("no output file could be read back for a checksum", ADMIN)
        elif unread:
            row.notes.append(f"{len(unread)} output file(s) not read back (checksum budget)")
    steps = sorted({step for f in files for m in [re.search(r"checkpoints/global_step_(\d+)/actor/", f.path)]
                    if m and (step := ascii_int(m.group(1))) is not None})
    if steps:
        row.notes.append(f"RLinf checkpoint layout found: global_step_{steps[-1]}/actor/ "
                         f"({len(steps)} checkpoint(s)); loadability not tested here")
    else:
        row.notes.append("no RLinf checkpoint layout (checkpoints/global_step_<N>/actor/) under the output path "
                         "(not required)")
