"""What needs attention (`:overview`, `rlark status --long`): one line per Node that is offline, cordoned or under
disk pressure, per Job that is Pending or cannot be scheduled (why: its Tasks' image pulls and events), per firing
warning or critical alert, and per Running Job whose saved check summary fails or is stale. Pure: from a
SnapshotIndex and the firing alerts only; every cluster string is cleaned (event messages redacted first).

A line's key orders the lines (critical alerts, Nodes, Jobs, other alerts, checks) and names what `enter` opens:
`<rank><kind>\\t<context>\\t<target>`, read back with `target_of` (the context '' with one)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from types import MappingProxyType
from typing import Protocol

from rlark_tui.model.check_summary import MALFORMED, read_summary
from rlark_tui.model.keys import CHECK_SUMMARY_ANNOTATION
from rlark_tui.model.objects import Job, Node, Task
from rlark_tui.model.podstate import PodHealth
from rlark_tui.model.storage import human_size
from rlark_tui.model.timefmt import parse_time, short_age
from rlark_tui.text.redact import redact_text
from rlark_tui.text.sanitize import clean
from rlark_tui.view.index import SnapshotIndex
from rlark_tui.view.pods import Line

NODE, JOB, ALERT, CHECK = "node", "job", "alert", "check"
KIND_LABEL = MappingProxyType({NODE: "Node", JOB: "Job", ALERT: "Alert", CHECK: "Check"})
SHOWN_SEVERITIES = ("critical", "warning")
"""Firing alerts of these severities need attention (info ones do not)."""
CHECK_STALE = timedelta(hours=12)
"""A Running Job's check summary older than this (a shift) is stale; so is one from before the Job's start."""
WHY_CHARS = 200


class FiringAlert(Protocol):
    """What a line shows of a firing alert (alerting.rules.Alert; `rlark status --long` reads them back from the
    alert summary: local/acks.py)."""

    @property
    def severity(self) -> str: ...
    @property
    def rule(self) -> str: ...
    @property
    def job(self) -> str: ...
    @property
    def object(self) -> str: ...
    @property
    def message(self) -> str: ...
    @property
    def fired_at(self) -> float: ...


def _one_line(text: str) -> str:
    shown = " ".join(clean(redact_text(text)).split())
    return shown if len(shown) <= WHY_CHARS else shown[:WHY_CHARS - 1] + "…"


def _age(when: datetime | None, now: datetime) -> str:
    return short_age(when, now) if when is not None else ""


def target_of(key: str) -> tuple[str, str, str]:
    """A line key's kind (NODE, JOB, ALERT, CHECK), context ('' with one) and target (Node key, Job name, alert
    key)."""
    head, context, target = key.split("\t", 2)
    return head[1:], context, target


def _key(rank: int, kind: str, target: str, context: str = "") -> str:
    return f"{rank}{kind}\t{context}\t{target}"


def _line(rank: int, kind: str, target: str, shown: str, state: str, why: str, age: str, since: float) -> Line:
    cells = (KIND_LABEL[kind], clean(shown), state, why, age)
    return Line(_key(rank, kind, target), cells, (rank, shown, state, why, -since))


def in_context(line: Line, context: str) -> Line:
    """A line of one of several contexts: the context in its key and as its first cell (the CONTEXT column)."""
    head, _, target = line.key.split("\t", 2)
    return Line(f"{head}\t{context}\t{target}", (clean(context), *line.cells), (context, *line.sort_values))


def node_lines(index: SnapshotIndex, now: datetime) -> list[Line]:
    """Offline, cordoned or disk-pressured Nodes, why from their newest Warning event."""
    lines = []
    for node in index.nodes:
        states = (["cordoned"] if node.unschedulable else []) + (["offline"] if not node.online else []) \
            + (["disk pressure"] if node.disk_pressure else [])
        if not states:
            continue
        key = f"{node.namespace}/{node.name}"
        why = _node_why(node)
        created = parse_time(node.creation_timestamp)
        lines.append(_line(1, NODE, key, key, ", ".join(states), why, "",
                           created.timestamp() if created else 0.0))
    return lines


def _node_why(node: Node) -> str:
    warning = next((e for e in node.events if e.get("type") == "Warning"), None)
    if warning is not None:
        return _one_line(f"{warning.get('reason', '')}: {warning.get('message', '')}")
    if node.unschedulable:
        return "spec.unschedulable: takes no new Pods"
    return _one_line(f"phase {node.phase or '-'}")


def pull_text(pull: dict) -> str:
    """`pulling IMAGE 1.2 GiB/3.4 GiB at 12.0 MiB/s`, from a Task's `pullProgress` entry."""
    def size(value: object) -> str:
        return human_size(int(value)) if isinstance(value, int | float) and not isinstance(value, bool) \
            and 0 <= value < 1 << 60 else "?"

    speed = pull.get("speed")
    rate = f" at {size(speed)}/s" if isinstance(speed, int | float) and not isinstance(speed, bool) and speed > 0 else ""
    status = str(pull.get("status") or "pulling")
    message = f": {pull.get('message')}" if pull.get("message") else ""
    return _one_line(f"{status} {pull.get('image', '?')} {size(pull.get('downloaded'))}/{size(pull.get('total'))}"
                     f"{rate}{message}")


def _scheduling_event(task: Task) -> dict | None:
    return next((e for e in task.events if e.get("reason") == "FailedScheduling"), None)


def job_why(index: SnapshotIndex, job: Job) -> tuple[str, str]:
    """(state, why) of a Pending or unschedulable Job: `unschedulable` with the scheduler's message, `pulling image`
    with its progress, else `Pending` with the newest Warning event, a Pod's reason or the Task's message."""
    tasks = [task for spec in job.tasks if (task := index.task_for(job, spec)) is not None]
    pending = [task for task in tasks if task.phase in ("", "Pending")]
    for task in pending:
        event = _scheduling_event(task)
        if event is not None:
            return "unschedulable", _one_line(f"{task.spec.role or task.name}: {event.get('message', '')}")
    reasons = [h.reason for h in index.health_of(job.name).values() if isinstance(h, PodHealth) and h.reason]
    unscheduled = next((r for r in reasons if r.startswith("Unschedulable")), None)
    if unscheduled is not None:
        return "unschedulable", _one_line(unscheduled)
    pulls = [(task, pull) for task in pending for pull in task.pull_progress]
    if pulls:
        task, pull = pulls[0]
        return "pulling image", f"{clean(task.spec.role or task.name)}: {pull_text(pull)}"
    for task in pending:
        warning = next((e for e in task.events if e.get("type") == "Warning"), None)
        if warning is not None:
            return "Pending", _one_line(f"{task.spec.role or task.name}: {warning.get('reason', '')}: "
                                        f"{warning.get('message', '')}")
    if reasons:
        return "Pending", _one_line(reasons[0])
    if not tasks:
        return "Pending", "no Task yet: the control plane has not placed the Job"
    task = pending[0] if pending else tasks[0]
    return "Pending", _one_line(f"{task.spec.role or task.name}: {task.message or 'waiting for its Pods'}")


def _unplaced_jobs(index: SnapshotIndex) -> set[str]:
    """Jobs with a Pending Task that has events (only those can hold a FailedScheduling one), found from the raw
    Tasks: the one pass over every Task that each snapshot costs while `:overview` is shown."""
    found = set()
    for raw in index.snapshot.tasks.values():
        status = raw.get("status") if isinstance(raw, dict) else None
        if isinstance(status, dict) and status.get("events") and status.get("phase") in (None, "", "Pending"):
            task = Task(raw)
            if _scheduling_event(task) is not None:
                found.add(task.job_name)
    return found


def job_lines(index: SnapshotIndex, now: datetime) -> list[Line]:
    """Jobs shown Pending, and Jobs with a Task the scheduler cannot place."""
    lines = []
    names = {name for name, row in index.rows.items() if row.phase == "Pending"} | _unplaced_jobs(index)
    for name in names:
        job = index.jobs.get(name)
        if job is None or job.stopped:
            continue
        state, why = job_why(index, job)
        created = parse_time(job.creation_timestamp)
        lines.append(_line(2, JOB, name, name, state, why, _age(created, now),
                           created.timestamp() if created else 0.0))
    return lines


def alert_lines(alerts: Iterable[FiringAlert], now: datetime) -> list[Line]:
    """Firing warning and critical alerts: critical ones first of all lines."""
    lines = []
    for alert in alerts:
        if alert.severity not in SHOWN_SEVERITIES:
            continue
        rank = 0 if alert.severity == "critical" else 3
        target = "|".join((alert.job, alert.rule, alert.object))
        fired = datetime.fromtimestamp(alert.fired_at, now.tzinfo) if alert.fired_at > 0 else None
        lines.append(_line(rank, ALERT, target, alert.job or alert.object, f"{alert.severity} {clean(alert.rule)}",
                           _one_line(alert.message), _age(fired, now), alert.fired_at))
    return lines


def check_lines(index: SnapshotIndex, now: datetime) -> list[Line]:
    """Running Jobs whose saved check summary fails (a check failed, or the decision was stop), is not rlark's, is
    stale (older than CHECK_STALE, or from before the Job's start), or is no summary rlark reads (malformed: a claim
    too, as the CHECK column shows it)."""
    lines = []
    for name, raw in index.snapshot.jobs.items():
        annotations = (raw.get("metadata") or {}).get("annotations") if isinstance(raw, dict) else None
        if not isinstance(annotations, dict) or CHECK_SUMMARY_ANNOTATION not in annotations:
            continue
        job = index.jobs.get(name)
        if job is None or job.phase != "Running":
            continue
        summary = read_summary(job.annotations)
        if summary is None:
            lines.append(_line(4, CHECK, name, name, "malformed", MALFORMED, "-", 0.0))
            continue
        flag = summary.flag(now)
        started = parse_time(job.start_time)
        failed = [f"C{number}" for number, result in enumerate(summary.results, 1) if result == "fail"]
        if flag:
            state = "not rlark's"
        elif failed or summary.decision == "stop":
            state = "failing"
        elif now - summary.at > CHECK_STALE or (started is not None and summary.at < started):
            state = "stale"
        else:
            continue
        why = summary.cell(now) + (f"; failed {', '.join(failed)}" if failed and not flag else "")
        if state == "stale" and started is not None and summary.at < started:
            why += "; recorded before the Job started"
        lines.append(_line(4, CHECK, name, name, state, why, _age(summary.at, now), summary.at.timestamp()))
    return lines


def attention_lines(index: SnapshotIndex, now: datetime, alerts: Iterable[FiringAlert]) -> list[Line]:
    """Every line, in key order."""
    lines = alert_lines(alerts, now) + node_lines(index, now) + job_lines(index, now) + check_lines(index, now)
    return sorted(lines, key=lambda line: line.key)
